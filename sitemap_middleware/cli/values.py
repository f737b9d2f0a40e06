"""The value formats the sitemaps.org protocol names, each one predicate::

URI.fullmatch(loc) and not BAD_PERCENT.search(loc)   # an absolute RFC 3986 URI
w3c("2026-01-02T10:00:00+01:00")                       # the instant, or None
valid_priority("0.8")
"""

from __future__ import annotations

import hashlib
import re
import urllib.parse
from datetime import UTC, date, datetime
from decimal import Decimal, InvalidOperation

__all__ = ["BAD_PERCENT", "MAX_LOC", "URI", "fingerprint", "split", "valid_priority", "w3c"]

MAX_LOC = 2047  # sitemaps.org: "less than 2,048 characters"
# RFC 3986: the characters a URI may hold, and a "%" only before two hex digits.
URI = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]+")
BAD_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")
# W3C Datetime (https://www.w3.org/TR/NOTE-datetime): a time needs a zone designator.
W3C_DATETIME = re.compile(
    r"(?P<y>\d{4})(?:-(?P<m>\d{2})(?:-(?P<d>\d{2})"
    r"(?:T(?P<time>\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)(?P<zone>Z|[+-]\d{2}:\d{2}))?)?)?"
)
PRIORITY = re.compile(r"\d*\.?\d+|\d+\.")


def fingerprint(loc: str) -> bytes:
    """8 bytes standing for a loc: duplicates and hreflang pairs are found by these."""
    return hashlib.blake2b(loc.encode(), digest_size=8).digest()


def split(url: str) -> urllib.parse.SplitResult | None:
    """``url``'s parts, or None where urllib refuses it (``http://[x``: a bracket not closed)."""
    try:
        return urllib.parse.urlsplit(url)
    except ValueError:
        return None


def valid_priority(text: str) -> bool:
    if not PRIORITY.fullmatch(text):
        return False
    try:
        return Decimal(text) <= 1
    except InvalidOperation:  # pragma: no cover - the pattern admits only decimals
        return False


def w3c(text: str) -> datetime | None:
    """The instant a W3C Datetime names (the start of a year, month or day), or ``None``."""
    match = W3C_DATETIME.fullmatch(text)
    if match is None:
        return None
    try:
        day = date(int(match["y"]), int(match["m"] or 1), int(match["d"] or 1))
        if match["time"] is None:
            return datetime(day.year, day.month, day.day, tzinfo=UTC)
        zone = match["zone"].replace("Z", "+00:00")
        return datetime.fromisoformat(f"{day.isoformat()}T{match['time']}{zone}")
    except ValueError:
        return None
