"""Sections that declare a count: pages located by arithmetic, whatever the count."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable, Iterator
from typing import TypeVar

from sitemap_middleware import Sitemaps
from sitemap_middleware.engine import PagePlan

from .conftest import SitemapClient
from .xsd import locs, validate

BASE = "https://shop.example"
T = TypeVar("T")

MakeClient = Callable[..., SitemapClient]


class Rows:
    """A windowed table of ``total`` rows (``/p/0``, ``/p/1``, ...), made on demand."""

    def __init__(self, total: int) -> None:
        self.total = total

    def count(self) -> int:
        return self.total

    def read(self, offset: int, limit: int | None) -> Iterator[str]:
        end = self.total if limit is None else min(self.total, offset + limit)
        return (f"/p/{n}" for n in range(offset, end))


def counted(rows: Rows, page_size: int) -> Sitemaps:
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.add_provider("products", rows.read, page_size=page_size, count=rows.count)
    return sitemaps


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
    plan, peak = peak_memory(lambda: PagePlan.uniform(10**9, 1_000))
    assert peak < 64 * 1024
    assert plan.pages == 10**6
    assert [plan.start(n) for n in (1, 2, 10**6)] == [0, 1_000, 10**9 - 1_000]
    assert plan.lastmod(10**6) is None
    assert plan.window == 1_000


def test_a_counted_plan_of_a_trillion_entries_survives_the_cache() -> None:
    plan = PagePlan.uniform(10**12, 1)
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


def test_index_of_a_counted_section_over_the_limit_is_refused_before_it_is_listed(
    make_client: MakeClient,
) -> None:
    # 500,000 files, ten times what one index may list.
    client = make_client(counted(Rows(5 * 10**8), page_size=1_000))
    response, peak = peak_memory(lambda: client.get("/sitemap-index.xml"))
    assert response.status == 503
    assert peak < 16 * 2**20


def test_count_past_any_table_is_a_503(make_client: MakeClient) -> None:
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.add_provider("products", lambda: ["/a"], page_size=1, count=lambda: 2**64)
    assert make_client(sitemaps).get("/sitemap-products-1.xml").status == 503
