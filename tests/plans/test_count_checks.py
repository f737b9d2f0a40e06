"""Sections that declare a count: pages located by arithmetic, and a count that is checked.

What the index promises with a count: it lists ``ceil(count / page_size)`` files, each a
window of ``page_size`` raw entries, only after checking at the edges that the count
holds (nothing lies past it, and the last window holds a URL). When it does not, the
mismatch is logged and counted and the section is measured instead: no URL is dropped
and no listed file is a 404. A middle window found empty when its page is served is
reported the same way, and the section is measured from then on.
"""

from __future__ import annotations

import logging
import tracemalloc
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pytest

from sitemap_middleware import Sitemaps
from sitemap_middleware.engine import Engine
from sitemap_middleware.plans import PagePlan
from sitemap_middleware.plans.counted import Counted
from sitemap_middleware.protocol.uris import Site
from sitemap_middleware.providers import LoopRunner, Provider, Section
from sitemap_middleware.stats import Stats

from ..conftest import BASE, SitemapClient
from ..xsd import locs, validate

T = TypeVar("T")

MakeClient = Callable[..., SitemapClient]


class Rows:
    """A windowed table of ``total`` rows (``/p/0``, ``/p/1``, ...), made on demand.

    ``claimed`` is what its ``count`` says (the truth unless given); ``invalid`` holds the
    raw positions whose entry is not a URL; every window read is recorded.
    """

    def __init__(self, total: int, claimed: int | None = None, invalid: range = range(0)) -> None:
        self.total = total
        self.claimed = total if claimed is None else claimed
        self.invalid = invalid
        self.windows: list[tuple[int, int | None]] = []

    def count(self) -> int:
        return self.claimed

    def read(self, offset: int, limit: int | None) -> Iterator[str]:
        self.windows.append((offset, limit))
        end = self.total if limit is None else min(self.total, offset + limit)
        return ("javascript:void(0)" if n in self.invalid else f"/p/{n}" for n in range(offset, end))


def counted(rows: Rows, page_size: int, **options: Any) -> Sitemaps:
    sitemaps = Sitemaps(base_url=BASE, **options)
    sitemaps.add_provider("products", rows.read, page_size=page_size, count=rows.count)
    return sitemaps


def crawl(client: SitemapClient) -> list[str]:
    """Every loc of every file the index lists, each file asserted to be a 200."""
    found = []
    for loc in locs(validate(client.get("/sitemap-index.xml").body)):
        response = client.get(loc.removeprefix(BASE))
        assert response.status == 200, loc
        found += locs(validate(response.body))
    return found


def peak_memory(func: Callable[[], T]) -> tuple[T, int]:
    """``func()`` and the most memory Python held for it at once, in bytes."""
    tracemalloc.start()
    try:
        result = func()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_counted_plan_locates_any_page_in_constant_memory() -> None:
    # A million pages: a list of their starts alone would be tens of MB.
    plan, peak = peak_memory(lambda: PagePlan.counted(10**9, 1_000))
    assert peak < 64 * 1024
    assert plan.pages == 10**6
    assert [plan.start(n) for n in (1, 2, 10**6)] == [0, 1_000, 10**9 - 1_000]
    assert plan.lastmod(10**6) is None
    assert plan.window == 1_000


def test_a_counted_plan_of_a_trillion_entries_survives_the_cache() -> None:
    plan = PagePlan.counted(10**12, 1)
    again = PagePlan.from_bytes(plan.to_bytes())
    assert len(plan.to_bytes()) < 100
    assert again.pages == 10**12
    assert again.start(10**12) == 10**12 - 1
    assert again.window == 1


def test_a_page_of_a_section_counting_20_million_pages_is_served_in_constant_memory(
    make_client: MakeClient,
) -> None:
    rows = Rows(2 * 10**10)
    client = make_client(counted(rows, page_size=1_000))
    first, peak = peak_memory(lambda: client.get("/sitemap-products-1.xml"))
    assert peak < 16 * 2**20  # the page itself: about 60 KB of XML
    assert locs(validate(first.body))[-1] == f"{BASE}/p/999"
    last = client.get("/sitemap-products-20000000.xml")
    assert locs(validate(last.body))[0] == f"{BASE}/p/{2 * 10**10 - 1_000}"
    assert client.get("/sitemap-products-20000001.xml").status == 404


def test_index_of_a_counted_section_over_the_limit_is_split_and_built_one_file_at_a_time(
    make_client: MakeClient,
) -> None:
    # 500,000 files, ten times what one index file may list: ten index files.
    client = make_client(counted(Rows(5 * 10**8), page_size=1_000))
    response, peak = peak_memory(lambda: client.get("/sitemap-index-10.xml"))
    assert locs(validate(response.body))[-1] == f"{BASE}/sitemap-products-500000.xml"
    assert peak < 32 * 2**20  # one file's 50,000 entries, not 500,000
    assert client.get("/sitemap-index-11.xml").status == 404


def test_count_past_any_table_is_a_503(make_client: MakeClient) -> None:
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.add_provider("products", lambda: ["/a"], page_size=1, count=lambda: 2**64)
    assert make_client(sitemaps).get("/sitemap-products-1.xml").status == 503


