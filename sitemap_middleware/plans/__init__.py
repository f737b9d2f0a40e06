"""A section's page plan, and the three shapes of planning one (`shape.Shape`).

A section has one shape, picked when it is registered (`Sitemaps.add_provider`), and
each shape is one object with its own plan and its own page:

- **measured** (`measured.Measured`), a section without a count: its provider is
  iterated once and pages are cut over its valid entries, by count and by bytes;
- **counted** (`counted.Counted`), a section that declares a ``count``: pages are fixed
  windows of raw entries, once the count is trusted (the rules of that trust live there);
- **keyed** (`keyed.Keyed`), a paged source (`sources.PagedSource`): it lists its pages'
  first keys itself, and a page is the entries from its key on.

Every shape makes a `PagePlan`, the stored form the index and the overview read::

    plan = PagePlan.counted(10**12, 50_000)      # a trillion entries: arithmetic, no list
    plan.pages, plan.start(7), plan.lastmod(7)   # 20,000,000, 300000, None
    PagePlan.from_bytes(plan.to_bytes()) == plan
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from ..sources import Key

__all__ = ["PagePlan"]


@dataclass(frozen=True, slots=True)
class PagePlan:
    """Where each page of one section starts, and its newest lastmod.

    One form for the three shapes (`pages`, `start`, `lastmod`, `window`):

    - measured: every start (a raw position) and lastmod, found by iterating; at most
      `MAX_SITEMAPS` pages, since measuring stops there;
    - counted (`counted`): ``count`` raw entries cut into fixed windows, so a page's start
      is arithmetic. Nothing is stored per page: locating page 20,000,000 of a
      trillion-entry section costs what locating page 1 does;
    - keyed: every page's first key and lastmod, as the paged source listed them.
    """

    # A tuple when measured (raw positions) or keyed (first keys), a range when counted:
    # O(1) to index either way.
    starts: Sequence[Key]
    lastmods: tuple[str | None, ...]  # one per measured or keyed page; empty when counted (none was measured)
    window: int | None = None  # raw entries per page (counted), or the page size a keyed plan was cut for
    count: int | None = None  # raw entries in all, when counted
    urls: tuple[int | None, ...] = ()  # URLs on each page, where known (measured, or told by a source)

    @classmethod
    def counted(cls, count: int, page_size: int) -> PagePlan:
        """Fixed windows of ``page_size`` raw entries, from a declared count: no iteration.

        Entries skipped as invalid make their page shorter rather than shifting the
        pages after it; the index carries no lastmod, since none was measured.
        """
        return cls(range(0, count, page_size), (), window=page_size, count=count)

    @property
    def pages(self) -> int:
        return len(self.starts)

    def start(self, number: int) -> Key:
        """Where page ``number`` (1-based, at most `pages`) starts: a raw position, or a key."""
        return self.starts[self._index(number)]

    def lastmod(self, number: int) -> str | None:
        """The newest lastmod on page ``number``; ``None`` when none was measured."""
        index = self._index(number)
        return self.lastmods[index] if self.lastmods else None

    def url_count(self, number: int) -> int | None:
        """URLs on page ``number``: measured, told, or at most its window (counted)."""
        index = self._index(number)
        if index < len(self.urls):
            return self.urls[index]
        if self.count is not None and self.window is not None:
            return min(self.window, self.count - index * self.window)
        return None

    def _index(self, number: int) -> int:
        if not 1 <= number <= self.pages:
            raise IndexError(f"no page {number} in a plan of {self.pages:,}")
        return number - 1

    def to_bytes(self) -> bytes:
        """A compact serialisation, so a plan can live in any `CacheStore` (a counted one in ~40 bytes)."""
        if self.count is not None:
            return json.dumps({"count": self.count, "window": self.window}).encode()
        return json.dumps([list(self.starts), self.lastmods, self.window, self.urls]).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> PagePlan:
        loaded = json.loads(data)
        if isinstance(loaded, dict):
            return cls.counted(loaded["count"], loaded["window"])
        starts, lastmods, window, urls = loaded
        return cls(tuple(starts), tuple(lastmods), window, urls=tuple(urls))
