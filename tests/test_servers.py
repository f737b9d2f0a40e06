"""Through real HTTP servers on 127.0.0.1: uvicorn (ASGI) and werkzeug's threaded WSGI server.

Each server (`tests.servers`, started by the `serve` fixture) runs in a background thread on
an ephemeral port and is fetched over the socket with `http.client`, so chunked streaming,
gzip and keep-alive are the real ones.
Streaming is shown with providers blocked on an `Event` the test controls, never by
timing: the first ``<url>`` must reach the client while the provider cannot go on.
"""

from __future__ import annotations

import asyncio
import gzip
import http.client
import threading
import zlib
from collections.abc import AsyncIterator, Callable, Iterator

import pytest
from lxml import etree

from sitemap_middleware import Sitemaps

from . import apps
from .crawl import (
    BASE,
    PRODUCT_LOCS,
    PRODUCTS_PAGE_SIZE,
    ROBOTS_MERGED,
    crawl,
    gunzip_locs,
    robots_lines,
    shop_index_locs,
    shop_sitemaps,
)
from .servers import TIMEOUT, Server, uvicorn_serving
from .xsd import NS, locs, validate

pytestmark = pytest.mark.server

BIG = 120_003
SLOW_REST = 200  # URLs a blocked provider yields once released


@pytest.fixture
def shop(serve: Callable[[Sitemaps], Server]) -> Server:
    sitemaps, _ = shop_sitemaps()
    return serve(sitemaps)


def test_index_lists_every_page(shop: Server) -> None:
    got = shop.get("/sitemap-index.xml")
    assert got.status == 200
    assert got.headers["content-type"] == "application/xml; charset=utf-8"
    assert locs(validate(got.body)) == shop_index_locs()


def test_pages_hold_exactly_the_provider_urls(shop: Server) -> None:
    _, expected = shop_sitemaps()
    tree = crawl(shop.fetch)
    assert tree.url_count == len(expected)
    assert tree.urls == expected


def test_gz_page_is_the_same_document_gzipped(shop: Server) -> None:
    got = shop.get("/sitemap-products-1.xml.gz")
    assert got.status == 200
    assert got.headers["content-type"] == "application/gzip"
    assert got.headers["content-encoding"] is None
    assert gunzip_locs(got.body) == PRODUCT_LOCS[:PRODUCTS_PAGE_SIZE]


def test_page_is_gzip_encoded_when_the_client_accepts_it(shop: Server) -> None:
    got = shop.get("/sitemap-products-1.xml", headers={"accept-encoding": "gzip"})
    assert got.status == 200
    assert got.headers["content-encoding"] == "gzip"
    assert locs(validate(gzip.decompress(got.body))) == PRODUCT_LOCS[:PRODUCTS_PAGE_SIZE]


def test_robots_txt_is_the_apps_own_plus_our_sitemap_line(shop: Server) -> None:
    got = shop.get("/robots.txt")
    assert got.status == 200
    assert robots_lines(got.body) == ROBOTS_MERGED


def test_app_route_passes_through(shop: Server) -> None:
    got = shop.get("/")
    assert (got.status, got.body) == (200, f"{shop.framework} home".encode())


def test_unregistered_section_sitemap_is_served_by_the_app(shop: Server) -> None:
    got = shop.get("/sitemap-foo-1.xml")
    assert (got.status, got.body) == (200, apps.APP_SITEMAP)


def test_120003_urls_make_three_full_valid_pages_holding_exactly_the_provider_set(
    serve: Callable[[Sitemaps], Server],
) -> None:
    sitemaps = Sitemaps(base_url=BASE, page_size=50_000)
    sitemaps.provider("products")(lambda: (f"/p/{n}" for n in range(BIG)))
    server = serve(sitemaps)
    tree = crawl(server.fetch)
    assert tree.index == [f"{BASE}/sitemap-products-{n}.xml" for n in (1, 2, 3)]
    assert [len(page) for page in tree.pages.values()] == [50_000, 50_000, 20_003]
    assert tree.urls == {f"{BASE}/p/{n}" for n in range(BIG)}