# -- a count that does not hold ---------------------------------------------------------------------


def test_count_that_overstates_lists_only_files_that_exist(make_client: MakeClient) -> None:
    client = make_client(counted(Rows(10, claimed=1_000), page_size=100))
    assert crawl(client) == [f"{BASE}/p/{n}" for n in range(10)]


def test_count_that_understates_drops_no_url(make_client: MakeClient) -> None:
    client = make_client(counted(Rows(25, claimed=10), page_size=10))
    assert crawl(client) == [f"{BASE}/p/{n}" for n in range(25)]


def test_last_window_holding_only_invalid_entries_is_not_listed(make_client: MakeClient) -> None:
    client = make_client(counted(Rows(20, invalid=range(10, 20)), page_size=10))
    assert crawl(client) == [f"{BASE}/p/{n}" for n in range(10)]


def test_count_that_does_not_hold_is_logged_with_what_to_fix(
    make_client: MakeClient, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="sitemap_middleware"):
        make_client(counted(Rows(10, claimed=1_000), page_size=100)).get("/sitemap-index.xml")
    assert any(
        "'products'" in record.getMessage() and "count" in record.getMessage() for record in caplog.records
    )


def test_a_count_is_checked_with_one_row_past_it_and_the_last_window(make_client: MakeClient) -> None:
    rows = Rows(10_000_000)
    client = make_client(counted(rows, page_size=50_000, cache=None))
    assert len(locs(validate(client.get("/sitemap-index.xml").body))) == 200
    assert rows.windows == [(10_000_000, 1), (9_950_000, 50_000)]


def test_middle_window_holding_only_invalid_entries_is_reported_and_then_left_out(
    make_client: MakeClient, caplog: pytest.LogCaptureFixture
) -> None:
    rows = Rows(30, invalid=range(10, 20))
    client = make_client(counted(rows, page_size=10, cache=None))
    # The edges hold, so the first index lists all three windows ...
    assert len(locs(validate(client.get("/sitemap-index.xml").body))) == 3
    with caplog.at_level(logging.WARNING, logger="sitemap_middleware"):
        assert client.get("/sitemap-products-2.xml").status == 404
    assert any("holds no valid entry" in record.getMessage() for record in caplog.records)
    # ... and once the empty one is found, the section is measured: every listed file has URLs.
    assert crawl(client) == [f"{BASE}/p/{n}" for n in [*range(10), *range(20, 30)]]


def test_each_count_mismatch_is_counted_once() -> None:
    stats = Stats()
    engine = Engine(
        Site.parse(BASE),
        on_skip=stats.skip,
        on_mismatch=lambda section, detail: stats.count(section, "count_mismatch"),
    )
    rows = Rows(10, claimed=1_000)
    section = Section("products", Provider.wrap("products", rows.read), page_size=100)
    plan = Counted().plan(engine, section, rows.count(), LoopRunner())
    assert [plan.start(n) for n in range(1, plan.pages + 1)] == [0]
    assert plan.window is None  # measured: pages cut over valid entries
    assert stats.snapshot()["products"]["count_mismatch"] == 1


def test_a_count_is_trusted_where_checking_it_would_iterate_the_provider(make_client: MakeClient) -> None:
    """A provider that can only be iterated would have to be read whole to check its count:
    exactly what a count is declared to avoid. Its index pulls no entry at all."""
    pulled = 0

    def products() -> Iterator[str]:
        nonlocal pulled
        for n in range(1_000_000):
            pulled += 1
            yield f"/p/{n}"

    sitemaps = Sitemaps(base_url=BASE, cache=None)
    sitemaps.add_provider("products", products, page_size=50_000, count=lambda: 1_000_000)
    client = make_client(sitemaps)
    assert len(locs(validate(client.get("/sitemap-index.xml").body))) == 20
    assert pulled == 0
    page = locs(validate(client.get("/sitemap-products-20.xml").body))
    assert page[0] == f"{BASE}/p/950000" and page[-1] == f"{BASE}/p/999999"


def test_a_trusted_count_that_understates_is_found_by_its_last_page(
    make_client: MakeClient, caplog: pytest.LogCaptureFixture
) -> None:
    """The last page of a trusted count reads one entry past it: more there means URLs the
    index would leave out, so the mismatch is reported and the section measured after it."""
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.add_provider("products", lambda: (f"/p/{n}" for n in range(25)), page_size=10, count=lambda: 10)
    client = make_client(sitemaps)
    assert len(locs(validate(client.get("/sitemap-index.xml").body))) == 1  # trusted: one file
    with caplog.at_level(logging.WARNING, logger="sitemap_middleware"):
        assert locs(validate(client.get("/sitemap-products-1.xml").body)) == [
            f"{BASE}/p/{n}" for n in range(10)
        ]
    assert any("past it" in record.getMessage() for record in caplog.records)
    assert sitemaps.stats.snapshot()["products"]["count_mismatch"] == 1
    assert crawl(client) == [f"{BASE}/p/{n}" for n in range(25)]
