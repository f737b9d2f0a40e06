"""Pages rendered by crawlers' requests and by `Sitemaps.refresh` are recorded in the change log.

End to end on both adapters (`make_client`) and through real servers (`serve`): the data of a
plain section changes, and the log reports exactly the URLs added, changed and removed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from sitemap_middleware import Sitemaps, Url
from sitemap_middleware.changes import ChangeLog

from ..conftest import BASE, Shelf, SitemapClient, counter
from ..servers import Server

PAGE = 3  # URLs per page: every edit crosses page boundaries


def shop(log: ChangeLog, shelf: Shelf, **options: Any) -> Sitemaps:
    sitemaps = Sitemaps(base_url=BASE, page_size=PAGE, changes=log, **options)
    sitemaps.add_provider("products", shelf)
    return sitemaps


def found(sitemaps: Sitemaps) -> set[tuple[str, str]]:
    assert sitemaps.changes is not None
    return {(change.kind, change.loc.removeprefix(BASE)) for change in sitemaps.changes.since()}


def edit(shelf: Shelf) -> set[tuple[str, str]]:
    """Inserts before, inside and after the pages, an update and deletes; what the log must say."""
    shelf.rows["/p/!first"] = None  # sorts before every row: every URL moves one place on
    shelf.rows["/p/004a"] = None
    shelf.rows["/p/999"] = None
    shelf.rows["/p/005"] = "2026-11-30"
    del shelf.rows["/p/001"], shelf.rows["/p/007"]
    return {
        ("added", "/p/!first"),
        ("added", "/p/004a"),
        ("added", "/p/999"),
        ("changed", "/p/005"),
        ("removed", "/p/001"),
        ("removed", "/p/007"),
    }


@pytest.fixture
def log(tmp_path: Path) -> ChangeLog:
    return ChangeLog.sqlite(tmp_path / "changes.sqlite3")


@pytest.mark.parametrize("cache", [True, None], ids=["cached", "uncached"])
def test_a_refresh_records_exactly_what_changed_since_the_baseline(
    log: ChangeLog, cache: bool | None
) -> None:
    shelf = Shelf(10)
    sitemaps = shop(log, shelf, cache=cache)
    assert sitemaps.refresh().pages == {"products": 4}
    assert found(sitemaps) == set()  # the baseline
    expected = edit(shelf)
    sitemaps.refresh()
    assert found(sitemaps) == expected
    snapshot = sitemaps.stats.snapshot()["products"]
    assert (snapshot["changes_added"], snapshot["changes_changed"], snapshot["changes_removed"]) == (3, 1, 2)
    sitemaps.refresh()
    assert found(sitemaps) == expected  # nothing twice


def test_crawlers_requests_record_the_pages_they_render(
    log: ChangeLog, make_client: Callable[..., SitemapClient]
) -> None:
    shelf = Shelf(10)
    sitemaps = shop(log, shelf)
    client = make_client(sitemaps)

    def crawl() -> None:
        assert client.get("/sitemap-index.xml").status == 200
        for number in range(1, 6):
            status = client.get(f"/sitemap-products-{number}.xml").status
            assert status in (200, 404)

    crawl()
    assert found(sitemaps) == set()
    expected = edit(shelf)
    sitemaps.invalidate()  # as a save hook would: crawlers read fresh pages
    crawl()
    assert found(sitemaps) == expected


def test_a_restart_on_the_same_log_reports_nothing_twice_and_misses_nothing(tmp_path: Path) -> None:
    path = tmp_path / "changes.sqlite3"
    shelf = Shelf(10)
    shop(ChangeLog.sqlite(path), shelf).refresh()
    expected = edit(shelf)
    first = shop(ChangeLog.sqlite(path), shelf)
    first.refresh()
    shelf.rows["/p/003"] = "2026-12-01"
    restarted = shop(ChangeLog.sqlite(path), shelf)
    restarted.refresh()
    assert found(restarted) == expected | {("changed", "/p/003")}
    assert len(restarted.changes.since()) == len(expected) + 1  # type: ignore[union-attr]


def test_a_page_cut_short_is_not_recorded(log: ChangeLog, make_client: Callable[..., SitemapClient]) -> None:
    shelf = Shelf(10)
    sitemaps = shop(log, shelf)
    sitemaps.refresh()
    del shelf.rows["/p/000"]
    sitemaps.invalidate()
    client = make_client(sitemaps)
    assert client.request("HEAD", "/sitemap-products-1.xml").status == 200  # no body: no page
    assert log.state(BASE, "products").passes == 1  # type: ignore[union-attr]
    assert found(sitemaps) == set()


def test_a_failing_log_is_counted_and_the_page_is_served(
    log: ChangeLog, make_client: Callable[..., SitemapClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    shelf = Shelf(4)
    sitemaps = shop(log, shelf)

    def broken(*args: object, **kwargs: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(log, "record", broken)
    response = make_client(sitemaps).get("/sitemap-products-1.xml")
    assert response.status == 200 and response.body.count(b"<url>") == PAGE
    log.flush()  # pages are recorded on the log's own thread
    assert counter(sitemaps, "products", "changes_errors") == 1


def test_changes_are_recorded_through_a_real_server(
    log: ChangeLog, serve: Callable[[Sitemaps], Server]
) -> None:
    shelf = Shelf(10)
    sitemaps = shop(log, shelf)
    server = serve(sitemaps)
    sitemaps.refresh()
    expected = edit(shelf)
    sitemaps.invalidate()
    for number in range(1, 5):
        for encoding in ("gzip", "identity"):  # a reader of the stored page, too
            got = server.get(f"/sitemap-products-{number}.xml", headers={"Accept-Encoding": encoding})
            assert got.status == 200
    assert found(sitemaps) == expected
    assert counter(sitemaps, "products", "renders") >= 4


def test_a_page_is_recorded_off_its_render_and_in_render_order(
    log: ChangeLog, make_client: Callable[..., SitemapClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    shelf = Shelf(4)
    sitemaps = shop(log, shelf, cache=None)
    sitemaps.refresh()
    release = threading.Event()
    record = log.record
    threads: list[str] = []

    def slow(*args: Any, **kwargs: Any) -> Any:
        threads.append(threading.current_thread().name)
        assert release.wait(10), "the test never let the log go on"
        return record(*args, **kwargs)

    monkeypatch.setattr(log, "record", slow)
    client = make_client(sitemaps)
    shelf.rows["/p/000"] = "2026-11-01"
    assert client.get("/sitemap-products-1.xml").status == 200  # answered while the log waits
    shelf.rows["/p/000"] = "2026-11-02"
    assert client.get("/sitemap-products-1.xml").status == 200
    release.set()
    changes = log.since()
    assert threads == ["sitemap-changes", "sitemap-changes"]
    assert [(change.kind, change.loc.removeprefix(BASE)) for change in changes] == [
        ("changed", "/p/000"),
        ("changed", "/p/000"),
    ]


def test_changes_since_needs_an_aware_datetime(log: ChangeLog) -> None:
    from datetime import datetime

    from sitemap_middleware import ConfigurationError

    with pytest.raises(ConfigurationError, match="aware"):
        log.since(datetime(2026, 12, 1))


def test_a_refresh_and_a_crawler_asking_at_once_render_the_page_once(
    log: ChangeLog, make_client: Callable[..., SitemapClient]
) -> None:
    import threading

    from ..conftest import wait_until

    shelf = Shelf(PAGE)  # one page
    calls: list[int] = []
    gate = threading.Event()

    def provider() -> Iterator[Url]:
        calls.append(len(calls))
        if len(calls) == 2:  # the page's render (the first call planned the section)
            assert gate.wait(10), "the crawler never joined the render"
        yield from shelf()

    sitemaps = Sitemaps(base_url=BASE, page_size=PAGE, changes=log)
    sitemaps.add_provider("products", provider)
    client = make_client(sitemaps)
    refreshing = threading.Thread(target=sitemaps.refresh)
    refreshing.start()
    try:
        wait_until(lambda: len(calls) == 2, "the refresh renders page 1")
        crawler: list[int] = []
        asking = threading.Thread(target=lambda: crawler.append(client.get("/sitemap-products-1.xml").status))
        asking.start()
        wait_until(
            lambda: (
                counter(sitemaps, "products", "flight_waits")
                + counter(sitemaps, "products", "joined_renders")
            ),
            "the crawler joins the refresh's render",
        )
        gate.set()
        asking.join(10)
    finally:
        gate.set()
        refreshing.join(10)
    assert crawler == [200]
    assert len(calls) == 2  # planned once, page 1 rendered once


def test_a_log_that_stays_busy_never_holds_a_render_past_its_wait(
    log: ChangeLog, make_client: Callable[..., SitemapClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    shelf = Shelf(PAGE)
    sitemaps = shop(log, shelf, cache=None)
    sitemaps.refresh()
    release = threading.Event()
    record = log.record

    def stuck(*args: Any, **kwargs: Any) -> Any:
        assert release.wait(30), "the test never let the log go on"
        return record(*args, **kwargs)

    monkeypatch.setattr(log, "record", stuck)
    monkeypatch.setattr(log, "room_wait", 0.2)
    client = make_client(sitemaps)
    statuses: list[int] = []

    def crawl() -> None:  # one page recording, four waiting: the sixth finds no room
        for _ in range(6):
            statuses.append(client.get("/sitemap-products-1.xml").status)

    crawler = threading.Thread(target=crawl)
    crawler.start()
    crawler.join(10)
    served = not crawler.is_alive()
    release.set()
    crawler.join(10)
    assert served, "a render waited on the busy log"
    assert statuses == [200] * 6
    log.flush()
    assert counter(sitemaps, "products", "changes_dropped") == 1  # the next render records it
