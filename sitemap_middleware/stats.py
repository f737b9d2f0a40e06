"""Per-section counters and the structured log lines behind them.

Read them from the `Sitemaps` object and export them however you like, e.g. to
Prometheus from a custom collector, without this package depending on a client::

    sitemaps.stats.snapshot()
    # {"products": {"served": 12, "renders": 3, "skipped:invalid loc": 1, ...}}
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Iterable

from .errors import EntryError

__all__ = ["Stats", "logger"]

logger = logging.getLogger("sitemap_middleware")

# Characters of an entry or an error a log line may quote: a 5 MB lastmod from a broken
# export must not become a 5 MB log record (or a 5 MB argument a JSON handler serialises).
QUOTE_LIMIT = 200


class Stats:
    """Thread-safe counters keyed by section (``""`` for the index and robots.txt)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counters: dict[str, Counter[str]] = {}

    def count(self, section: str, name: str, amount: int = 1) -> None:
        with self._lock:
            self._counter(section)[name] += amount

    def count_each(self, section: str, names: Iterable[str]) -> None:
        """One more of each of ``names``, under one lock (a replayed answer counts two or three)."""
        with self._lock:
            counter = self._counter(section)
            for name in names:
                counter[name] += 1

    def _counter(self, section: str) -> Counter[str]:
        counter = self._counters.get(section)
        if counter is None:
            counter = self._counters[section] = Counter()
        return counter

    def skip(self, section: str, error: EntryError, raw: object) -> None:
        """Record and log one skipped entry, with its section and the reason.

        The entry and the error's detail (which quotes the bad value) are cut to
        `QUOTE_LIMIT` characters before they reach the record; the reason never is.
        """
        self.count(section, f"skipped:{error.reason}")
        if not logger.isEnabledFor(logging.WARNING):
            return  # the quoting below costs a repr() of the entry
        logger.warning(
            "sitemap section %r: skipped entry %s: %s",
            section,
            _cap(repr(raw)),
            f"{error.reason}: {_cap(error.detail)}" if error.detail else error.reason,
            extra={"sitemap_section": section, "sitemap_reason": error.reason},
        )

    def snapshot(self) -> dict[str, dict[str, int]]:
        """A copy of every counter, safe to serialise."""
        with self._lock:
            return {section: dict(counter) for section, counter in self._counters.items()}


def _cap(text: str) -> str:
    """``text``, or its head and how much was cut when it is over `QUOTE_LIMIT`."""
    if len(text) <= QUOTE_LIMIT:
        return text
    return f"{text[:QUOTE_LIMIT]}... ({len(text) - QUOTE_LIMIT} more characters)"
