"""The apps the server benchmarks start under uvicorn and gunicorn (``apps:<factory>``).

Configured by environment, since a server imports them by name:

- ``BENCH_URLS``: URLs in section ``products`` (default 200,000: four 50,000-URL pages).
- ``BENCH_CACHE``: ``on`` (the default `MemoryStore`), ``off`` (render every request), or a
  byte limit for a `MemoryStore`.
- ``BENCH_PAGE_SIZE``: URLs per page (default 50,000).
- ``BENCH_PROVIDER``: ``generator`` (default) or ``sequence`` (a lazily sliced `Catalogue`).
- ``BENCH_RENDER_THREADS``, ``BENCH_MAX_RENDERS``, ``BENCH_SEND_TIMEOUT``: those options of
  ``sitemaps.asgi`` (default 4, 16 and 30 s).
- ``BENCH_PROVIDER_TIMEOUT``: `Sitemaps` ``provider_timeout`` in seconds (default: the package's).
- ``BENCH_STALL_PAGES``: add section ``stalls`` of that many pages of `STALL_PAGE_SIZE` URLs
  (default 0: no such section), whose provider blocks for ``BENCH_STALL_SECONDS`` (default 4)
  the first time each page but the last is asked, then answers at once: a database that hangs once.
- ``BENCH_LARGE_PAGES``: add section ``large`` of that many pages of 50,000 URLs, a counted
  `Catalogue` (default 0: no such section). An identity page is ~9 MB: more than the kernel's
  socket buffers hold, so a client that stops reading one blocks the server.
- ``BENCH_COMPRESSOR``: `Sitemaps`' ``compressor`` (default ``auto``).

The *bare* apps are the ceilings: they answer with bytes computed once at start-up, by
our own middleware, with the very headers it sends, so the only difference left in a
comparison is the work the middleware does per request.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, MutableMapping
from typing import Any

from common import BASE_URL, Catalogue, generate_urls

from sitemap_middleware import MemoryStore, Sitemaps, Url

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
STALL_PAGE_SIZE = 1_000
LARGE_PAGE_SIZE = 50_000
STATS_PATH = "/bench/stats"


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
    options: dict[str, Any] = {}
    if "BENCH_PROVIDER_TIMEOUT" in os.environ:  # unset: the package's default
        options["provider_timeout"] = float(os.environ["BENCH_PROVIDER_TIMEOUT"])
    sitemaps = Sitemaps(
        base_url=BASE_URL,
        cache=cache,
        page_size=int(_setting("BENCH_PAGE_SIZE", "50000")),
        compressor=_setting("BENCH_COMPRESSOR", "auto"),  # type: ignore[arg-type]
        **options,
    )
    if _setting("BENCH_PROVIDER", "generator") == "sequence":
        catalogue = Catalogue(count)
        sitemaps.add_provider("products", lambda: catalogue)
    else:
        sitemaps.add_provider("products", lambda: generate_urls(count))
    stall_pages = int(_setting("BENCH_STALL_PAGES", "0"))
    if stall_pages:
        total = stall_pages * STALL_PAGE_SIZE
        stalls = StallsOnce(float(_setting("BENCH_STALL_SECONDS", "4")), total)
        sitemaps.add_provider("stalls", stalls, page_size=STALL_PAGE_SIZE, count=lambda: total)
    large_pages = int(_setting("BENCH_LARGE_PAGES", "0"))
    if large_pages:
        large = Catalogue(large_pages * LARGE_PAGE_SIZE)
        sitemaps.add_provider("large", lambda: large, page_size=LARGE_PAGE_SIZE, count=large.__len__)
    return sitemaps


class StallsOnce:
    """A windowed provider that blocks before its first URL the first time each page is asked.

    Never on a window that reaches the end of the data: that is also what the index's
    check of the declared count reads (the last window, and one row past the count), and
    the stall is a page render's, not the index's. The last page never stalls.
    """

    def __init__(self, seconds: float, total: int) -> None:
        self.seconds = seconds
        self.total = total
        self._asked: set[int] = set()
        self._lock = threading.Lock()

    def __call__(self, offset: int, limit: int | None) -> Iterator[Url]:
        assert limit is not None  # a counted section is always asked for one window
        with self._lock:
            first = offset not in self._asked and offset + limit < self.total
            self._asked.add(offset)
        if first:
            time.sleep(self.seconds)  # sync, in a worker thread: the deadline abandons it
        return generate_urls(min(offset + limit, self.total), start=offset)


# -- the wrapped apps ---------------------------------------------------------------------------


def starlette_app(stats: Callable[[], object] | None = None) -> Any:
    """A trivial Starlette app: a home page, robots.txt and a small JSON endpoint.

    With ``stats``, `STATS_PATH` answers its result as JSON (the load test reads our counters).
    """
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

    async def counters(request: Request) -> Response:
        assert stats is not None
        return JSONResponse(stats())

    routes = [Route("/", home), Route("/robots.txt", robots), Route("/items/{n:int}", item)]
    if stats is not None:
        routes.append(Route(STATS_PATH, counters))
    return Starlette(routes=routes)


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
    sitemaps = build_sitemaps()
    return sitemaps.asgi(
        starlette_app(sitemaps.stats.snapshot),
        render_threads=int(_setting("BENCH_RENDER_THREADS", "4")),
        max_renders=int(_setting("BENCH_MAX_RENDERS", "16")),
        send_timeout=float(_setting("BENCH_SEND_TIMEOUT", "30")),
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
