"""When a lastmod can be believed: not later than the clock (beyond a small skew), not
earlier than the web itself.

Search engines stop trusting a site's ``<lastmod>`` once it does not match reality, and
the lies are always the same: a date in the future (a typo, a wrong zone, a scheduled
post), or the zero timestamp (``1970-01-01``) of an empty column. Such a lastmod is not
published; its URL is, without it (`render.PageWriter`)::

    plausible = Plausible.at(time.time())
    plausible.fault("2031-01-01")                    # "lastmod_future"
    plausible.fault("1970-01-01T00:00:00+00:00")     # "lastmod_implausible"
    plausible.fault("2026-11-30")                    # None: published

Lastmods here are the W3C texts `values.w3c_datetime` writes: dates (``YYYY-MM-DD``) and
UTC datetimes to the second (``YYYY-MM-DDTHH:MM:SS+00:00``), which order as text like the
instants they name.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

__all__ = ["FIRST_WEB", "FUTURE", "IMPLAUSIBLE", "SKEW", "Plausible"]

# The first web page went up in 1991: nothing on the web was modified before.
FIRST_WEB = "1991-01-01"
# Clocks disagree a little (the database's, the app server's): this much later is believed.
SKEW = timedelta(minutes=10)
# A date names a day in the site's own zone, which may be up to 14 hours ahead of UTC
# (UTC+14, Kiribati): "tomorrow" in UTC may already be today there.
_ZONES_AHEAD = timedelta(hours=14)

FUTURE = "lastmod_future"
IMPLAUSIBLE = "lastmod_implausible"


@dataclass(frozen=True, slots=True)
class Plausible:
    """The latest lastmods believable at one moment: ``latest`` for a datetime, ``latest_date``
    for a date. ``latest`` is also the hot path's one test: anything above it, or below
    `FIRST_WEB`, is looked at closer (`fault`)."""

    latest: str
    latest_date: str

    @classmethod
    def at(cls, now: float) -> Plausible:
        moment = datetime.fromtimestamp(now, UTC)
        latest = (moment + SKEW).replace(microsecond=0)
        return cls(latest.isoformat(), (moment + SKEW + _ZONES_AHEAD).date().isoformat())

    def fault(self, text: str) -> str | None:
        """Why ``text`` is not published (`FUTURE`, `IMPLAUSIBLE`), or ``None``."""
        if text < FIRST_WEB:
            return IMPLAUSIBLE
        latest = self.latest_date if len(text) == 10 else self.latest
        return FUTURE if text > latest else None
