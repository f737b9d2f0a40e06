"""What a purge drops (`push.documents`, `push.indexes`): a changed page's documents, and the index
file that lists it, found by the engine's index cutting from the plans this process holds."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from sitemap_middleware import MemoryStore, Sitemaps
from sitemap_middleware.changes.model import PageChange
from sitemap_middleware.push.documents import stale_documents, tags_of
from sitemap_middleware.push.indexes import SitemapIndexes

from ..conftest import BASE, SitemapClient

AT = datetime(2026, 12, 1, tzinfo=UTC)
FIRST = 50_000  # pages of section "a": index file 1 lists exactly them


def rows(count: int) -> Callable[[int, int | None], list[str]]:
    def window(offset: int, limit: int | None) -> list[str]:
        return [f"/r/{n}" for n in range(offset, count if limit is None else min(count, offset + limit))]

    return window


def two_sections(store: MemoryStore | None = None) -> Sitemaps:
    """Section "a" fills index file 1 (50,000 pages of one URL); "b" (3 pages) is in index file 2."""
    sitemaps = Sitemaps(base_url=BASE, page_size=1, cache=store or True)
    sitemaps.add_provider("a", rows(FIRST), count=lambda: FIRST)
    sitemaps.add_provider("b", rows(3), count=lambda: 3)
    return sitemaps


def test_the_index_file_listing_a_page_is_found_by_the_engines_cutting(
    make_client: Callable[..., SitemapClient],
) -> None:
    sitemaps = two_sections()
    client = make_client(sitemaps)
    assert client.get("/sitemap-index-2.xml").status == 200  # plans both sections here
    indexes = SitemapIndexes(sitemaps)
    assert indexes.listing(BASE, "a", FIRST) == (1,)
    assert indexes.listing(BASE, "b", 1) == (2,)
    changes = [PageChange(BASE, "b", 2, AT), PageChange(BASE, "a", 7, AT), PageChange(BASE, "b", 2, AT)]
    [stale] = stale_documents(changes, indexes)
    assert list(stale.pages) == [("b", 2), ("a", 7)]  # each once, in order
    assert list(stale.index_files) == [2, 1]
    assert tags_of([stale]) == [
        "sitemap-b-2",
        "sitemap-a-7",
        "sitemap-index-2",
        "sitemap-index-1",
        "sitemap-robots",
    ]


def test_without_the_plans_before_it_every_index_file_robots_txt_names_is_purged(
    make_client: Callable[..., SitemapClient],
) -> None:
    shared = MemoryStore()  # a worker that built the index, and one that did not
    assert make_client(two_sections(shared)).get("/sitemap-index.xml").status == 200
    other = two_sections(shared)
    assert make_client(other).get("/sitemap-b-1.xml").status == 200  # plans "b" only
    assert SitemapIndexes(other).listing(BASE, "b", 1) == (1, 2)
    assert SitemapIndexes(other).listing(BASE, "a", 3) == (1,)  # nothing before it


def test_a_scope_of_no_site_here_names_the_first_index_file() -> None:
    assert SitemapIndexes(two_sections()).listing("https://elsewhere.example", "b", 1) == (1,)
