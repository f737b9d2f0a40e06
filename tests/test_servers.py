"""Through real HTTP servers on 127.0.0.1: uvicorn (ASGI) and werkzeug's threaded WSGI server.

Each server runs in a background thread on an ephemeral port and is fetched over the
socket with `http.client`, so chunked streaming, gzip and keep-alive are the real ones.
Streaming is shown with providers blocked on an `Event` the test controls, never by
timing: the first ``<url>`` must reach the client while the provider cannot go on.
"""

from __future__ import annotations

import asyncio
import gzip
import http.client
import socket
import threading
import zlib
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from email.message import Message
from typing import Any

import pytest
import uvicorn
from lxml import etree
from werkzeug.serving import WSGIRequestHandler, make_server

from sitemap_middleware import Sitemaps

from . import apps
from .conftest import wait_until
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
from .xsd import NS, locs, validate

pytestmark = pytest.mark.server

TIMEOUT = 10.0  # seconds: a regression fails the test instead of hanging it
BIG = 120_003
SLOW_REST = 200  # URLs a blocked provider yields once released


@dataclass
class Got:
    status: int
    headers: Message  # case-insensitive
    body: bytes  # as on the wire: a Content-Encoding is not undone


class _QuietHandler(WSGIRequestHandler):
    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        pass  # errors are still logged


@contextmanager
def uvicorn_serving(app: Any, root_path: str = "") -> Iterator[int]:
    """Serve the ASGI ``app`` with uvicorn in a thread; yields the port."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(
        app,
        root_path=root_path,
        log_config=None,
        access_log=False,
        ws="none",
        http="h11",
        timeout_graceful_shutdown=2,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        wait_until(lambda: server.started or not thread.is_alive(), "uvicorn has started", TIMEOUT)
        assert server.started, "uvicorn did not start"
        yield sock.getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(TIMEOUT)
        sock.close()
        assert not thread.is_alive(), "uvicorn did not shut down"


@contextmanager
def werkzeug_serving(app: Any) -> Iterator[int]:
    """Serve the WSGI ``app`` with werkzeug's threaded server in a thread; yields the port."""
    server = make_server("127.0.0.1", 0, app, threaded=True, request_handler=_QuietHandler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server.server_port
    finally:
        server.shutdown()
        server.server_close()
        thread.join(TIMEOUT)
        assert not thread.is_alive(), "the WSGI server did not shut down"


class Server:
    """One running server in front of a real app: ``get`` for whole responses, ``open`` to stream."""

    def __init__(self, port: int, framework: str) -> None:
        self.port = port
        self.framework = framework  # what the app's own answers name it

    @contextmanager
    def open(self, path: str, headers: dict[str, str] | None = None) -> Iterator[http.client.HTTPResponse]:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=TIMEOUT)
        try:
            connection.request("GET", path, headers=headers or {})  # http.client asks for identity
            try:
                response = connection.getresponse()
            except TimeoutError:
                pytest.fail(f"GET {path}: no response headers within {TIMEOUT} s")
            yield response
        finally:
            connection.close()

    def get(self, path: str, headers: dict[str, str] | None = None) -> Got:
        with self.open(path, headers) as response:
            return Got(response.status, response.headers, response.read())

    def fetch(self, path: str) -> bytes:
        got = self.get(path)
        assert got.status == 200, f"GET {path}: {got.status} {got.body[:200]!r}"
        return got.body


@pytest.fixture(params=["uvicorn", "werkzeug", "werkzeug-helpers"])
def serve(request: pytest.FixtureRequest) -> Iterator[Callable[[Sitemaps], Server]]:
    """Start a server for a `Sitemaps`: uvicorn + Starlette, or werkzeug + Flask (rendering
    on the request thread, or with ``wsgi_helper_threads`` on helper threads)."""
    with ExitStack() as stack:

        def start(sitemaps: Sitemaps) -> Server:
            if request.param == "uvicorn":
                port = stack.enter_context(uvicorn_serving(sitemaps.asgi(apps.starlette_app())))
                return Server(port, "starlette")
            # Read when the middleware is built: the same Sitemaps, rendering on helpers.
            sitemaps.wsgi_helper_threads = request.param == "werkzeug-helpers"
            flask_app = apps.flask_app()
            flask_app.wsgi_app = sitemaps.wsgi(flask_app.wsgi_app)  # type: ignore[method-assign]
            return Server(stack.enter_context(werkzeug_serving(flask_app)), "flask")

        yield start


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
