"""`Sitemaps.recent`: a section listing every URL added or changed within a window, from the log.

End to end on both adapters (`make_client`) and through real servers (`serve`): the data of a
plain section changes, pages are refreshed (so the log records them), and the recent
section lists exactly what was added or changed, with its published lastmod (else the
time its change was recorded), paged, in the index and the overview, never logged itself.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from lxml import html

from sitemap_middleware import ConfigurationError, Sitemaps
from sitemap_middleware.changes import ChangeLog

from ..conftest import BASE, Shelf, SitemapClient
from ..servers import Server
from ..xsd import NS, lastmods, locs, validate

PAGE = 3
DAY = 86_400.0
START = datetime(2026, 12, 1, 12, tzinfo=UTC).timestamp()
OVERVIEW = "/sitemaps/"


class Clock:
    """The sites' wall clock, moved by the test."""

    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> float:
        return self.now


def shop(log: ChangeLog, shelf: Shelf, clock: Clock, *, base_url: str = BASE, **recent: Any) -> Sitemaps:
    sitemaps = Sitemaps(base_url=base_url, page_size=PAGE, changes=log, clock=clock, overview_path=OVERVIEW)
    sitemaps.add_provider("products", shelf)
    sitemaps.recent("recent", window=timedelta(days=2), **recent)
    return sitemaps


def listed(client: SitemapClient, pages: int = 1, base_url: str = BASE) -> dict[str, str | None]:
    """Every URL of the recent section's pages (path -> lastmod), each page XSD-valid."""
    found: dict[str, str | None] = {}
    for number in range(1, pages + 1):
        response = client.get(f"/sitemap-recent-{number}.xml")
        assert response.status == 200
        root = validate(response.body)
        found.update(zip((loc.removeprefix(base_url) for loc in locs(root)), lastmods(root), strict=True))
    return found