def test_uvicorn_root_path_prefixes_the_urls_we_emit() -> None:
    sitemaps, _ = shop_sitemaps()
    with uvicorn_serving(sitemaps.asgi(apps.starlette_app()), root_path="/shop") as port:
        server = Server(port, "starlette")
        index = server.get("/sitemap-index.xml")  # as a proxy forwards it, /shop stripped
        robots = server.get("/robots.txt")
    assert locs(validate(index.body)) == shop_index_locs(f"{BASE}/shop")
    assert robots_lines(robots.body)[-1] == f"Sitemap: {BASE}/shop/sitemap-index.xml"


# Streaming: the provider yields one URL, then blocks until the test releases it.


class Blocked:
    """A provider (sync or async) that yields ``/first``, then waits for `release`."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.finished = threading.Event()

    @property
    def locs(self) -> list[str]:
        return [f"{BASE}/first"] + [f"{BASE}/rest/{n}" for n in range(SLOW_REST)]

    def generator(self) -> Iterator[str]:
        yield "/first"
        self.release.wait(2 * TIMEOUT)  # outlives the client's timeout: a buffered page fails there
        yield from (f"/rest/{n}" for n in range(SLOW_REST))
        self.finished.set()

    async def async_generator(self) -> AsyncIterator[str]:
        yield "/first"
        await asyncio.to_thread(self.release.wait, 2 * TIMEOUT)  # the event loop runs meanwhile
        for n in range(SLOW_REST):
            yield f"/rest/{n}"
        self.finished.set()


@pytest.fixture(params=["sync", "async"])
def blocked(
    request: pytest.FixtureRequest, serve: Callable[[Sitemaps], Server]
) -> Iterator[tuple[Blocked, Server]]:
    provider = Blocked()
    sitemaps = Sitemaps(base_url=BASE, strict=True)
    sitemaps.provider("slow")(provider.generator if request.param == "sync" else provider.async_generator)
    try:
        yield provider, serve(sitemaps)
    finally:
        provider.release.set()  # before the server stops, whatever the test did


def read_first_url(response: http.client.HTTPResponse, *, gzipped: bool = False) -> bytes:
    """Read the body until the first ``<url>`` element is complete; returns the bytes read.

    The partial document is parsed as it arrives (`etree.XMLPullParser`), so this checks
    XML, not substrings. A body held back until the provider finishes times out here.
    """
    parser = etree.XMLPullParser(events=("end",), tag=f"{{{NS['sm']}}}url")
    decoder = zlib.decompressobj(16 + zlib.MAX_WBITS) if gzipped else None
    received = b""
    while True:
        try:
            chunk = response.read1(65536)
        except TimeoutError:
            pytest.fail("no first <url> while the provider was blocked: the page is buffered, not streamed")
        assert chunk, "the body ended before its first <url>"
        received += chunk
        parser.feed(decoder.decompress(chunk) if decoder else chunk)
        for _, element in parser.read_events():
            assert element.findtext("sm:loc", namespaces=NS) == f"{BASE}/first"
            return received


def test_page_streams_its_first_url_while_the_provider_is_blocked(blocked: tuple[Blocked, Server]) -> None:
    provider, server = blocked
    with server.open("/sitemap-slow-1.xml") as response:
        assert response.status == 200
        head = read_first_url(response)
        assert not provider.finished.is_set()
        provider.release.set()
        body = head + response.read()
    assert provider.finished.is_set()
    assert locs(validate(body)) == provider.locs


def test_gzip_encoded_page_streams_its_first_url_while_the_provider_is_blocked(
    blocked: tuple[Blocked, Server],
) -> None:
    provider, server = blocked
    with server.open("/sitemap-slow-1.xml", headers={"accept-encoding": "gzip"}) as response:
        assert response.headers["content-encoding"] == "gzip"
        head = read_first_url(response, gzipped=True)
        assert not provider.finished.is_set()
        provider.release.set()
        body = gzip.decompress(head + response.read())
    assert locs(validate(body)) == provider.locs


def test_blocked_provider_does_not_stop_other_requests(blocked: tuple[Blocked, Server]) -> None:
    provider, server = blocked
    with server.open("/sitemap-slow-1.xml") as response:
        read_first_url(response)
        other = server.get("/")  # under ASGI: the event loop is free while the provider waits
        assert other.status == 200
        assert not provider.finished.is_set()
        provider.release.set()
        response.read()
