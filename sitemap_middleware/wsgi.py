"""WSGI adapter: environ in, status, headers and body chunks out. Translation, and its helpers.

    app.wsgi_app = sitemaps.wsgi(app.wsgi_app)                     # Flask
    application = sitemaps.wsgi(get_wsgi_application())            # Django
    application = sitemaps.wsgi(app, helper_threads=4)             # cut hung sync providers

Answers come from the shared `gateway.Gateway`; a cold one is a `steps.Flow` whose steps
run on the request thread, as any WSGI view would. With ``helper_threads``, blocking
work runs on a few helper threads instead (`threads.Helpers`), so that the provider
deadline cuts a hung sync provider too, while waiting for another request's render
stays on the request thread. Requests for paths we do not own reach the app with the
same environ and the original ``start_response``: nothing is wrapped or buffered.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterable
from dataclasses import replace
from functools import lru_cache, partial
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

from werkzeug.wsgi import ClosingIterator

from .caching import store_time
from .caching.growing import Reader, SyncReader
from .concurrency.deadlines import thread_deadline
from .concurrency.steps import Call, FetchApp, Flow, Offload, Step, Wait, run_blocking
from .concurrency.threads import Helpers, HelperStream
from .config import check_count
from .gateway import Configured
from .providers import LoopRunner
from .web.app_answers import wsgi_answer
from .web.replies import Reply
from .web.rules import mount_prefix

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

__all__ = ["SitemapWSGIMiddleware", "WSGIApplication"]

_STATUS_LINES: dict[int, str] = {}


class SitemapWSGIMiddleware:
    """Serves the sitemap tree of ``sitemaps`` in front of the WSGI ``app``.

    - ``app``: the wrapped application.
    - ``sitemaps``: the `Sitemaps` configuration (usually wrapped via `Sitemaps.wsgi`).
    - ``helper_threads``: render cold documents on this many helper threads instead of
      the request thread, so that the provider deadline cuts a hung sync provider too
      (a 503, or an aborted page). Off (0) by default because your provider then runs
      outside the request thread, as under ASGI: Django gives each helper its own
      database connection, and a test's uncommitted transaction (or an in-memory SQLite
      database) is invisible there. Without it, rely on your server's worker timeout.
    """

    def __init__(self, app: WSGIApplication, *, sitemaps: Configured, helper_threads: int = 0) -> None:
        self.app = app
        self._gateway = sitemaps.gateway
        self._timeout = sitemaps.gateway.provider_timeout
        self._helpers = Helpers(check_count("helper_threads", helper_threads)) if helper_threads else None
        self._environ_keys = [
            (name, "HTTP_" + name.upper().replace("-", "_")) for name in self._gateway.request_headers
        ]

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        gateway = self._gateway
        path = environ.get("PATH_INFO") or "/"
        method = environ.get("REQUEST_METHOD", "GET")
        route = gateway.match(method, path)
        if route is None:
            return self.app(environ, start_response)
        prefix = _mount_prefix(environ.get("SCRIPT_NAME", ""))
        headers = {name: environ.get(key, "") for name, key in self._environ_keys}
        request = gateway.request(method.upper(), path, prefix, headers)
        outcome = gateway.respond(route, request)
        head = request.method == "HEAD"
        if isinstance(outcome, Reply):
            if isinstance(outcome.body, Reader):  # another request's render, in progress
                outcome = self._reading(outcome, None)
            return _respond(outcome, head, start_response)
        runner = LoopRunner(self._timeout)
        # The request's time waiting on the store (`store_time`) lives in a context of its
        # own: its steps run in it, and so do its body's chunks, which the server pulls later.
        context = contextvars.copy_context()
        try:
            reply = context.run(_answer, outcome, partial(self._perform, environ, runner))
        except BaseException:
            runner.close()
            raise
        cleanup: Callable[[], None] | None = runner.close
        if isinstance(reply.body, Reader):
            if reply.growing is not None:
                cleanup = None  # the render's own runner closes when the render ends (`_reading`)
            reply = self._reading(reply, runner)
        elif self._helpers is not None and not isinstance(reply.body, bytes):
            # A body streamed by helpers closes its runner itself, on a helper.
            reply = HelperStream.wrap(reply, self._helpers, self._timeout, runner.close)
            cleanup = None
        body = reply.body
        if not isinstance(body, bytes | Reader):  # a Reader is a `SyncReader` by now
            reply.body = store_time.InContext(context, body)
        return _respond(reply, head, start_response, cleanup)

    def _reading(self, reply: Reply, runner: LoopRunner | None) -> Reply:
        """A reply reading a growing document: this thread makes its next bytes whenever it
        needs them and no other thread is, so the fastest client paces the render."""
        assert isinstance(reply.body, Reader)
        if reply.growing is not None and runner is not None:
            # The render may outlive this request (its other readers): so does its event loop.
            reply.growing.at_end(runner.close)
        body = SyncReader(reply.body, self._step, thread_deadline(self._timeout))
        return replace(reply, body=body)

    def _step(self, step: Callable[[], bool]) -> bool:
        if self._helpers is None:
            return step()
        return self._helpers.run(step, self._timeout)

    def _perform(self, environ: WSGIEnvironment, runner: LoopRunner, step: Step) -> Any:
        if isinstance(step, Offload):
            if self._helpers is None:
                return step.func(runner)
            return self._helpers.run(partial(step.func, runner), self._timeout)
        if isinstance(step, Call):
            return step.func()  # a store call: bounded by the store's own timeouts
        if isinstance(step, Wait):
            return step.block()
        assert isinstance(step, FetchApp)
        return wsgi_answer(self.app, {**environ, "REQUEST_METHOD": "GET"})


def _answer(flow: Flow[Reply], perform: Callable[[Step], Any]) -> Reply:
    store_time.open_tab()  # in the request's own context: it ends with it
    return run_blocking(flow, perform)


@lru_cache(maxsize=64)  # the server's mount points: a handful per process
def _mount_prefix(script_name: str) -> str:
    # PEP 3333: environ strings are bytes decoded as latin-1, hence the round trip.
    return mount_prefix(script_name.encode("latin-1").decode("utf-8", "replace"))


def _respond(
    reply: Reply, head: bool, start_response: StartResponse, cleanup: Callable[[], None] | None = None
) -> Iterable[bytes]:
    """Start the response; the reply is finished (claims released) when the server closes
    the body, even one it never iterated (PEP 3333 ``close``)."""
    if cleanup is not None:
        reply.hold(cleanup)
    status = _STATUS_LINES.get(reply.status)
    if status is None:
        status = _STATUS_LINES[reply.status] = f"{reply.status} {HTTPStatus(reply.status).phrase}"
    try:
        start_response(status, reply.headers)
    except BaseException:
        reply.finish()  # what it holds (a flight, a render it leads) is never left behind
        raise
    if head:
        reply.finish()
        return []
    body = reply.body
    assert not isinstance(body, Reader)  # a `SyncReader` by now (`_reading`)
    if not isinstance(body, bytes):
        return ClosingIterator(body, reply.finish)
    if reply.holds:
        return ClosingIterator([body], reply.finish)
    return [body] if body else []
