"""Shared fixtures: one `client` that runs every HTTP behaviour on both adapters."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any
from wsgiref.validate import validator

import pytest
from starlette.testclient import TestClient
from werkzeug.datastructures import Headers
from werkzeug.test import Client as WerkzeugClient

from sitemap_middleware import Sitemaps


@dataclass
class Response:
    status: int
    headers: Headers
    body: bytes


def plain_wsgi_app(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
    """The wrapped app: answers every path with its own name, robots.txt included."""
    body = f"app:{environ['REQUEST_METHOD']} {environ['PATH_INFO']}".encode()
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]


async def plain_asgi_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    assert scope["type"] == "http"
    body = f"app:{scope['method']} {scope['path']}".encode()
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"text/plain"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})


class SitemapClient:
    """Requests through one adapter; ``kind`` is ``"wsgi"`` or ``"asgi"``."""

    def __init__(self, kind: str, sitemaps: Sitemaps, wsgi_app: Any = None, asgi_app: Any = None) -> None:
        self.kind = kind
        if kind == "wsgi":
            self._wsgi = WerkzeugClient(validator(sitemaps.wsgi(wsgi_app or plain_wsgi_app)))
        else:
            self._asgi = TestClient(sitemaps.asgi(asgi_app or plain_asgi_app), base_url="http://testserver")

    def request(self, method: str, path: str, headers: dict[str, str] | None = None) -> Response:
        headers = dict(headers or {})
        if self.kind == "wsgi":
            r = self._wsgi.open(path, method=method, headers=headers)
            try:
                return Response(r.status_code, r.headers, r.get_data())
            finally:
                r.close()
        if not any(name.lower() == "accept-encoding" for name in headers):
            headers["accept-encoding"] = "identity"  # httpx would add gzip otherwise
        with self._asgi.stream(method, path, headers=headers) as a:
            raw = b"".join(a.iter_raw())  # undecoded, as the wire carried it
            return Response(a.status_code, Headers(list(a.headers.multi_items())), raw)

    def get(self, path: str, headers: dict[str, str] | None = None) -> Response:
        return self.request("GET", path, headers)

    def close(self) -> None:
        if self.kind == "asgi":
            self._asgi.close()


@pytest.fixture(params=["wsgi", "asgi"])
def make_client(request: pytest.FixtureRequest) -> Iterator[Callable[..., SitemapClient]]:
    """Build a client for a `Sitemaps` on the adapter this test instance runs on."""
    made: list[SitemapClient] = []

    def make(sitemaps: Sitemaps, **apps: Any) -> SitemapClient:
        client = SitemapClient(request.param, sitemaps, **apps)
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()
