"""One file's lastmods to the second, tallied: a value most of its URLs share is a build time.

A generator that stamps every entry with the moment it ran tells crawlers nothing (Google
ignores a lastmod it finds unreliable), so a value shared, to the second, by more than half
of a file's URLs is a warning at the first ``<lastmod>`` holding it::

    stamps = Stamps()
    stamps.add(w3c("2026-01-01T10:00:00+00:00"), line=4, text="2026-01-01T10:00:00+00:00")
    stamps.shared(urls=20)  # [(line, warning)], or [] when no value is shared by most

Only values with seconds count: a date alone shared by many pages is a plausible day's change.
"""

from __future__ import annotations

import re
from datetime import datetime

from ..protocol.render import MAX_URLS

__all__ = ["MIN_URLS", "Stamps"]

# Below this many URLs a shared second is as likely one edit session as a build stamp.
MIN_URLS = 10
_TO_THE_SECOND = re.compile(r"T\d\d:\d\d:\d\d")


class Stamps:
    """Seconds since the epoch -> (times seen, first line, first text); at most `MAX_URLS`
    distinct values (a file over the limit adds no more: it is reported anyway)."""

    def __init__(self) -> None:
        self._seen: dict[int, tuple[int, int, str]] = {}

    def add(self, moment: datetime, line: int, text: str) -> None:
        """A valid lastmod (``moment`` is what ``text`` says), at ``line``."""
        if not _TO_THE_SECOND.search(text):
            return
        second = int(moment.timestamp())
        seen = self._seen.get(second)
        if seen is not None:
            self._seen[second] = (seen[0] + 1, seen[1], seen[2])
        elif len(self._seen) < MAX_URLS:
            self._seen[second] = (1, line, text)

    def shared(self, urls: int) -> list[tuple[int, str]]:
        """The warning, if more than half of ``urls`` share one value: [(its first line, message)]."""
        if urls < MIN_URLS or not self._seen:
            return []
        times, line, text = max(self._seen.values())
        if 2 * times <= urls:
            return []
        message = (
            f"lastmod {text} is shared, to the second, by {times:,} of the file's {urls:,} URLs: "
            "a build time, not each page's last change"
        )
        return [(line, message)]
