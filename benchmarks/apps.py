"""The apps the server benchmarks start under uvicorn and gunicorn (``apps:<factory>``).

Configured by environment, since a server imports them by name:

- ``BENCH_URLS``: URLs in section ``products`` (default 200,000: four 50,000-URL pages).
- ``BENCH_CACHE``: ``on`` (the default `MemoryStore`), ``off`` (render every request), or a
  byte limit for a `MemoryStore`.
- ``BENCH_PAGE_SIZE``: URLs per page (default 50,000).
- ``BENCH_PROVIDER``: ``generator`` (default) or ``sequence`` (a lazily sliced `Catalogue`).
- ``BENCH_RENDER_THREADS``, ``BENCH_MAX_RENDERS``: those `Sitemaps` options (default 4 and 16).

The *bare* apps are the ceilings: they answer with bytes computed once at start-up, by
our own middleware, with the very headers it sends, so the only difference left in a
comparison is the work the middleware does per request.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

from common import BASE_URL, Catalogue, generate_urls

from sitemap_middleware import Sitemaps
from sitemap_middleware.caching.stores import MemoryStore

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
Environ = dict[str, Any]
StartResponse = Callable[..., Any]

ROBOTS = b"User-agent: *\nDisallow: /cart\n"
HELLO = b"hello"
PAGE = "/sitemap-products-1.xml"
INDEX = "/sitemap-index.xml"
PRECOMPUTED_PATHS = (PAGE, INDEX, "/robots.txt")


def _setting(name: str, default: str) -> str:
    return os.environ.get(name, default)


def build_sitemaps() -> Sitemaps:
    """The `Sitemaps` every 'ours' server wraps its app with, as the environment says."""
    count = int(_setting("BENCH_URLS", "200000"))
    cache_setting = _setting("BENCH_CACHE", "on")
    cache: MemoryStore | bool | None
    if cache_setting == "on":
        cache = True
    elif cache_setting == "off":
        cache = None
    else:
        cache = MemoryStore(max_bytes=int(cache_setting))
    sitemaps = Sitemaps(
        base_url=BASE_URL,
        cache=cache,
        page_size=int(_setting("BENCH_PAGE_SIZE", "50000")),
    )
    if _setting("BENCH_PROVIDER", "generator") == "sequence":
        catalogue = Catalogue(count)
        sitemaps.add_provider("products", lambda: catalogue)
    else:
        sitemaps.add_provider("products", lambda: generate_urls(count))
    return sitemaps


# -- the wrapped apps ---------------------------------------------------------------------------


def starlette_app() -> Any:
    """A trivial Starlette app: a home page, robots.txt and a small JSON endpoint."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, PlainTextResponse, Response
    from starlette.routing import Route

    async def home(request: Request) -> Response:
        return PlainTextResponse(HELLO)

    async def robots(request: Request) -> Response:
        return PlainTextResponse(ROBOTS)

    async def item(request: Request) -> Response:
        number = request.path_params["n"]
        return JSONResponse({"id": number, "name": f"item {number}", "price": number % 100})

    return Starlette(routes=[Route("/", home), Route("/robots.txt", robots), Route("/items/{n:int}", item)])


def flask_app() -> Any:
    """The same trivial app in Flask, for gunicorn."""
    from flask import Flask, Response, jsonify

    app = Flask("bench")

    @app.get("/")
    def home() -> Response:
        return Response(HELLO, mimetype="text/plain")

    @app.get("/robots.txt")
    def robots() -> Response:
        return Response(ROBOTS, mimetype="text/plain")

    @app.get("/items/<int:n>")
    def item(n: int) -> Response:
        return jsonify({"id": n, "name": f"item {n}", "price": n % 100})

    return app


def asgi_app() -> Any:
    """The Starlette app alone, no middleware: the load test's reference."""
    return starlette_app()


def asgi_ours() -> Any:
    return build_sitemaps().asgi(
        starlette_app(),
        render_threads=int(_setting("BENCH_RENDER_THREADS", "4")),
        max_renders=int(_setting("BENCH_MAX_RENDERS", "16")),
    )


def wsgi_ours() -> Any:
    app = flask_app()
    app.wsgi_app = build_sitemaps().wsgi(app.wsgi_app)  # type: ignore[method-assign]
    return app


# -- the ceilings -------------------------------------------------------------------------------

Answer = tuple[int, list[tuple[str, str]], bytes]


def _plain_robots(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(ROBOTS)))])
    return [ROBOTS]


def _call(app: Any, path: str, gzip: bool) -> Answer:
    environ: Environ = {"REQUEST_METHOD": "GET", "PATH_INFO": path, "SCRIPT_NAME": "", "QUERY_STRING": ""}
    if gzip:
        environ["HTTP_ACCEPT_ENCODING"] = "gzip"
    started: list[Any] = []
    result = app(environ, lambda status, headers, exc_info=None: started.extend([status, headers]))
    try:
        body = b"".join(result)
    finally:
        getattr(result, "close", lambda: None)()
    return int(started[0].split()[0]), list(started[1]), body


def precomputed() -> dict[tuple[str, bool], Answer]:
    """Our cached answers (status, headers, body) for each path, with and without gzip."""
    app = build_sitemaps().wsgi(_plain_robots)
    answers = {}
    for path in PRECOMPUTED_PATHS:
        for gzip in (False, True):
            _call(app, path, gzip)  # cold: fills the cache
            answers[path, gzip] = _call(app, path, gzip)  # a hit: what a warm server sends
    return answers


def _wants_gzip(value: str) -> bool:
    return "gzip" in value


def asgi_bare() -> Callable[[Scope, Receive, Send], Awaitable[None]]:
    """Precomputed bytes from a dict, and ``hello`` for anything else: the ASGI ceiling."""
    answers = {
        key: (status, [(k.lower().encode(), v.encode()) for k, v in headers], body)
        for key, (status, headers, body) in precomputed().items()
    }
    hello = (200, [(b"content-type", b"text/plain"), (b"content-length", b"5")], HELLO)

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        gzip = any(k == b"accept-encoding" and _wants_gzip(v.decode()) for k, v in scope["headers"])
        status, headers, body = answers.get((scope["path"], gzip), hello)
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return app


def wsgi_bare() -> Callable[[Environ, StartResponse], list[bytes]]:
    """The WSGI ceiling, same answers as `asgi_bare`."""
    answers = precomputed()
    hello: Answer = (200, [("Content-Type", "text/plain"), ("Content-Length", "5")], HELLO)
    reasons = {200: "200 OK", 304: "304 Not Modified"}

    def app(environ: Environ, start_response: StartResponse) -> list[bytes]:
        gzip = _wants_gzip(environ.get("HTTP_ACCEPT_ENCODING", ""))
        status, headers, body = answers.get((environ["PATH_INFO"], gzip), hello)
        start_response(reasons[status], headers)
        return [body]

    return app
