"""Each page's newest lastmod from rows read newest first: the index's true ``<lastmod>``s
without reading every row.

A keyset plan (`sitemap_middleware.sqlalchemy`, `sitemap_middleware.django`) knows where
every page starts; ``MAX(lastmod)`` over each page's range then reads every row of the
table, most of what a plan of a big table costs (benchmarks/HISTORY.md, "keyset pages
over 10M rows"). With an index on the lastmod column the database can hand rows over
newest first instead: the first row that falls in a page (found by bisecting the page
starts) carries that page's newest lastmod, exactly, and the walk stops as soon as every
page has one. Lastmods spread over the key range fill 200 pages within a few hundred rows::

    SELECT id, updated_at FROM product WHERE updated_at IS NOT NULL
    ORDER BY updated_at DESC LIMIT :cap        -- read until every page is found

Lastmods that rise with the key (the newest rows all on the last pages), or a page whose
rows were never updated, would walk the whole table: the walk stops after `walk_limit`
rows, and the pages it left without a lastmod get ``MAX(lastmod)`` over their rows, as
without the index. That worst case costs what planning without the index does, plus the
capped walk. Rows whose lastmod is NULL are never walked: a page of them only is found by
its ``MAX``, which is NULL.

The bisection compares keys in Python, so the walk is only taken for integer keys (whose
order is the database's); strings follow the database's collation, and are planned by
``MAX`` per page.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Sequence
from typing import Generic, TypeVar

__all__ = ["BATCH", "WALK_BATCH", "NewestFirst", "walk_limit"]

T = TypeVar("T")

# Pages whose MAX is asked in one statement, when the walk leaves some without a lastmod.
BATCH = 100

# Rows fetched per round trip of a walk: 200 pages are found in a few hundred.
WALK_BATCH = 500


def walk_limit(pages: int, page_size: int) -> int:
    """The most rows a walk reads before the pages left over are planned by ``MAX``.

    Lastmods in no order relative to the key fill ``p`` pages in about ``p * ln(p)`` rows
    (the coupon collector's count: 1,200 for 200 pages); 16 a page covers that up to
    millions of pages. Two pages' worth more bounds what an adversarial walk costs to
    about two pages of reading, against the ``MAX`` over every row it may save.
    """
    return 2 * page_size + 16 * pages


class NewestFirst(Generic[T]):
    """The lastmod of each page (by index into ``starts``) that the rows fed so far reach.

    ``starts`` are the pages' first keys, ascending. Rows are fed as (key, lastmod) in
    descending lastmod order, NULL lastmods left out; the first row that falls in a page
    carries its newest lastmod, since every row after it is older or equal.
    """

    __slots__ = ("found", "starts")

    def __init__(self, starts: Sequence[int]) -> None:
        self.starts = starts
        self.found: dict[int, T] = {}

    @property
    def done(self) -> bool:
        return len(self.found) == len(self.starts)

    def feed(self, rows: Iterable[tuple[int, T]]) -> bool:
        """Take rows until every page has its lastmod; whether every page has one."""
        starts, found = self.starts, self.found
        for key, lastmod in rows:
            page = bisect_right(starts, key) - 1
            if page >= 0 and page not in found:  # a key before the first page: inserted since
                found[page] = lastmod
                if len(found) == len(starts):
                    return True
        return self.done

    def missing(self) -> list[list[int]]:
        """The pages still without a lastmod, in batches of at most `BATCH`."""
        left = [page for page in range(len(self.starts)) if page not in self.found]
        return [left[i : i + BATCH] for i in range(0, len(left), BATCH)]
