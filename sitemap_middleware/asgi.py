"""ASGI adapter: scope in, ``http.response.*`` messages out. Translation, and its own threads.

    app = sitemaps.asgi(Starlette(routes=...), render_threads=4, max_renders=16)
    # or: Starlette(middleware=[Middleware(SitemapASGIMiddleware, sitemaps=sitemaps)])

Answers come from the shared `gateway.Gateway`; a cold one is a `steps.Flow` whose steps
this adapter performs: blocking work in worker threads (sync providers and rendering
never block the event loop; async providers are handed back to it), calls to a store
that waits on the network (Redis) in threads of their own, or awaited on the loop
through its asyncio client once the app's lifespan has started (`concurrency.loop_clients`),
waiting for another request's render on the loop. Non-``http`` scopes and paths we do
not own reach the app untouched (the lifespan's messages too, as they are).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from functools import partial
from typing import Any

import anyio
import anyio.to_thread

from .caching import store_time
from .caching.growing import Reader
from .concurrency.loop_clients import ClientsPerLoop
from .concurrency.offload import LoopCapacities, Slot, in_thread, on_loop, wait_for
from .concurrency.sending import send_body
from .concurrency.steps import Busy, Call, FetchApp, Offload, Step, Wait, run_async
from .config import check_count, check_timeout
from .gateway import Configured
from .web.app_answers import asgi_answer
from .web.replies import Reply
from .web.rules import mount_prefix, route_path

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

__all__ = ["ASGIApp", "SitemapASGIMiddleware"]


class SitemapASGIMiddleware:
    """Serves the sitemap tree of ``sitemaps`` in front of the ASGI ``app``.

    - ``app``: the wrapped application (first positional, as Starlette's
      ``Middleware(SitemapASGIMiddleware, sitemaps=...)`` passes it).
    - ``sitemaps``: the `Sitemaps` configuration.
    - ``render_threads``: worker threads that may render (or run sync providers) at once
      per event loop. Rendering holds the GIL, so more only slow the app's own requests;
      raise it for providers that mostly wait on I/O.
    - ``max_renders``: documents in the middle of rendering at once per event loop (a
      slot is held while a page renders, never while a client reads it). Each holds one
      document for all its readers: this bounds memory beyond the cache under any load
      (a page nothing stores renders only as its clients read, holding what it made while
      they do not); a request finding no slot within the provider deadline gets a 503.
    - ``send_timeout``: seconds a client may take to accept one chunk of a page before
      its response is aborted (it holds nothing else meanwhile).
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        sitemaps: Configured,
        render_threads: int = 4,
        max_renders: int = 16,
        send_timeout: float = 10.0,
    ) -> None:
        self.app = app
        self._gateway = sitemaps.gateway
        self._timeout = sitemaps.gateway.provider_timeout
        # The request headers the gateway reads, as servers send them (lowercase bytes).
        self._wanted = {name.encode("latin-1"): name for name in sitemaps.gateway.request_headers}
        self._capacities = LoopCapacities(
            check_count("render_threads", render_threads), check_count("max_renders", max_renders)
        )
        self._send_timeout = check_timeout("send_timeout", send_timeout)
        # Async providers run on this app's event loop, under the same deadline.
        self._run_async = partial(on_loop, self._timeout)
        # A store's asyncio clients, per event loop, for as long as the app's lifespan.
        self._clients = ClientsPerLoop()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            if scope["type"] == "lifespan":
                await self._clients.lifespan(self.app, scope, receive, send)
            else:
                await self.app(scope, receive, send)
            return
        gateway = self._gateway
        path = route_path(scope["path"], scope.get("root_path", ""))
        route = gateway.match(scope["method"], path)
        if route is None:
            await self.app(scope, receive, send)
            return
        wanted = self._wanted
        headers = {}
        for name, value in scope.get("headers", ()):
            text = wanted.get(name)
            if text is not None:
                headers[text] = value.decode("latin-1")
        request = gateway.request(
            scope["method"].upper(), path, mount_prefix(scope.get("root_path", "")), headers
        )
        outcome = gateway.respond(route, request)
        head = request.method == "HEAD"
        if isinstance(outcome, Reply):
            try:
                await self._send(outcome, send, receive, head)
            finally:
                outcome.finish()
            return
        slot = Slot(self._capacities)
        reply: Reply | None = None
        # The request's time waiting on the store, for every step and chunk (their threads inherit it).
        tab = store_time.open_tab()
        try:
            reply = await run_async(outcome, partial(self._perform, scope, receive, slot))
            if reply.growing is None and isinstance(reply.body, bytes | Reader):
                slot.release()  # nothing left to render here: bytes, or another request's render
            await self._send(reply, send, receive, head, slot)
        finally:
            try:
                slot.release()
                if reply is not None and not isinstance(reply.body, bytes):
                    # Closing the stream closes the provider's iterator (cursors, connections):
                    # off the loop, and even when this task is being cancelled.
                    with anyio.CancelScope(shield=True):
                        await anyio.to_thread.run_sync(reply.finish)
                elif reply is not None:
                    reply.finish()
            finally:
                store_time.close_tab(tab)

    async def _perform(self, scope: Scope, receive: Receive, slot: Slot, step: Step) -> Any:
        if isinstance(step, Offload):
            if step.render and not await slot.acquire(self._timeout):
                raise Busy
            threads = self._capacities.current().threads
            return await in_thread(partial(step.func, self._run_async), threads, self._timeout)
        if isinstance(step, Call):
            clients = self._clients.current()
            if step.on_loop is not None and clients is not None:
                return await step.on_loop(clients)
            return await anyio.to_thread.run_sync(step.func, limiter=self._capacities.current().calls)
        if isinstance(step, Wait):
            return await wait_for(step)
        assert isinstance(step, FetchApp)
        return await asgi_answer(self.app, {**scope, "method": "GET"}, receive)

    async def _send(
        self, reply: Reply, send: Send, receive: Receive, head: bool, slot: Slot | None = None
    ) -> None:
        headers = reply.raw_headers
        if headers is None:
            headers = [
                (name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in reply.headers
            ]
        await send({"type": "http.response.start", "status": reply.status, "headers": headers})
        if head or isinstance(reply.body, bytes):
            await send({"type": "http.response.body", "body": b"" if head else reply.body})
        else:
            threads = self._capacities.current().threads
            await send_body(reply, send, receive, threads, self._timeout, self._send_timeout, slot)
