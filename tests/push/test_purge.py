"""`HttpPurge`: a PURGE for every document whose bytes changed, to a real Varnish in front of a
real server (uvicorn, werkzeug), and to a loopback cache that answers what we tell it to.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from sitemap_middleware import ConfigurationError, Sitemaps
from sitemap_middleware.changes import ChangeLog
from sitemap_middleware.push import HttpPurge

from ..conftest import BASE, SitemapClient
from ..redis_server import free_port
from ..servers import Server
from ..varnish_server import VarnishServer
from ..xsd import lastmods, locs, parse
from .purging import Shelf, deliver, shop

HOST = "shop.example"


@contextmanager
def purging(origin: str, sitemaps: Sitemaps, **options: Any) -> Iterator[HttpPurge]:
    purge = HttpPurge(origin, **options).bind(sitemaps)
    try:
        yield purge
    finally:
        purge.close()


def test_a_page_cached_by_varnish_is_served_new_right_after_its_change_is_pushed(
    tmp_path: Path, log: ChangeLog, serve: Callable[[Sitemaps], Server]
) -> None:
    shelf = Shelf(9)  # three pages of products
    sitemaps = shop(log, shelf)
    server = serve(sitemaps)
    sitemaps.refresh()  # the log's baseline
    with VarnishServer(tmp_path / "varnish", server.port) as varnish, purging(varnish.url, sitemaps) as purge:
        log.subscribe(purge.consumer(BASE))
        paths = [f"/sitemap-products-{n}.xml" for n in (1, 2, 3)] + ["/sitemap-index.xml"]
        before = {path: varnish.get(path, HOST) for path in paths}
        assert {path: got.headers["X-Cache"] for path, got in before.items()} == dict.fromkeys(paths, "MISS")
        assert all(varnish.get(path, HOST).headers["X-Cache"] == "HIT" for path in paths)

        shelf.rows["/p/004"] = "2026-11-30"  # a row of page 2
        sitemaps.refresh("products")  # the origin renders it anew; Varnish still holds the old one
        stale = varnish.get("/sitemap-products-2.xml", HOST)
        assert stale.headers["X-Cache"] == "HIT" and stale.body == before["/sitemap-products-2.xml"].body

        report = deliver(log, purge)
        assert report is not None and not report.retry
        fresh = varnish.get("/sitemap-products-2.xml", HOST)
        assert fresh.headers["X-Cache"] == "MISS"  # dropped, fetched again from the origin
        page = parse(fresh.body)
        assert dict(zip(locs(page), lastmods(page), strict=True))[f"{BASE}/p/004"] == "2026-11-30"
        assert varnish.get("/sitemap-products-2.xml", HOST).headers["X-Cache"] == "HIT"
        assert varnish.get("/sitemap-index.xml", HOST).headers["X-Cache"] == "MISS"  # it lists page 2
        for untouched in ("/sitemap-products-1.xml", "/sitemap-products-3.xml"):
            got = varnish.get(untouched, HOST)
            assert got.headers["X-Cache"] == "HIT" and len(got.headers["X-Varnish"].split()) == 2
            assert got.body == before[untouched].body
        assert deliver(log, purge) is None  # acknowledged: nothing is sent twice


def test_a_purge_given_as_a_push_target_is_delivered_by_the_dispatcher(
    tmp_path: Path, log: ChangeLog
) -> None:
    with LoopbackCache() as cache:
        purge = HttpPurge(cache.url)
        shelf = Shelf(9)
        sitemaps = shop(log, shelf, push=[purge])  # bound and subscribed by the Sitemaps
        try:
            sitemaps.refresh()  # the log's baseline
            shelf.rows["/p/004"] = "2026-11-30"  # a row of page 2
            sitemaps.refresh("products")
            pushed = sitemaps.push_now()
            assert [(p.consumer, p.changes) for p in pushed if p.consumer == purge.consumer(BASE)]
            assert sorted(path for _, _, path in cache.requests) == sorted(DOCUMENTS_OF_PAGE_TWO)
            assert {host for _, host, _ in cache.requests} == {HOST}
            assert log.pending(purge.consumer(BASE)) == 0
        finally:
            sitemaps.close()
            purge.close()


class LoopbackCache:
    """An HTTP cache's purge interface on 127.0.0.1: records each request, answers ``status``
    (``failing``: paths answered 503 instead)."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, str]] = []  # (method, Host, path)
        self.status = 200
        self.failing: set[str] = set()
        cache = self

        class Handler(BaseHTTPRequestHandler):
            def do_PURGE(self) -> None:
                cache.requests.append((self.command, self.headers["Host"], self.path))
                status = 503 if self.path in cache.failing else cache.status
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self._thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05})

    def __enter__(self) -> LoopbackCache:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(10)


def changed_page_two(log: ChangeLog, **options: Any) -> tuple[Sitemaps, Shelf]:
    """A shop whose page 2 of products changed after the baseline (the outbox subscribed between)."""
    shelf = Shelf(9)
    sitemaps = shop(log, shelf, **options)
    sitemaps.refresh()
    return sitemaps, shelf


