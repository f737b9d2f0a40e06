"""ASGI adapter: scope in, ``http.response.*`` messages out. Translation only.

    app = sitemaps.asgi(Starlette(routes=...))
    # or: Starlette(middleware=[Middleware(SitemapASGIMiddleware, sitemaps=sitemaps)])

The engine is synchronous, so it runs in a worker thread: sync providers and
rendering never block the event loop, and async providers are handed back to the
loop (`anyio.from_thread.run`), where their connections live. Non-``http`` scopes
(lifespan, websocket) and paths we do not own reach the app untouched.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel
import anyio.to_thread
from anyio.lowlevel import RunVar

from ._http import TEXT_TYPE, Route, mount_prefix
from .errors import ProviderError
from .offload import Capacity, Slot, in_thread, on_loop, raise_unwrapped, wait_for
from .providers import AsyncRunner
from .replies import REQUEST_HEADERS, Reply, Request, unknown_host
from .service import Service

if TYPE_CHECKING:
    from .sitemaps import Sitemaps

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

__all__ = ["ASGIApp", "SitemapASGIMiddleware"]

_HEADERS_WE_READ = {name.encode() for name in REQUEST_HEADERS}


class SitemapASGIMiddleware:
    """Serves the sitemap tree of ``sitemaps`` in front of the ASGI ``app``.

    - ``app``: the wrapped application (first positional, as Starlette's
      ``Middleware(SitemapASGIMiddleware, sitemaps=...)`` passes it).
    - ``sitemaps``: the `Sitemaps` configuration.
    """

    def __init__(self, app: ASGIApp, *, sitemaps: Sitemaps) -> None:
        self.app = app
        self.sitemaps = sitemaps
        self._service = sitemaps.service
        self._replays = sitemaps.replays
        self._timeout: float | None = sitemaps.provider_timeout
        # Async providers run on this app's event loop, under the same deadline.
        self._run_async: AsyncRunner = partial(on_loop, self._timeout)
        # Rendering is CPU-bound Python: every thread doing it competes with the event
        # loop for the GIL, so a few threads serve cold pages and the app stays responsive.
        # And each document being rendered holds ~1 MB (a batch of entries, the compressor,
        # the copy for the cache) until its client has read it: their number is capped too.
        self._render_threads = sitemaps.render_threads
        self._max_renders = sitemaps.max_renders
        self._capacities: RunVar[Capacity] = RunVar(f"sitemap_capacity_{id(self)}")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        replays = self._replays
        if replays is not None and scope["path"] in replays:
            replayed = replays.find(scope["path"], _signature(scope))
            if replayed is not None:
                await _send_replay(replayed, send)
                return
        path = _route_path(scope)
        route = self._service.match(path)
        if route is None:
            await self.app(scope, receive, send)
            return
        request = Request(
            method=scope["method"].upper(),
            path=path,
            prefix=mount_prefix(scope.get("root_path", "")),
            headers={
                name.decode("latin-1"): value.decode("latin-1")
                for name, value in scope.get("headers", ())
                if name in _HEADERS_WE_READ
            },
        )
        service = self.sitemaps.service_for(request.headers)
        if service is None:
            await _send_reply(unknown_host(), send, receive, head=request.method == "HEAD")
            return
        if route.kind == "robots":
            await self._robots(scope, receive, send, request, service)
            return
        ticket = 0 if replays is None else replays.ticket()
        capacity = self._capacity()
        slot = Slot(capacity.renders)
        try:
            reply = await self._answer(service, route, request, slot)
            if replays is not None and reply.origin is not None:
                replays.remember(scope["path"], _signature(scope), reply, ticket)
            await _send_reply(
                reply,
                send,
                receive,
                head=request.method == "HEAD",
                timeout=self._timeout,
                limiter=capacity.threads,
            )
        finally:
            slot.release()

    def _capacity(self) -> Capacity:
        """This event loop's limits (anyio's primitives must not cross event loops)."""
        try:
            return self._capacities.get()
        except LookupError:
            capacity = Capacity(
                anyio.CapacityLimiter(self._render_threads), anyio.Semaphore(self._max_renders)
            )
            self._capacities.set(capacity)
            return capacity

    async def _answer(self, service: Service, route: Route, request: Request, slot: Slot) -> Reply:
        """From the cache on the loop if possible; else a render in a worker thread.

        A request that finds the same document being rendered waits here, on the loop,
        never in a worker thread: hundreds of such followers would otherwise take every
        thread of the pool the leader needs to stream its page (a deadlock until timeout).
        """
        reply: Reply | threading.Event | None = service.fast_reply(route, request)
        for _ in range(2):
            if isinstance(reply, Reply):
                return reply
            if isinstance(reply, threading.Event):
                await wait_for(reply)
                reply = service.fast_reply(route, request)
                if isinstance(reply, Reply):
                    return reply
            reply = await self._render(service, route, request, slot, wait=False)
        if isinstance(reply, Reply):
            return reply
        # Two leaders in a row failed or stalled: render this request on its own.
        rendered = await self._render(service, route, request, slot, wait=False, alone=True)
        assert isinstance(rendered, Reply)
        return rendered

    async def _render(
        self,
        service: Service,
        route: Route,
        request: Request,
        slot: Slot,
        *,
        wait: bool,
        alone: bool = False,
    ) -> Reply | threading.Event:
        """`Service.reply` in a worker thread, abandoned (503) if it outlives the deadline.

        It takes a render slot first (503 if none frees up within the deadline) and keeps
        it while the page streams; an answer that is not a stream gives it back at once.
        """
        if not await slot.acquire(self._timeout):
            return service.busy(route, request)
        call = partial(service.reply, route, request, self._run_async, wait=wait, alone=alone)
        try:
            result = await in_thread(call, self._capacity().threads, self._timeout)
        except TimeoutError:
            slot.release()
            return service.timed_out(route, request, self._timeout)
        except BaseException:
            slot.release()
            raise
        if not isinstance(result, Reply) or isinstance(result.body, bytes):
            slot.release()
        return result

    async def _robots(
        self, scope: Scope, receive: Receive, send: Send, request: Request, service: Service
    ) -> None:
        if request.method not in ("GET", "HEAD"):
            await self.app(scope, receive, send)
            return
        merged = service.cached_robots(request)
        if merged is None:
            status, headers, body = await _call_app(self.app, {**scope, "method": "GET"}, receive)
            text_headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in headers]
            merged = service.robots(request, status, text_headers, body)
            if merged is None:
                await send({"type": "http.response.start", "status": status, "headers": headers})
                await send({"type": "http.response.body", "body": b"" if request.method == "HEAD" else body})
                return
        headers = [(b"content-type", TEXT_TYPE.encode()), (b"content-length", str(len(merged)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b"" if request.method == "HEAD" else merged})


async def _call_app(app: ASGIApp, scope: Scope, receive: Receive) -> tuple[int, list[Any], bytes]:
    """Run ``app`` to completion and collect its response (robots.txt is small)."""
    messages: list[Message] = []

    async def capture(message: Message) -> None:
        messages.append(message)

    await app(scope, receive, capture)
    start = next((m for m in messages if m["type"] == "http.response.start"), None)
    if start is None:
        raise RuntimeError("the app returned without starting a response for /robots.txt")
    body = b"".join(m.get("body", b"") for m in messages if m["type"] == "http.response.body")
    return start["status"], list(start.get("headers", ())), body


def _signature(scope: Scope) -> tuple[Any, ...]:
    """Everything of the request a reply depends on, as received (the path is keyed apart)."""
    headers = [pair for pair in scope.get("headers", ()) if pair[0] in _HEADERS_WE_READ]
    return (scope["method"], scope.get("root_path", ""), *headers)


async def _send_replay(reply: Reply, send: Send) -> None:
    """A remembered answer: its headers were encoded once, its body is bytes (or empty)."""
    await send({"type": "http.response.start", "status": reply.status, "headers": reply.raw_headers})
    await send({"type": "http.response.body", "body": reply.body})


def _route_path(scope: Scope) -> str:
    """The path below the mount point; servers differ on whether ``path`` includes it."""
    path: str = scope["path"]
    root: str = scope.get("root_path", "").rstrip("/")
    if root and (path == root or path.startswith(root + "/")):
        return path[len(root) :] or "/"
    return path


async def _send_reply(
    reply: Reply,
    send: Send,
    receive: Receive,
    *,
    head: bool,
    timeout: float | None = None,
    limiter: anyio.CapacityLimiter | None = None,
) -> None:
    headers = reply.raw_headers
    if headers is None:
        headers = [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in reply.headers]
    body = reply.body
    try:
        await send({"type": "http.response.start", "status": reply.status, "headers": headers})
        if head:
            await send({"type": "http.response.body", "body": b""})
        elif isinstance(body, bytes):
            await send({"type": "http.response.body", "body": body})
        else:
            await _stream(body, send, receive, timeout, limiter)
    finally:
        if not isinstance(body, bytes):
            # Closing the stream closes the provider's iterator (cursors, connections),
            # even when this task is being cancelled.
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(reply.release)


async def _stream(
    chunks: Iterator[bytes],
    send: Send,
    receive: Receive,
    timeout: float | None,
    limiter: anyio.CapacityLimiter | None,
) -> None:
    """Send ``chunks`` as they are produced; stop as soon as the client goes away.

    Servers may drop messages sent after a disconnect without an error (uvicorn
    does), so we watch ``receive`` for ``http.disconnect``: otherwise a page would be
    rendered to nobody, and then cached as if it had been delivered.
    """
    done = object()
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(_cancel_on_disconnect, receive, group.cancel_scope)
            while (chunk := await _next_chunk(chunks, done, timeout, limiter)) is not done:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
            group.cancel_scope.cancel()
    except BaseExceptionGroup as errors:
        raise_unwrapped(errors)


async def _next_chunk(
    chunks: Iterator[bytes], done: object, timeout: float | None, limiter: anyio.CapacityLimiter | None
) -> Any:
    """The next chunk, from a worker thread; a provider stalled past the deadline aborts the page."""
    try:
        return await in_thread(partial(next, chunks, done), limiter, timeout)
    except TimeoutError:
        raise ProviderError.stalled(timeout) from None


async def _cancel_on_disconnect(receive: Receive, scope: anyio.CancelScope) -> None:
    while (await receive())["type"] != "http.disconnect":
        await anyio.lowlevel.checkpoint()  # never spin on a server that answers at once
    scope.cancel()