def at(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def moment(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text)


@pytest.fixture
def log(reopen: Callable[[], ChangeLog]) -> ChangeLog:
    """On each backend (`conftest.reopen`)."""
    return reopen()


@pytest.fixture
def clock() -> Clock:
    return Clock()


def test_added_and_changed_urls_are_listed_with_their_published_lastmod(
    log: ChangeLog, clock: Clock, make_client: Callable[..., SitemapClient]
) -> None:
    shelf = Shelf(10)
    sitemaps = shop(log, shelf, clock)
    sitemaps.refresh()  # the baseline: nothing is recent
    shelf.rows["/p/!first"] = None  # before every row: every URL moves one place on
    shelf.rows["/p/004a"] = "2026-11-29"
    shelf.rows["/p/005"] = "2026-11-30"
    del shelf.rows["/p/007"]
    clock.now += 60
    sitemaps.refresh()
    got = listed(make_client(sitemaps))
    assert moment(got.pop("/p/!first")) == at(clock.now)  # published without: when it was recorded
    assert got == {"/p/004a": "2026-11-29", "/p/005": "2026-11-30"}


def test_a_url_whose_latest_change_is_a_removal_is_not_listed(
    log: ChangeLog, clock: Clock, make_client: Callable[..., SitemapClient]
) -> None:
    shelf = Shelf(4)
    sitemaps = shop(log, shelf, clock)
    sitemaps.refresh()
    shelf.rows["/p/new"] = "2026-11-30"
    shelf.rows["/p/back"] = "2026-11-30"
    sitemaps.refresh()
    del shelf.rows["/p/new"], shelf.rows["/p/back"]
    sitemaps.refresh()
    shelf.rows["/p/back"] = "2026-12-01"  # removed, then added again: listed
    sitemaps.refresh()
    assert listed(make_client(sitemaps)) == {"/p/back": "2026-12-01"}


def test_a_url_changed_several_times_is_listed_once_with_its_newest_lastmod(
    log: ChangeLog, clock: Clock, make_client: Callable[..., SitemapClient]
) -> None:
    shelf = Shelf(4)
    sitemaps = shop(log, shelf, clock)
    sitemaps.refresh()
    for day in ("2026-11-28", "2026-11-29", "2026-11-30"):
        shelf.rows["/p/002"] = day
        clock.now += 60
        sitemaps.refresh()
    response = make_client(sitemaps).get("/sitemap-recent-1.xml")
    assert [loc.removeprefix(BASE) for loc in locs(validate(response.body))] == ["/p/002"]
    assert listed(make_client(sitemaps)) == {"/p/002": "2026-11-30"}


def test_changes_slide_out_of_the_window_as_the_clock_moves(
    log: ChangeLog, clock: Clock, make_client: Callable[..., SitemapClient]
) -> None:
    shelf = Shelf(4)
    sitemaps = shop(log, shelf, clock)
    client = make_client(sitemaps)
    sitemaps.refresh()
    shelf.rows["/p/old"] = "2026-11-30"
    sitemaps.refresh()
    clock.now += DAY
    shelf.rows["/p/young"] = "2026-12-02"
    sitemaps.refresh()
    both = client.get("/sitemap-recent-1.xml")
    assert set(listed(client)) == {"/p/old", "/p/young"}
    clock.now = START + 2 * DAY + 1  # /p/old was recorded 2 days and 1 second ago
    alone = client.get("/sitemap-recent-1.xml")  # no refresh, no invalidate: the window moved
    assert set(listed(client)) == {"/p/young"}
    assert alone.headers["ETag"] != both.headers["ETag"]


def test_an_unchanged_recent_section_answers_a_conditional_request_with_304(
    log: ChangeLog, clock: Clock, make_client: Callable[..., SitemapClient]
) -> None:
    shelf = Shelf(4)
    sitemaps = shop(log, shelf, clock)
    client = make_client(sitemaps)
    sitemaps.refresh()
    shelf.rows["/p/a"] = None
    sitemaps.refresh()
    first = client.get("/sitemap-recent-1.xml")
    clock.now += 60
    again = client.get("/sitemap-recent-1.xml", {"If-None-Match": first.headers["ETag"]})
    assert again.status == 304
    shelf.rows["/p/b"] = None  # a new change: the log moved, so does the recent section
    sitemaps.refresh()
    moved = client.get("/sitemap-recent-1.xml", {"If-None-Match": first.headers["ETag"]})
    assert moved.status == 200
    assert set(listed(client)) == {"/p/a", "/p/b"}


def test_the_recent_section_is_paged_and_the_index_lists_every_page(
    log: ChangeLog, clock: Clock, make_client: Callable[..., SitemapClient]
) -> None:
    shelf = Shelf(4)
    sitemaps = shop(log, shelf, clock, page_size=2)
    client = make_client(sitemaps)
    sitemaps.refresh()
    added = {f"/p/new-{n}" for n in range(5)}
    shelf.rows.update(dict.fromkeys(added))
    sitemaps.refresh()
    assert set(listed(client, pages=3)) == added
    assert client.get("/sitemap-recent-4.xml").status == 404
    index = validate(client.get("/sitemap-index.xml").body)
    recent = [loc for loc in locs(index) if "-recent-" in loc]
    assert recent == [f"{BASE}/sitemap-recent-{n}.xml" for n in (1, 2, 3)]
    assert index.find("sm:sitemap", NS) is not None


def test_the_overview_lists_the_recent_section(
    log: ChangeLog, clock: Clock, make_client: Callable[..., SitemapClient]
) -> None:
    shelf = Shelf(4)
    sitemaps = shop(log, shelf, clock)
    sitemaps.refresh()
    shelf.rows["/p/a"] = None
    shelf.rows["/p/b"] = None
    sitemaps.refresh()
    page = html.fromstring(make_client(sitemaps).get(OVERVIEW).body)
    recent = page.find(".//section[@id='section-recent']")
    assert recent is not None
    assert recent.findtext(".//span[@class='urls']") == "2"
    hrefs = [a.get("href") for a in recent.iterfind(".//a[@class='page']")]
    assert hrefs == [f"{BASE}/sitemap-recent-1.xml"]


def test_the_recent_section_is_not_logged_itself(
    log: ChangeLog, clock: Clock, make_client: Callable[..., SitemapClient]
) -> None:
    shelf = Shelf(4)
    sitemaps = shop(log, shelf, clock)
    client = make_client(sitemaps)
    sitemaps.refresh()
    for name in ("/p/a", "/p/b"):
        shelf.rows[name] = None
        sitemaps.refresh()  # renders the recent section too, now with one more URL
        assert client.get("/sitemap-recent-1.xml").status == 200
    assert {(change.section, change.loc) for change in log.since()} == {
        ("products", f"{BASE}/p/a"),
        ("products", f"{BASE}/p/b"),
    }
    assert log.state(BASE, "recent") is None
    assert "changes_added" not in sitemaps.stats.snapshot().get("recent", {})


def test_a_log_shared_by_two_sites_lists_each_sites_own_changes(
    log: ChangeLog, clock: Clock, make_client: Callable[..., SitemapClient]
) -> None:
    other_base = "https://outlet.example"
    shelves = {BASE: Shelf(4), other_base: Shelf(4)}
    sites = {base: shop(log, shelf, clock, base_url=base) for base, shelf in shelves.items()}
    for sitemaps in sites.values():
        sitemaps.refresh()
    shelves[BASE].rows["/p/main"] = None
    shelves[other_base].rows["/p/outlet"] = None
    for sitemaps in sites.values():
        sitemaps.refresh()
    assert set(listed(make_client(sites[BASE]))) == {"/p/main"}
    assert set(listed(make_client(sites[other_base]), base_url=other_base)) == {"/p/outlet"}


def test_the_recent_section_is_served_through_a_real_server(
    log: ChangeLog, clock: Clock, serve: Callable[[Sitemaps], Server]
) -> None:
    shelf = Shelf(6)
    sitemaps = shop(log, shelf, clock)
    server = serve(sitemaps)
    sitemaps.refresh()
    shelf.rows["/p/003"] = "2026-11-30"
    shelf.rows["/p/new"] = None
    sitemaps.invalidate("products")
    for number in (1, 2, 3):  # as a crawler reads them: the log records each page
        assert server.get(f"/sitemap-products-{number}.xml").status == 200
    root = validate(server.fetch("/sitemap-recent-1.xml"))
    got = dict(zip(locs(root), lastmods(root), strict=True))
    assert moment(got.pop(f"{BASE}/p/new")) == at(clock.now)
    assert got == {f"{BASE}/p/003": "2026-11-30"}


def test_recent_needs_a_change_log_and_a_positive_window(log: ChangeLog) -> None:
    with pytest.raises(ConfigurationError, match="changes="):
        Sitemaps(base_url=BASE).recent("recent")
    sitemaps = Sitemaps(base_url=BASE, changes=log)
    for window in (timedelta(0), timedelta(seconds=-1), 3600):
        with pytest.raises(ConfigurationError, match="window"):
            sitemaps.recent("recent", window=window)  # type: ignore[arg-type]
    sitemaps.recent("recent")
    with pytest.raises(ConfigurationError, match="already registered"):
        sitemaps.recent("recent")


def test_an_app_mounted_below_a_prefix_lists_the_changes_of_its_mount(
    log: ChangeLog, clock: Clock, make_client: Callable[..., SitemapClient]
) -> None:
    shelf = Shelf(4)
    sitemaps = shop(log, shelf, clock)
    client = make_client(sitemaps, mount="/shop")

    def crawl() -> None:
        for number in (1, 2):
            assert client.get(f"/sitemap-products-{number}.xml").status == 200

    crawl()  # the baseline, recorded under the mount
    shelf.rows["/p/new"] = None
    sitemaps.invalidate("products")
    crawl()
    assert set(listed(client, base_url=f"{BASE}/shop")) == {"/p/new"}
