"""robots.txt names every index file from its first request, in a fresh process too.

It never calls a provider: the number of index files is read from what the last process
published (its change log's pages per section, or the plans kept beside the cache).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

from sitemap_middleware import Sitemaps, Url
from sitemap_middleware.changes import ChangeLog

from ..conftest import BASE, SitemapClient

MakeClient = Callable[..., SitemapClient]
ROWS = 50_001  # one file each: more than one index file lists (sitemaps.org: 50,000)


class Rows:
    """A windowed provider of ``ROWS`` rows that counts every call, of it and of its count."""

    def __init__(self) -> None:
        self.calls = 0

    def count(self) -> int:
        self.calls += 1
        return ROWS

    def __call__(self, offset: int, limit: int | None) -> Iterator[Url]:
        self.calls += 1
        end = ROWS if limit is None else min(ROWS, offset + limit)
        return (Url(f"/r/{n}") for n in range(offset, end))


def tiny(log: ChangeLog) -> tuple[Sitemaps, Rows]:
    sitemaps = Sitemaps(base_url=BASE, changes=log)
    rows = Rows()
    sitemaps.add_provider("tiny", rows, page_size=1, count=rows.count)
    return sitemaps, rows


def sitemap_lines(body: bytes) -> list[str]:
    return [
        line.partition(":")[2].strip() for line in body.decode().splitlines() if line.startswith("Sitemap:")
    ]


def test_a_fresh_process_names_every_index_file_on_its_first_robots_request(
    make_client: MakeClient, tmp_path: Path
) -> None:
    path = tmp_path / "changes.sqlite3"
    first, _ = tiny(ChangeLog.sqlite(path))
    assert make_client(first).get("/sitemap-tiny-1.xml").status == 200  # recorded: 50,001 pages
    first.changes.flush()  # type: ignore[union-attr]  (its log's thread has recorded the page)
    fresh, rows = tiny(ChangeLog.sqlite(path))
    robots = make_client(fresh).get("/robots.txt")
    assert robots.status == 200
    assert sitemap_lines(robots.body) == [f"{BASE}/sitemap-index.xml", f"{BASE}/sitemap-index-2.xml"]
    assert rows.calls == 0  # robots.txt asked no provider, and no count
