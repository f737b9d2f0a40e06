"""Sections that declare a count: fixed page windows, windowed providers, an index that never iterates."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from sitemap_middleware import ConfigurationError, Sitemaps, Url

from ..conftest import BASE
from ..xsd import locs, validate


class Table:
    """A fake table that can be read in windows (offset/limit), counting every read."""

    def __init__(self, rows: int) -> None:
        self.rows = [f"/p/{n}" for n in range(rows)]
        self.windows: list[tuple[int, int | None]] = []

    def count(self) -> int:
        return len(self.rows)

    def read(self, offset: int, limit: int | None) -> Iterator[str]:
        self.windows.append((offset, limit))
        end = None if limit is None else offset + limit
        yield from self.rows[offset:end]


def counted(table: Table, page_size: int = 10, **options: object) -> Sitemaps:
    sitemaps = Sitemaps(base_url=BASE, **options)  # type: ignore[arg-type]
    sitemaps.add_provider("products", table.read, page_size=page_size, count=table.count)
    return sitemaps


def test_windowed_provider_is_asked_for_exactly_one_page(make_client):
    table = Table(25)
    client = make_client(counted(table))
    page = client.get("/sitemap-products-3.xml")
    assert locs(validate(page.body)) == [f"{BASE}/p/{n}" for n in range(20, 25)]
    # The count's two checks (a row past it, the last window up to a URL), then the page's window.
    assert table.windows == [(25, 1), (20, 5), (20, 10)]


def test_counted_pages_partition_the_provider_exactly(make_client):
    table = Table(95)
    client = make_client(counted(table))
    index = locs(validate(client.get("/sitemap-index.xml").body))
    assert len(index) == 10
    seen = []
    for n in range(1, 11):
        seen += locs(validate(client.get(f"/sitemap-products-{n}.xml").body))
    assert seen == [f"{BASE}{path}" for path in table.rows]
    assert client.get("/sitemap-products-11.xml").status == 404


def test_counted_generator_without_offset_is_skipped_forward(make_client):
    rows = [f"/g/{n}" for n in range(30)]
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.add_provider("products", lambda: iter(rows), page_size=10, count=lambda: len(rows))
    page = make_client(sitemaps).get("/sitemap-products-2.xml")
    assert locs(validate(page.body)) == [f"{BASE}/g/{n}" for n in range(10, 20)]


def test_invalid_entry_shortens_its_window_without_shifting_the_next(make_client):
    table = Table(20)
    table.rows[3] = "javascript:alert(1)"
    client = make_client(counted(table))
    first = locs(validate(client.get("/sitemap-products-1.xml").body))
    second = locs(validate(client.get("/sitemap-products-2.xml").body))
    assert len(first) == 9
    assert second == [f"{BASE}/p/{n}" for n in range(10, 20)]


def test_window_over_the_byte_limit_is_cut_logged_and_counted(make_client, caplog):
    table = Table(0)
    table.rows = [f"/p/{n}?{'x' * 900}" for n in range(10)]
    sitemaps = counted(table, max_page_bytes=4096)
    with caplog.at_level(logging.ERROR, logger="sitemap_middleware"):
        body = make_client(sitemaps).get("/sitemap-products-1.xml").body
    assert len(body) <= 4096
    assert 0 < len(locs(validate(body))) < 10
    assert any("lower page_size" in record.getMessage() for record in caplog.records)
    assert sitemaps.stats.snapshot()["products"]["skipped:page over max_page_bytes"] == 1


def test_async_count_and_async_windowed_provider(make_client):
    async def count() -> int:
        return 12

    async def read(offset: int, limit: int | None):
        for n in range(offset, min(12, offset + (limit or 12))):
            yield Url(f"/a/{n}")

    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.add_provider("articles", read, page_size=5, count=count)
    client = make_client(sitemaps)
    assert len(locs(validate(client.get("/sitemap-index.xml").body))) == 3
    assert locs(validate(client.get("/sitemap-articles-3.xml").body)) == [f"{BASE}/a/10", f"{BASE}/a/11"]


@pytest.mark.parametrize("bad", [-1, "12", 1.5, True, None], ids=["negative", "str", "float", "bool", "none"])
def test_count_of_the_wrong_type_gives_503(make_client, bad):
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.add_provider("products", lambda: ["/a"], count=lambda: bad)
    response = make_client(sitemaps).get("/sitemap-index.xml")
    assert response.status == 503


def test_count_must_be_callable():
    with pytest.raises(ConfigurationError, match="count"):
        Sitemaps(base_url=BASE).add_provider("products", lambda: [], count=5)  # type: ignore[arg-type]


@pytest.mark.parametrize("size", [0, 1023, 50 * 1024 * 1024 + 1, True])
def test_max_page_bytes_is_checked_at_construction(size):
    with pytest.raises(ConfigurationError, match="max_page_bytes"):
        Sitemaps(base_url=BASE, max_page_bytes=size)
