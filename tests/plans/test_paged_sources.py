"""Paged sources: provider objects that know their own pages, read by key, never by OFFSET."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from sitemap_middleware import ConfigurationError, Sitemaps, Url
from sitemap_middleware.sources import PagedSource, PageStart

from ..conftest import BASE
from ..xsd import lastmods, locs, validate

EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


class Rows:
    """A keyset over rows (id, slug, updated_at) kept in key order, recording every query."""

    def __init__(self, keys: list[int]) -> None:
        self.rows = [(key, f"p{key}", EPOCH + timedelta(hours=key)) for key in sorted(keys)]
        self.plans: list[int] = []
        self.reads: list[tuple[object, int]] = []

    def pages(self, page_size: int) -> list[PageStart]:
        self.plans.append(page_size)
        chunks = [self.rows[i : i + page_size] for i in range(0, len(self.rows), page_size)]
        return [PageStart(chunk[0][0], max(row[2] for row in chunk)) for chunk in chunks]

    def entries(self, first: object, limit: int) -> Iterator[Url]:
        self.reads.append((first, limit))
        taken = [row for row in self.rows if row[0] >= first][:limit]  # type: ignore[operator]
        return (Url(f"/p/{slug}", lastmod=updated) for _, slug, updated in taken)


class AsyncRows(Rows):
    async def pages(self, page_size: int) -> list[PageStart]:  # type: ignore[override]
        return Rows.pages(self, page_size)

    async def entries(self, first: object, limit: int) -> AsyncIterator[Url]:  # type: ignore[override]
        for url in Rows.entries(self, first, limit):
            yield url


KEYS = [3, 5, 8, 13, 21, 34, 55, 89, 144, 233]  # gaps between keys: pages are key ranges, not offsets


@pytest.mark.parametrize("shape", [Rows, AsyncRows], ids=["sync", "async"])
def test_a_paged_source_serves_its_pages_by_key_with_true_lastmods(make_client, shape):
    source = shape(KEYS)
    assert isinstance(source, PagedSource)
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.add_provider("products", source, page_size=4)
    client = make_client(sitemaps)
    index = validate(client.get("/sitemap-index.xml").body)
    assert locs(index) == [f"{BASE}/sitemap-products-{n}.xml" for n in (1, 2, 3)]
    assert lastmods(index) == [
        (EPOCH + timedelta(hours=key)).isoformat() for key in (13, 89, 233)
    ]  # the newest of each page, from pages(): no entry was iterated for the index
    assert source.reads == []
    served = [locs(validate(client.get(f"/sitemap-products-{n}.xml").body)) for n in (3, 1, 2)]
    assert sorted(loc for page in served for loc in page) == sorted(f"{BASE}/p/p{key}" for key in KEYS)
    assert source.reads == [(144, 4), (3, 4), (21, 4)]  # each page read from its first key, one page long
    assert source.plans == [4]  # planned once, reused by every page
    assert client.get("/sitemap-products-4.xml").status == 404


def test_a_paged_source_with_no_rows_is_not_listed(make_client):
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.add_provider("products", Rows([]))
    sitemaps.add_provider("pages", lambda: ["/"])
    client = make_client(sitemaps)
    assert locs(validate(client.get("/sitemap-index.xml").body)) == [f"{BASE}/sitemap-pages-1.xml"]
    assert client.get("/sitemap-products-1.xml").status == 404


def test_a_page_emptied_since_it_was_planned_is_a_404_counted_and_the_plan_kept(make_client):
    source = Rows(KEYS)
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.add_provider("products", source, page_size=4)
    client = make_client(sitemaps)
    assert len(locs(validate(client.get("/sitemap-index.xml").body))) == 3
    source.rows = source.rows[:8]  # the last page's rows are deleted
    assert client.get("/sitemap-products-3.xml").status == 404
    assert sitemaps.stats.snapshot()["products"]["empty_pages"] == 1
    assert "count_mismatch" not in sitemaps.stats.snapshot()["products"]
    # Deletions leave every other page right: planned again by its TTL, invalidate() or a version.
    assert len(locs(validate(client.get("/sitemap-index.xml").body))) == 3
    assert source.plans == [4]
    sitemaps.invalidate("products")
    assert len(locs(validate(client.get("/sitemap-index.xml").body))) == 2


@pytest.mark.parametrize(
    "pages",
    [
        pytest.param(lambda size: [PageStart(True)], id="bool-key"),
        pytest.param(lambda size: [PageStart(object())], id="object-key"),
        pytest.param(lambda size: 1 / 0, id="raises"),
    ],
)
def test_a_source_whose_pages_are_unusable_gets_503(make_client, pages):
    class Broken(Rows):
        def pages(self, page_size: int) -> Any:
            return pages(page_size)

    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.add_provider("products", Broken(KEYS))
    response = make_client(sitemaps).get("/sitemap-index.xml")
    assert response.status == 503
    assert sitemaps.stats.snapshot()[""]["provider_errors"] == 1


def test_a_bad_lastmod_from_pages_is_left_out_and_counted(make_client):
    class OddDates(Rows):
        def pages(self, page_size: int) -> list[PageStart]:
            return [PageStart(3, "yesterday")]

    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.add_provider("products", OddDates(KEYS))
    index = validate(make_client(sitemaps).get("/sitemap-index.xml").body)
    assert lastmods(index) == [None]
    assert sitemaps.stats.snapshot()["products"]["skipped:invalid lastmod"] == 1


def test_a_paged_source_takes_no_count():
    with pytest.raises(ConfigurationError, match="paged source"):
        Sitemaps(base_url=BASE).add_provider("products", Rows(KEYS), count=lambda: 10)


def test_a_paged_source_takes_no_languages():
    with pytest.raises(ConfigurationError, match="paged source"):
        Sitemaps(base_url=BASE).add_provider("products", Rows(KEYS), languages=["en", "de"])
