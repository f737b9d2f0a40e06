"""WSGI adapter: environ in, status, headers and body chunks out. Translation only.

    app.wsgi_app = sitemaps.wsgi(app.wsgi_app)             # Flask
    application = sitemaps.wsgi(get_wsgi_application())    # Django

Requests for paths we do not own reach the app with the same environ and the
original ``start_response``: nothing is wrapped or buffered.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

from werkzeug.wsgi import ClosingIterator

from ._http import TEXT_TYPE, mount_prefix
from .providers import LoopRunner
from .replies import REQUEST_HEADERS, Reply, Request, unknown_host
from .service import Service

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

    from .sitemaps import Sitemaps

__all__ = ["SitemapWSGIMiddleware", "WSGIApplication"]

_HEADERS_WE_READ = {name: "HTTP_" + name.upper().replace("-", "_") for name in REQUEST_HEADERS}


class SitemapWSGIMiddleware:
    """Serves the sitemap tree of ``sitemaps`` in front of the WSGI ``app``.

    - ``app``: the wrapped application.
    - ``sitemaps``: the `Sitemaps` configuration (usually built via `Sitemaps.wsgi`).
    """

    def __init__(self, app: WSGIApplication, *, sitemaps: Sitemaps) -> None:
        self.app = app
        self.sitemaps = sitemaps
        self._service = sitemaps.service
        self._replays = sitemaps.replays

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO") or "/"
        replays = self._replays
        if replays is not None and path in replays:
            replayed = replays.find(path, _signature(environ))
            if replayed is not None:
                start_response("304 Not Modified", replayed.headers)
                return []
        # PEP 3333: environ strings are bytes decoded as latin-1, hence the round trip below.
        route = self._service.match(path)
        if route is None:
            return self.app(environ, start_response)
        request = Request(
            method=environ.get("REQUEST_METHOD", "GET").upper(),
            path=path,
            prefix=mount_prefix(environ.get("SCRIPT_NAME", "").encode("latin-1").decode("utf-8", "replace")),
            headers={name: environ.get(key, "") for name, key in _HEADERS_WE_READ.items()},
        )
        service = self.sitemaps.service_for(request.headers)
        if service is None:
            return _respond(unknown_host(), request, start_response, _nothing)
        if route.kind == "robots":
            return self._robots(environ, start_response, request, service)
        runner = LoopRunner(self.sitemaps.provider_timeout)
        ticket = 0 if replays is None else replays.ticket()
        try:
            reply = service.reply(route, request, runner)
            assert isinstance(reply, Reply)  # a WSGI thread may wait for another render
        except BaseException:
            runner.close()
            raise
        if replays is not None and reply.origin is not None:
            replays.remember(path, _signature(environ), reply, ticket)
        return _respond(reply, request, start_response, runner.close)

    def _robots(
        self, environ: WSGIEnvironment, start_response: StartResponse, request: Request, service: Service
    ) -> Iterable[bytes]:
        if request.method not in ("GET", "HEAD"):
            return self.app(environ, start_response)
        merged = service.cached_robots(request)
        if merged is None:
            status, headers, body = _call_app(self.app, {**environ, "REQUEST_METHOD": "GET"})
            merged = service.robots(request, int(status.split(" ", 1)[0]), headers, body)
            if merged is None:
                start_response(status, headers)
                return [] if request.method == "HEAD" else [body]
        start_response("200 OK", [("Content-Type", TEXT_TYPE), ("Content-Length", str(len(merged)))])
        return [] if request.method == "HEAD" else [merged]


def _signature(environ: WSGIEnvironment) -> tuple[Any, ...]:
    """Everything of the request a reply depends on, as received (the path is keyed apart)."""
    return (
        environ.get("REQUEST_METHOD"),
        environ.get("SCRIPT_NAME"),
        *[environ.get(key) for key in _HEADERS_WE_READ.values()],
    )


def _respond(
    reply: Reply, request: Request, start_response: StartResponse, cleanup: Callable[[], None]
) -> Iterable[bytes]:
    start_response(f"{reply.status} {HTTPStatus(reply.status).phrase}", reply.headers)
    if request.method == "HEAD":
        reply.close()
        cleanup()
        return []
    body = [reply.body] if isinstance(reply.body, bytes) else reply.body
    return ClosingIterator(body, [reply.close, cleanup])


def _call_app(app: WSGIApplication, environ: WSGIEnvironment) -> tuple[str, list[tuple[str, str]], bytes]:
    """Run ``app`` to completion and collect its response (robots.txt is small)."""
    captured: list[Any] = []
    written: list[bytes] = []

    def capture(
        status: str, headers: list[tuple[str, str]], exc_info: Any = None
    ) -> Callable[[bytes], object]:
        captured[:] = [status, headers]
        return written.append

    result = app(environ, capture)
    try:
        written.extend(result)
    finally:
        close = getattr(result, "close", None)
        if close is not None:
            close()
    return captured[0], captured[1], b"".join(written)


def _nothing() -> None:
    return None
