"""Network clients that live on one event loop, closed when the app on that loop shuts down.

An asyncio client (``redis.asyncio``) belongs to the event loop it was made on and must be
closed on it, or its sockets outlive the loop (``ResourceWarning: unclosed …``). asyncio says
nothing when a loop ends; the ASGI lifespan protocol does: the ASGI adapter runs the app's
lifespan through `ClientsPerLoop.lifespan`, and a loop has `LoopClients` only between the
app's completed startup and its shutdown::

    per_loop = ClientsPerLoop()                          # one per middleware
    await per_loop.lifespan(app, scope, receive, send)   # a lifespan scope, passed through
    clients = per_loop.current()       # in a request; None without a lifespan (or asyncio)
    client = clients.get(owner, make)  # made on first use, one per owner on this loop,
                                       # closed after the app's shutdown, before the server
                                       # hears it is complete

A server that runs no lifespan (or an app that refuses it) gets no clients at all, so
nothing can leak: the store is then called in worker threads, as a blocking one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, Protocol, TypeVar, cast

import anyio
from anyio.lowlevel import RunVar

from ..stats import logger

__all__ = ["ClientsPerLoop", "LoopClients"]

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[MutableMapping[str, Any], Receive, Send], Awaitable[None]]

# The app's shutdown is over, either way: nothing of it needs a client any more.
_SHUT_DOWN = frozenset({"lifespan.shutdown.complete", "lifespan.shutdown.failed"})


class Closeable(Protocol):
    async def aclose(self) -> None: ...


C = TypeVar("C", bound=Closeable)


class LoopClients:
    """The clients made on one event loop, one per owner (a store's link to Redis)."""

    def __init__(self) -> None:
        self._clients: dict[object, Closeable] = {}

    def get(self, owner: object, make: Callable[[], C]) -> C:
        client = self._clients.get(owner)
        if client is None:
            made = self._clients[owner] = make()
            return made
        return cast(C, client)

    async def aclose(self) -> None:
        """Close them all; one that fails to close is logged and never fails the shutdown."""
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            try:
                await client.aclose()
            except Exception as error:
                logger.warning("sitemap: closing %r at shutdown failed: %s", client, error)


class ClientsPerLoop:
    """Each event loop's `LoopClients`, while the app's lifespan on that loop says it is up."""

    def __init__(self) -> None:
        self._current: RunVar[LoopClients | None] = RunVar(f"sitemap_clients_{id(self)}", default=None)

    def current(self) -> LoopClients | None:
        return self._current.get()

    async def lifespan(self, app: App, scope: MutableMapping[str, Any], receive: Receive, send: Send) -> None:
        """Run ``app``'s lifespan, every message passed on as it is, with clients on this
        loop from its completed startup until its shutdown: they are closed once the app's
        own shutdown is over and before the server hears so (it may end the loop then)."""

        async def sending(message: Message) -> None:
            kind = message["type"]
            if kind == "lifespan.startup.complete" and _on_asyncio():
                self._current.set(LoopClients())
            elif kind in _SHUT_DOWN:
                await self._close()
            await send(message)

        try:
            await app(scope, receive, sending)
        finally:
            await self._close()  # a lifespan that ended without a word of its shutdown

    async def _close(self) -> None:
        clients = self._current.get()
        if clients is not None:
            self._current.set(None)  # from now on, requests call the store in threads
            with anyio.CancelScope(shield=True):
                await clients.aclose()


def _on_asyncio() -> bool:
    """Whether this loop is asyncio's (the asyncio clients need it; trio gets threads)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True
