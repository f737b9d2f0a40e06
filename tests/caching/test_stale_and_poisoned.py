"""Nothing stale, nothing poisoned: what one client sends never changes what another gets.

- a repeated request for a section with a declared version sees a new version at once
  (replays decide afresh for such sections);
- an app whose robots.txt depends on the Host gives each host its own answer;
- huge header values cost their sender a full answer, never memory of ours;
- Last-Modified is never later than the response's Date (RFC 9110 §8.8.2.1), under uvicorn.
"""

from __future__ import annotations

import asyncio
import gc
import gzip
import threading
import time
import tracemalloc
from collections.abc import AsyncIterator, Callable
from email.utils import parsedate_to_datetime
from typing import Any

import pytest

from sitemap_middleware import Sitemaps

from ..conftest import BASE, Catalogue, build
from ..servers import Server, uvicorn_serving
from ..xsd import locs, validate

PAGE = "/sitemap-products-1.xml"
GZIP = {"Accept-Encoding": "gzip"}


@pytest.mark.parametrize("method", ["GET", "HEAD"])
def test_a_repeated_gzip_request_sees_a_new_declared_version_at_once(make_client, method):
    version = [1]
    catalogue = Catalogue()
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.add_provider("products", catalogue, version=lambda: version[0])
    client = make_client(sitemaps)
    client.get(PAGE, GZIP)  # cold: streamed and stored
    before = [client.request(method, PAGE, GZIP) for _ in range(3)]  # answered from the store
    catalogue.paths.append("/p/new")
    version[0] = 2
    after = client.request(method, PAGE, GZIP)
    assert len({response.headers["ETag"] for response in before}) == 1
    assert after.headers["ETag"] != before[0].headers["ETag"]
    if method == "GET":
        assert f"{BASE}/p/new" in locs(validate(gzip.decompress(after.body)))


def test_a_repeated_304_for_an_old_version_is_a_200_once_the_version_moves(make_client):
    version = [1]
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.add_provider("products", Catalogue(), version=lambda: version[0])
    client = make_client(sitemaps)
    etag = client.get(PAGE).headers["ETag"]
    assert [client.get(PAGE, {"If-None-Match": etag}).status for _ in range(3)] == [304] * 3
    version[0] = 2
    assert client.get(PAGE, {"If-None-Match": etag}).status == 200


def robots_by_host_apps() -> tuple[Any, Any]:
    """An app that disallows everything on its staging host, as many sites do."""

    def text(host: str) -> bytes:
        return (
            b"User-agent: *\nDisallow: /\n" if host.startswith("staging.") else b"User-agent: *\nAllow: /\n"
        )

    def wsgi_app(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        body = text(environ.get("HTTP_HOST", ""))
        start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
        return [body]

    async def asgi_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        host = dict(scope["headers"]).get(b"host", b"").decode()
        body = text(host)
        await send(
            {"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]}
        )
        await send({"type": "http.response.body", "body": body})

    return wsgi_app, asgi_app


def test_robots_txt_of_one_host_never_reaches_another(make_client):
    wsgi_app, asgi_app = robots_by_host_apps()
    client = make_client(build()[0], wsgi_app=wsgi_app, asgi_app=asgi_app)
    staging = client.get("/robots.txt", {"Host": "staging.shop.example"})
    real = [client.get("/robots.txt", {"Host": "shop.example"}) for _ in range(2)]
    assert b"Disallow: /\n" in staging.body
    for response in real:
        assert response.status == 200
        assert b"Disallow: /\n" not in response.body
        assert response.body.endswith(b"Sitemap: https://shop.example/sitemap-index.xml\n")


def test_huge_forwarded_headers_never_grow_our_memory(make_client):
    sitemaps, _ = build()
    client = make_client(sitemaps)
    client.get(PAGE)
    etag = client.get(PAGE).headers["ETag"]
    tracemalloc.start()
    try:
        client.get(PAGE, {"If-None-Match": etag, "X-Forwarded-Host": "warm.example"})
        gc.collect()  # the test clients' own garbage is not ours
        before, _ = tracemalloc.get_traced_memory()
        for n in range(40):  # each request's headers are unique and large
            huge = f"h{n}." + "x" * 256 * 1024
            headers = {"If-None-Match": etag, "X-Forwarded-Host": huge, "Forwarded": f"host={huge}"}
            assert client.get(PAGE, headers).status == 304
        del huge, headers
        gc.collect()
        after, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # 40 times 512 KiB of headers passed through: what stays must be far less than one of them.
    assert after - before < 512 * 1024


def test_huge_conditional_headers_get_full_answers_and_are_never_remembered(make_client):
    sitemaps, _ = build()
    client = make_client(sitemaps)
    client.get(PAGE)
    etag = client.get(PAGE).headers["ETag"]
    huge = etag + ", " + ", ".join(f'"{n:0>60}"' for n in range(5000))  # ~320 KB, ours among them
    answers = [client.get(PAGE, {"If-None-Match": huge}).status for _ in range(3)]
    assert answers == [304] * 3
    assert "replayed" not in sitemaps.stats.snapshot()["products"]


@pytest.mark.server
def test_last_modified_of_a_cold_index_is_never_after_the_date_under_uvicorn():
    slow = threading.Event()

    async def products() -> AsyncIterator[str]:
        await asyncio.sleep(1.2)  # the index takes a while: Date is taken before it is done
        slow.set()
        for n in range(3):
            yield f"/p/{n}"

    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.add_provider("products", products)
    with uvicorn_serving(sitemaps.asgi(lambda scope, receive, send: None)) as port:
        server = Server(port, "none")
        dates = []
        for _ in range(3):  # cold, then cached
            got = server.get("/sitemap-index.xml")
            assert got.status == 200
            dates.append((parsedate_to_datetime(got.headers["Date"]), got.headers["Last-Modified"]))
            time.sleep(0.3)  # let a second pass between answers now and then
    assert slow.is_set()
    for date, last_modified in dates:
        assert parsedate_to_datetime(last_modified) <= date


@pytest.mark.server
def test_async_provider_raising_cancelled_error_under_uvicorn_is_a_503_and_the_server_lives():
    async def products() -> AsyncIterator[str]:
        raise asyncio.CancelledError()
        yield "/never"  # pragma: no cover

    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.add_provider("products", products)
    sitemaps.add_provider("pages", lambda: ["/", "/about"])
    with uvicorn_serving(sitemaps.asgi(lambda scope, receive, send: None)) as port:
        server = Server(port, "none")
        failed = server.get(PAGE)
        fine = server.get("/sitemap-pages-1.xml")
    assert failed.status == 503
    assert failed.headers["Retry-After"]
    assert fine.status == 200
    assert sitemaps.stats.snapshot()["products"]["provider_errors"] == 1
