"""An ASGI app's answer as Django's async streaming content (`middleware`, an async stack).

The app runs as a task of its own; its messages pass one at a time through a queue of one,
so the client paces it, as a server's ``send`` would.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, MutableMapping
from typing import Any

from ..asgi import Message, Receive, Send

__all__ = ["AsgiAnswer"]

_END = object()


class AsgiAnswer:
    """The ASGI adapter's answer, run as a task of its own, as Django's async streaming
    content: its messages pass one at a time (the client paces the adapter), and however
    the response ends (read, the client gone, Django closing it unread), the adapter
    hears ``http.disconnect`` and is cancelled, so what it holds is released."""

    def __init__(self) -> None:
        self.messages: asyncio.Queue[Any] = asyncio.Queue(maxsize=1)
        self._gone = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        self._task: asyncio.Future[None] | None = None

    def start(
        self, app: Callable[[Any, Receive, Send], Any], scope: MutableMapping[str, Any]
    ) -> asyncio.Task[None]:
        self._task = asyncio.ensure_future(self._answer(app, scope))
        return self._task

    async def _answer(
        self, app: Callable[[Any, Receive, Send], Any], scope: MutableMapping[str, Any]
    ) -> None:
        try:
            await app(scope, self._receive, self.messages.put)
        except Exception as error:  # to the response's reader: an aborted page
            await self.messages.put(error)
        else:
            await self.messages.put(_END)

    async def _receive(self) -> Message:
        await self._gone.wait()
        return {"type": "http.disconnect"}

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            while (message := await self.messages.get()) is not _END:
                if isinstance(message, BaseException):
                    raise message
                if message.get("body"):
                    yield message["body"]
        finally:
            self._end()

    def close(self) -> None:
        """Django's ``response.close()``, from whichever thread it runs in."""
        self._loop.call_soon_threadsafe(self._end)

    def _end(self) -> None:
        self._gone.set()
        if self._task is not None and not self._task.done():
            self._task.cancel()
