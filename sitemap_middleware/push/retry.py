"""When to try a delivery again: exponential backoff with jitter, and ``Retry-After``.

A target says ``Retry(after)`` when the other side said when; else the backoff decides::

    backoff = Backoff(first=1.0, cap=300.0)
    backoff.delay(attempt=3)                 # about 8 s: 4-8 s with jitter
    retry_after("120") == 120.0              # RFC 9110 §10.2.3: seconds, or an HTTP-date
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass

from werkzeug.http import parse_date

from ..errors import ConfigurationError

__all__ = ["Backoff", "retry_after"]

# A Retry-After further away than this is read as this (an engine's typo must not park a
# delivery for a year; it is retried, and the engine answers again).
MAX_RETRY_AFTER = 24 * 3600.0


@dataclass(frozen=True, slots=True)
class Backoff:
    """How long a failed delivery waits: ``first`` seconds after the first failure, doubled
    each time, at most ``cap``; each delay drawn from its upper half ("equal jitter"), so
    workers that failed together do not retry together."""

    first: float = 1.0
    cap: float = 300.0

    def __post_init__(self) -> None:
        for name in ("first", "cap"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < float("inf"):
                raise ConfigurationError(
                    f"Backoff {name} must be a positive number of seconds, not {value!r}"
                )
        if self.cap < self.first:
            raise ConfigurationError(f"Backoff cap ({self.cap}) is less than first ({self.first})")

    def delay(self, attempt: int) -> float:
        """Seconds to wait after failure number ``attempt`` (from 1)."""
        ceiling = min(self.cap, self.first * 2.0 ** min(attempt - 1, 64))
        return ceiling / 2 + random.uniform(0, ceiling / 2)


def retry_after(value: str | None, now: float | None = None) -> float | None:
    """RFC 9110 §10.2.3: ``Retry-After`` as seconds from ``now`` (delay-seconds or an
    HTTP-date), or ``None`` when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return min(float(value), MAX_RETRY_AFTER)
    date = parse_date(value)
    if date is None:
        return None
    seconds = date.timestamp() - (time.time() if now is None else now)
    return min(max(seconds, 0.0), MAX_RETRY_AFTER)