DOCUMENTS_OF_PAGE_TWO = [
    "/sitemap-products-2.xml",
    "/sitemap-products-2.xml.gz",
    "/sitemap-index.xml",
    "/sitemap-index.xml.gz",
    "/sitemap.xml",
    "/sitemap.xml.gz",
    "/robots.txt",
]


def test_a_changed_page_purges_itself_its_gz_the_index_listing_it_and_robots_txt(log: ChangeLog) -> None:
    sitemaps, shelf = changed_page_two(log)
    with LoopbackCache() as cache, purging(cache.url, sitemaps) as purge:
        log.subscribe(purge.consumer(BASE))
        shelf.rows["/p/004"] = "2026-11-30"
        sitemaps.refresh()
        report = deliver(log, purge)
        assert report is not None and not report.retry
    assert cache.requests == [("PURGE", "shop.example", path) for path in DOCUMENTS_OF_PAGE_TWO]
    assert list(report.purged) == [f"shop.example{path}" for path in DOCUMENTS_OF_PAGE_TWO]


def test_purges_name_the_site_host_and_its_paths_below_base_url_and_the_mount(
    log: ChangeLog, make_client: Callable[..., SitemapClient]
) -> None:
    shelf = Shelf(9)
    sitemaps = shop(log, shelf, base_url="https://shop.example:8443/store")
    client = make_client(sitemaps, mount="/m")

    def crawl() -> None:
        assert client.get("/sitemap-index.xml").status == 200
        for number in range(1, 4):
            assert client.get(f"/sitemap-products-{number}.xml").status == 200

    crawl()  # the baseline, read by crawlers
    with LoopbackCache() as cache, purging(cache.url, sitemaps) as purge:
        log.subscribe(purge.consumer(BASE))
        del shelf.rows["/p/008"]  # the last row: page 3 changes
        sitemaps.invalidate()
        crawl()
        report = deliver(log, purge)
        assert report is not None and not report.retry
    hosts = {host for _, host, _ in cache.requests}
    paths = [path for _, _, path in cache.requests]
    assert hosts == {"shop.example:8443"}
    assert paths[:2] == ["/store/m/sitemap-products-3.xml", "/store/m/sitemap-products-3.xml.gz"]
    assert paths[-1] == "/store/m/robots.txt"


def test_a_purge_the_cache_fails_is_reported_for_retry_and_the_whole_delivery_sent_again(
    log: ChangeLog,
) -> None:
    sitemaps, shelf = changed_page_two(log)
    with LoopbackCache() as cache, purging(cache.url, sitemaps) as purge:
        log.subscribe(purge.consumer(BASE))
        shelf.rows["/p/004"] = "2026-11-30"
        sitemaps.refresh()
        cache.failing = {"/sitemap-index.xml.gz"}
        failed = deliver(log, purge)
        assert failed is not None and failed.retry
        assert failed.failed == (("shop.example/sitemap-index.xml.gz", "HTTP 503"),)
        assert log.pending(purge.consumer(BASE)) > 0  # released, not acknowledged
        cache.failing = set()
        again = deliver(log, purge)
        assert again is not None and not again.retry
        assert log.pending(purge.consumer(BASE)) == 0
    assert [path for _, _, path in cache.requests] == DOCUMENTS_OF_PAGE_TWO * 2  # idempotent: all again


def test_a_cache_that_does_not_hold_a_document_counts_as_purged(log: ChangeLog) -> None:
    sitemaps, shelf = changed_page_two(log)
    with LoopbackCache() as cache, purging(cache.url, sitemaps) as purge:
        cache.status = 404  # Squid and nginx's cache_purge: nothing cached under that key
        log.subscribe(purge.consumer(BASE))
        shelf.rows["/p/004"] = "2026-11-30"
        sitemaps.refresh()
        report = deliver(log, purge)
    assert report is not None and not report.retry and len(report.purged) == len(DOCUMENTS_OF_PAGE_TWO)


def test_an_unreachable_cache_is_reported_for_retry(log: ChangeLog) -> None:
    sitemaps, shelf = changed_page_two(log)
    with purging(f"http://127.0.0.1:{free_port()}", sitemaps, timeout=2.0) as purge:
        log.subscribe(purge.consumer(BASE))
        shelf.rows["/p/004"] = "2026-11-30"
        sitemaps.refresh()
        report = deliver(log, purge)
    assert report is not None and report.retry and not report.purged
    assert all(why.startswith("ConnectError") for _, why in report.failed)
    assert log.pending(purge.consumer(BASE)) > 0


def test_nothing_is_purged_when_no_page_changed(log: ChangeLog) -> None:
    sitemaps, _ = changed_page_two(log)
    with LoopbackCache() as cache, purging(cache.url, sitemaps) as purge:
        log.subscribe(purge.consumer(BASE))
        sitemaps.refresh()  # the same bytes again
        assert deliver(log, purge) is None
    assert cache.requests == []


@pytest.mark.parametrize(
    "origin", ["", "127.0.0.1:6081", "ftp://cache", "http://cache/purge", "http://cache?x=1", None]
)
def test_an_origin_that_is_no_cache_address_is_refused_at_construction(origin: object) -> None:
    with pytest.raises(ConfigurationError, match="origin"):
        HttpPurge(origin)  # type: ignore[arg-type]
