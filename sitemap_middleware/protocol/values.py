"""Value rules shared by every element we write: W3C Datetime and bounded decimals.

    w3c_datetime(datetime(2024, 5, 1, 14, 0, tzinfo=timezone(timedelta(hours=2))))
    # '2024-05-01T12:00:00+00:00'
    decimal_text(0.8, 0, 1, "invalid priority")     # '0.8'

One place per rule: a lastmod, a video's dates and a news article's date are all W3C
Datetime by `w3c_datetime`; a priority and a video's rating are both `decimal_text`.
"""

from __future__ import annotations

import math
from datetime import UTC, date, datetime
from decimal import Decimal

from ..errors import EntryError

__all__ = ["decimal_text", "w3c_datetime"]

_UTC = UTC
# Digits of the common lastmod's fields (`w3c_datetime`): years of real data, every 0-99.
_YEARS = {year: f"{year:04d}" for year in range(1970, 2100)}
_TWO_DIGITS = tuple(f"{number:02d}" for number in range(100))


def w3c_datetime(value: object, reason: str = "invalid lastmod") -> str:
    """Format a lastmod (or any date we write) in W3C Datetime, UTC, with an explicit offset.

    ``reason`` is the `EntryError` reason when ``value`` is not a date (the field it is for).
    Aware datetimes are converted to UTC; naive ones are taken as UTC (the documented
    rule, so that a server's local zone never leaks into the output). Dates stay dates.
    Seconds precision: crawlers ignore fractions and HTTP dates have none.
    """
    if type(value) is datetime and value.tzinfo is _UTC and not value.microsecond:
        # The common case, first: a UTC datetime to the second, written from tables of its
        # fields' digits; its isoformat() costs much more (it asks the tzinfo for the offset
        # and formats it) and was the largest part of an entry's time (benchmarks/HISTORY.md,
        # "The common lastmod"). A test
        # (tests/web/test_rules.py) holds this branch to what the general one below writes.
        digits = _TWO_DIGITS
        try:
            year = _YEARS[value.year]
        except KeyError:
            year = f"{value.year:04d}"
        return (
            f"{year}-{digits[value.month]}-{digits[value.day]}"
            f"T{digits[value.hour]}:{digits[value.minute]}:{digits[value.second]}+00:00"
        )
    if isinstance(value, datetime):
        zone = value.tzinfo
        if zone is not None and zone is not _UTC:
            if value.utcoffset() is None:
                zone = None  # a tzinfo that names no offset leaves the datetime naive
            else:
                try:
                    value = value.astimezone(_UTC)
                except OverflowError:
                    # 0001-01-01T00:30+01:00 is a real instant with no year-1-or-later UTC form.
                    raise EntryError(reason, f"{value!r} is out of range in UTC") from None
                zone = _UTC
        if value.microsecond:
            value = value.replace(microsecond=0)
        # isoformat() is C and several times faster than formatting the fields ourselves.
        return value.isoformat() if zone is _UTC else value.isoformat() + "+00:00"
    if isinstance(value, date):
        return f"{value.year:04d}-{value.month:02d}-{value.day:02d}"
    if isinstance(value, str):
        text = value.strip()
        try:
            if len(text) == 10:
                return w3c_datetime(date.fromisoformat(text), reason)
            if len(text) >= 16 and text[10] in "Tt ":
                return w3c_datetime(datetime.fromisoformat(text), reason)
        except ValueError:
            pass
        raise EntryError(reason, repr(value))
    raise EntryError(reason, f"{type(value).__name__} is not a date or datetime")


def decimal_text(value: object, low: int, high: int, reason: str) -> str:
    """A number from ``low`` to ``high`` as xsd:decimal text (no exponent), or `EntryError` ``reason``."""
    if isinstance(value, bool) or not isinstance(value, (int, float, Decimal)):
        raise EntryError(reason, f"{type(value).__name__} is not a number")
    # Decimal NaNs are checked before comparing: ordering a Decimal NaN raises InvalidOperation.
    nan = value.is_nan() if isinstance(value, Decimal) else isinstance(value, float) and math.isnan(value)
    if nan or not low <= value <= high:
        raise EntryError(reason, f"{value!r} is not between {low:.1f} and {high:.1f}")
    # xsd:decimal has no exponent form, so never let repr() produce one; abs() because
    # -0.0 passes the range check but would print its sign.
    text = f"{abs(value):.3f}".rstrip("0")
    return text + "0" if text.endswith(".") else text
