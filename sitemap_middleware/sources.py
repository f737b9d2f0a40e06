"""Paged sources: provider objects that know their own pages, as a database does.

A function provider is iterated to find where its pages start (or windowed, with a
``count``, by ``OFFSET``, which costs more the deeper the page). A *paged source*
answers both questions itself, with one cheap query each, over an ordered unique key
(a *keyset*): page n starts at a known key, so page 200 costs what page 1 costs::

    class Products:
        def pages(self, page_size: int):
            # One row per page, in key order: its first key and its newest lastmod,
            # e.g. by seeking page_size keys on from each first key (a recursive CTE of
            # "WHERE id >= :first ORDER BY id LIMIT 1 OFFSET :page_size", as
            # sitemap_middleware.sqlalchemy.keyset does), then MAX(updated_at) per range.
            return [PageStart(first, lastmod) for first, lastmod in db.execute(...)]

        def entries(self, first, limit: int, end=None):
            # SELECT ... FROM product WHERE id >= :first AND id < :end ORDER BY id LIMIT :limit
            return (Url(f"/p/{row.slug}", lastmod=row.updated_at) for row in db.execute(...))

    sitemaps.add_provider("products", Products())

``end``, when ``entries`` takes it, is the next page's first key (``None`` on the last
page), and ``first`` is ``None`` on page 1 (from the first row, whatever its key): the
page is the whole key range, read up to one file's limits (``limit`` is then 50,001), so a
row inserted after the plan, inside a range or before the first one, shows on its page at
once. A range that grew past what one file holds is served up to it and its section
planned again at the next request. Without ``end``, a page is its first ``limit``
(``page_size``) rows from ``first``, and a row inserted inside a range pushes that range's
last row out of sight until the next plan. Deleted rows never make a plan wrong: a page
whose rows are all gone is a 404 (logged, counted as ``empty_pages``), and the other
pages keep their ranges until the plan is made again (the cache's TTL, ``invalidate()``,
a declared ``version``), so a crawl that started from an index finds every row that is
still there. Either method may be ``async`` (or return an async iterable). A source whose entries carry
extensions may say so with an ``extensions`` attribute (``("alternates",)``), which
`Sitemaps.add_provider` reads when it is given none. Keys are ints, strings or
floats, so a section's plan can be stored in any cache store. The index lists exactly
the pages `pages` returns, each with the lastmod it names: a true ``<lastmod>`` without
iterating a single entry in Python. Ready-made sources: `sitemap_middleware.django.keyset`
and `sitemap_middleware.sqlalchemy.keyset`.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, Awaitable, Iterable
from datetime import date, datetime
from typing import NamedTuple, Protocol, runtime_checkable

from .errors import ProviderError

__all__ = ["Key", "PageStart", "PagedSource"]

Key = int | str | float


class PageStart(NamedTuple):
    """Where one page of a paged source starts, the newest lastmod on it, and its rows (if known)."""

    first: Key
    lastmod: datetime | date | str | None = None
    rows: int | None = None  # shown in the HTML overview


@runtime_checkable
class PagedSource(Protocol):
    """What `Sitemaps.add_provider` accepts in place of a function."""

    def pages(self, page_size: int) -> Iterable[PageStart] | Awaitable[Iterable[PageStart]]:
        """Every page of ``page_size`` entries, in key order (an empty source has none)."""
        ...

    def entries(
        self, first: Key, limit: int
    ) -> Iterable[object] | AsyncIterable[object] | Awaitable[Iterable[object]]:
        """At most ``limit`` entries from key ``first`` on, in key order (and before key
        ``end``, when the method takes that keyword; ``first`` is then ``None`` on page 1:
        see the module)."""
        ...


def key_not_unique(key: object, rows: int, page_size: int) -> ProviderError:
    """What a keyset's plan reports when more rows share one key than a page holds: its
    seek from that key to the next page's could never move past it."""
    return ProviderError(
        f"key {key!r} is not unique: {rows:,} rows share it, more than a page of {page_size:,} "
        "holds, so pages cannot be ranges of it (a join that repeats rows? select each row once)"
    )
