"""WSGI adapter: environ in, status, headers and body chunks out. Translation only.

    app.wsgi_app = sitemaps.wsgi(app.wsgi_app)             # Flask
    application = sitemaps.wsgi(get_wsgi_application())    # Django

Requests for paths we do not own reach the app with the same environ and the
original ``start_response``: nothing is wrapped or buffered.

By default a cold document is rendered on the request thread, as any WSGI view would
be. With ``Sitemaps(wsgi_helper_threads=True)`` it is rendered by a few helper threads
(`threads.Helpers`), so that ``provider_timeout`` cuts a hung sync provider too: the
request thread waits for each step within the deadline, and for other requests'
renders on its own, so waiting never takes a helper the renderer needs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

from werkzeug.wsgi import ClosingIterator

from ._http import TEXT_TYPE, Route, mount_prefix
from .cache import FOLLOW_TIMEOUT
from .errors import ProviderError
from .providers import LoopRunner
from .replies import REQUEST_HEADERS, Reply, Request, unknown_host
from .service import Service
from .threads import Helpers

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

    from .sitemaps import Sitemaps

__all__ = ["SitemapWSGIMiddleware", "WSGIApplication"]

_STATUS_LINES = {status: f"{status} {HTTPStatus(status).phrase}" for status in (200, 304)}
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
        self._timeout = sitemaps.provider_timeout
        self._helpers = Helpers(sitemaps.render_threads) if sitemaps.wsgi_helper_threads else None

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO") or "/"
        replays = self._replays
        if replays is not None and path in replays:
            replayed = replays.find(path, _signature(environ))
            if replayed is not None:
                start_response(_STATUS_LINES[replayed.status], replayed.headers)
                return [replayed.body] if replayed.body else []  # type: ignore[list-item]
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
        runner = LoopRunner(self._timeout)
        ticket = 0 if replays is None else replays.ticket()
        try:
            if self._helpers is None:
                reply = service.reply(route, request, runner)
                assert isinstance(reply, Reply)  # a WSGI thread may wait for another render
            else:
                reply = self._answer(self._helpers, service, route, request, runner)
        except BaseException:
            runner.close()
            raise
        if replays is not None and reply.origin is not None:
            replays.remember(path, _signature(environ), reply, ticket)
        # A body streamed by helpers closes its runner itself, on a helper.
        cleanup = _nothing if isinstance(reply.body, _Deadlined) else runner.close
        return _respond(reply, request, start_response, cleanup)

    def _answer(
        self, helpers: Helpers, service: Service, route: Route, request: Request, runner: LoopRunner
    ) -> Reply:
        """From the cache on this thread if possible; else a render by a helper thread,
        whose body the helpers then stream, chunk by chunk, within the deadline.

        Waiting for another request's render of the same document happens here, on the
        request thread, never on a helper: the render in flight needs the helpers.
        """
        reply = service.fast_reply(route, request)
        for alone in (False, False, True):
            if isinstance(reply, threading.Event):
                reply.wait(FOLLOW_TIMEOUT)
                reply = service.fast_reply(route, request)
            if isinstance(reply, Reply):
                return reply
            # The third try, after two leaders failed or stalled, renders on its own.
            call = partial(service.reply, route, request, runner, wait=False, alone=alone)
            try:
                reply = helpers.run(call, self._timeout)
            except TimeoutError:
                return service.timed_out(route, request, self._timeout)
            if isinstance(reply, Reply):
                return self._streamed_by_helpers(reply, helpers, runner)
        raise AssertionError("a render with alone=True always answers")  # pragma: no cover

    def _streamed_by_helpers(self, reply: Reply, helpers: Helpers, runner: LoopRunner) -> Reply:
        if isinstance(reply.body, bytes):
            return reply
        return Reply(reply.status, reply.headers, _Deadlined(reply, helpers, self._timeout, runner))

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


_DONE = object()


class _Deadlined:
    """A page body rendered by helpers, each chunk within the deadline or the page aborted.

    Closing happens on a helper too: the provider's ``finally`` (a cursor's close) runs
    where its other code ran, as under ASGI. After a stall the render is abandoned.
    """

    def __init__(self, reply: Reply, helpers: Helpers, timeout: float | None, runner: LoopRunner) -> None:
        assert not isinstance(reply.body, bytes)
        self._reply = reply
        self._chunks: Iterator[bytes] = reply.body
        self._helpers = helpers
        self._timeout = timeout
        self._runner = runner
        self._stalled = False

    def __iter__(self) -> _Deadlined:
        return self

    def __next__(self) -> bytes:
        try:
            chunk = self._helpers.run(partial(next, self._chunks, _DONE), self._timeout)
        except TimeoutError:
            self._stalled = True
            raise ProviderError.stalled(self._timeout) from None
        if chunk is _DONE:
            raise StopIteration
        assert isinstance(chunk, bytes)
        return chunk

    def close(self) -> None:
        if self._stalled:
            # The helper is still inside the provider: give up what the render holds
            # (its single-flight) now. The generator is closed once that call returns
            # and its last reference goes (CPython closes a suspended generator then).
            if self._reply.abandon is not None:
                self._reply.abandon()
            return
        try:
            self._helpers.run(self._reply.release, self._timeout)
        except TimeoutError:
            return  # a provider's cleanup that hangs: leave it to its helper
        self._runner.close()


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
