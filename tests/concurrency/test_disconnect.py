"""A client that goes away mid-page: the provider is closed and nothing half-done is cached."""

from __future__ import annotations

import asyncio
from typing import Any

from ..conftest import Catalogue, build, http_scope, plain_asgi_app, plain_wsgi_app

PAGE = "/sitemap-products-1.xml"
IDENTITY = ((b"accept-encoding", b"identity"),)
ROWS = 20_000


def one_request_then(after: Any) -> Any:
    """An ASGI ``receive``: the request once, then whatever ``after()`` awaits."""
    requested = False

    async def receive() -> dict[str, Any]:
        nonlocal requested
        if not requested:
            requested = True
            return {"type": "http.request", "body": b"", "more_body": False}
        return await after()

    return receive


async def fetch_then_disconnect(app: Any, path: str) -> list[dict[str, Any]]:
    """Receive the headers and first body chunk, then disconnect (as a crawler timing out)."""
    sent: list[dict[str, Any]] = []
    first_body = asyncio.Event()

    async def disconnect_after_first_body() -> dict[str, Any]:
        await first_body.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)
        if message["type"] == "http.response.body":
            first_body.set()

    await asyncio.wait_for(
        app(http_scope(path, headers=IDENTITY), one_request_then(disconnect_after_first_body), send),
        timeout=30,
    )
    return sent


async def fetch_whole(app: Any, path: str) -> tuple[list[tuple[bytes, bytes]], bytes]:
    messages: list[dict[str, Any]] = []

    async def stay_connected() -> dict[str, Any]:
        await asyncio.Event().wait()  # a connected client: nothing more until it leaves
        raise AssertionError("unreachable")

    async def send(message: dict[str, Any]) -> None:
        messages.append(message)

    await app(http_scope(path, headers=IDENTITY), one_request_then(stay_connected), send)
    headers = messages[0]["headers"]
    return headers, b"".join(m.get("body", b"") for m in messages[1:])


def test_asgi_disconnect_closes_the_provider_and_caches_nothing():
    sitemaps, catalogue = build(Catalogue(ROWS))
    app = sitemaps.asgi(plain_asgi_app)
    sent = asyncio.run(fetch_then_disconnect(app, PAGE))
    assert sent[0]["status"] == 200
    assert catalogue.closed
    assert catalogue.yielded < ROWS
    bodies = sent[1:]
    assert all(m.get("more_body") for m in bodies)  # the response was never completed
    assert not b"".join(m["body"] for m in bodies).endswith(b"</urlset>\n")
    headers, body = asyncio.run(fetch_whole(app, PAGE))
    assert b"etag" not in dict(headers)  # rendered again, not served from a cached fragment
    assert body.endswith(b"</urlset>\n")
    assert catalogue.calls == 2


def test_wsgi_close_mid_page_closes_the_provider_and_caches_nothing():
    sitemaps, catalogue = build(Catalogue(ROWS))
    app = sitemaps.wsgi(plain_wsgi_app)
    environ = {
        "REQUEST_METHOD": "GET",
        "PATH_INFO": PAGE,
        "SCRIPT_NAME": "",
        "SERVER_NAME": "shop.example",
        "SERVER_PORT": "443",
        "wsgi.url_scheme": "https",
    }
    body = app(environ, lambda status, headers, exc_info=None: None)
    next(iter(body))
    body.close()  # what a WSGI server does when the client disconnects
    assert catalogue.closed
    assert catalogue.yielded < ROWS
    captured: list[Any] = []
    whole = b"".join(app(environ, lambda status, headers, exc_info=None: captured.append(headers)))
    assert "ETag" not in dict(captured[0])
    assert whole.endswith(b"</urlset>\n")
    assert catalogue.calls == 2


def test_head_on_a_cold_huge_page_renders_only_what_existence_needs(make_client):
    sitemaps, catalogue = build(Catalogue(50_000))
    response = make_client(sitemaps).request("HEAD", PAGE)
    assert response.status == 200
    assert response.body == b""
    assert catalogue.yielded <= 2  # the first URL proves the page exists; nothing more is rendered
    assert catalogue.closed
