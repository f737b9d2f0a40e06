"""A streamed page over ASGI: each chunk made in a worker thread, sent under deadlines.

Three things can go wrong while a page streams, and each must cost only its own request:
the client goes away (servers may drop messages sent after a disconnect without an
error, as uvicorn does, so ``receive`` is watched for ``http.disconnect``: otherwise a
page is rendered to nobody, then cached as if delivered), the provider stalls (its
deadline counts from its last batch, `ThreadCalls`), or the client stops reading
(``send_timeout`` per chunk gives the render slot back)::

    await stream_body(chunks, send, receive, capacity.threads, provider_timeout, send_timeout)
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from functools import partial
from typing import Any

import anyio
import anyio.lowlevel

from ..errors import ProviderError
from ..flow import Busy
from .offload import ThreadCalls, raise_unwrapped

__all__ = ["stream_body"]

Message = MutableMapping[str, Any]
_DONE = object()
# A hop's most bytes (a 50,000-URL page is about 50 chunks of 160 KB) and time.
HOP_BYTES = 256 * 1024
HOP_SECONDS = 0.01


async def stream_body(
    chunks: Iterator[bytes],
    send: Callable[[Message], Awaitable[None]],
    receive: Callable[[], Awaitable[Message]],
    threads: anyio.CapacityLimiter,
    timeout: float | None,
    send_timeout: float,
) -> None:
    """Send ``chunks`` as ``http.response.body`` messages as they are produced.

    Raises `ProviderError` when the provider stalls, `Busy` when no thread came free,
    `TimeoutError` when the client took no chunk for ``send_timeout`` s; returns early,
    without the final message, when the client went away.
    """
    calls = ThreadCalls(threads, timeout)
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(_cancel_on_disconnect, receive, group.cancel_scope)
            group.start_soon(calls.keep)  # one deadline keeper for every chunk's call
            take = partial(next, chunks, _DONE)  # the first chunk alone: first bytes at once
            while True:
                try:
                    chunk = await calls.run(take)
                    take = partial(_next_bytes, chunks)
                except TimeoutError:
                    raise ProviderError.stalled(timeout) from None
                except Busy:
                    raise Busy(f"no render thread came free in {timeout} s: page aborted") from None
                if chunk is _DONE:
                    break
                with anyio.move_on_after(send_timeout) as sending:
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
                if sending.cancelled_caught:
                    raise TimeoutError(f"the client took no chunk for {send_timeout} s: aborted")
            await send({"type": "http.response.body", "body": b""})
            group.cancel_scope.cancel()
    except BaseExceptionGroup as errors:
        raise_unwrapped(errors)


def _next_bytes(chunks: Iterator[bytes]) -> bytes | object:
    """The next chunk, joined with those that follow at once (up to `HOP_BYTES`, within
    `HOP_SECONDS`), or `_DONE`.

    Each call is a hop from the event loop to a worker thread and back: on two CPUs,
    where the thread runs on the other one, a hop per chunk cost a cold 50,000-URL page a
    fifth of its speed (benchmarks/README.md, issue 10). A provider that is slow between
    batches still streams batch by batch: the time bound sends what is made (though a
    chunk made just before a provider stalls waits for it, for the deadline at most).
    """
    first = next(chunks, None)
    if first is None:
        return _DONE
    if len(first) >= HOP_BYTES:
        return first
    parts = [first]
    size = len(first)
    until = time.monotonic() + HOP_SECONDS
    for chunk in chunks:
        parts.append(chunk)
        size += len(chunk)
        if size >= HOP_BYTES or time.monotonic() > until:
            break
    return b"".join(parts)


async def _cancel_on_disconnect(receive: Callable[[], Awaitable[Message]], scope: anyio.CancelScope) -> None:
    while (await receive())["type"] != "http.disconnect":
        await anyio.lowlevel.checkpoint()  # never spin on a server that answers at once
    scope.cancel()
