"""A streamed page over ASGI: each chunk made in a worker thread, sent under deadlines.

Three things can go wrong while a page streams, and each must cost only its own request:
the client goes away (servers may drop messages sent after a disconnect without an
error, as uvicorn does, so ``receive`` is watched for ``http.disconnect``: otherwise a
page is rendered to nobody, then cached as if delivered), the provider stalls (its
deadline counts from its last batch, `ThreadCalls`), or the client stops reading
(``send_timeout`` per chunk aborts its response). Meanwhile a client that does not read
holds no render slot (`_Sends`)::

    await stream_body(chunks, send, receive, capacity.threads, provider_timeout, send_timeout, slot)
"""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from functools import partial
from typing import Any

import anyio
import anyio.abc
import anyio.lowlevel

from ..caching.growing import Growing, Reader
from ..errors import ProviderError
from ..web.replies import Reply
from .offload import Slot, ThreadCalls, raise_unwrapped
from .steps import Busy

__all__ = ["lead_growing", "send_body", "send_growing", "stream_body"]

Message = MutableMapping[str, Any]
_DONE = object()
# A streamed hop's most bytes (a 50,000-URL page is about 50 chunks of 160 KB) and time.
HOP_BYTES = 1024 * 1024
HOP_SECONDS = 0.02
# A render's hop: its chunks go to the growing document, read meanwhile, so only time
# bounds it (how long another render may wait for this thread).
RENDER_HOP_SECONDS = 0.05
# A reader of a growing document looks again at least this often, woken or not.
_WAKE_AT_LEAST = 1.0
# A streamed hop not sent within this waits on its client, not on rendering: its slot goes
# back meanwhile. On loopback a reading client takes a hop (1 MB) in about a millisecond.
_SLOT_GRACE = 0.05


async def send_body(
    reply: Reply,
    send: Callable[[Message], Awaitable[None]],
    receive: Callable[[], Awaitable[Message]],
    threads: anyio.CapacityLimiter,
    timeout: float | None,
    send_timeout: float,
    slot: Slot | None,
) -> None:
    """A reply's body that is not bytes: a growing document, led or joined, or a stream.

    ``slot``: the render slot of the request's flow, if it rendered: a stream holds it
    while it renders, a led render until it is over (or waits for its readers).
    """
    body = reply.body
    assert not isinstance(body, bytes)
    if not isinstance(body, Reader):
        await stream_body(body, send, receive, threads, timeout, send_timeout, slot)
    elif reply.growing is None:
        await send_growing(body, send, receive, send_timeout)
    else:
        assert slot is not None  # a render is led from a request's flow, which holds its slot
        await lead_growing(reply.growing, body, send, receive, threads, timeout, send_timeout, slot)


async def stream_body(
    chunks: Iterator[bytes],
    send: Callable[[Message], Awaitable[None]],
    receive: Callable[[], Awaitable[Message]],
    threads: anyio.CapacityLimiter,
    timeout: float | None,
    send_timeout: float,
    slot: Slot | None = None,
) -> None:
    """Send ``chunks`` as ``http.response.body`` messages as they are produced.

    A held ``slot`` is given back while the client does not read, and taken again
    (within ``timeout``) before the next chunk is made. Raises `ProviderError` when the
    provider stalls, `Busy` when no thread or slot came free, `TimeoutError` when the
    client took no chunk for ``send_timeout`` s; returns early, without the final
    message, when the client went away.
    """
    calls = ThreadCalls(threads, timeout)
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(_cancel_on_disconnect, receive, group.cancel_scope)
            group.start_soon(calls.keep)  # one deadline keeper for every chunk's call
            take = partial(next, chunks, _DONE)  # the first chunk alone: first bytes at once
            sends = _Sends(send, send_timeout)
            if slot is not None and slot.held:
                sends.pause_with(slot, timeout, group)
            with sends.scope:
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
                    assert isinstance(chunk, bytes)
                    await sends.chunk(chunk)
            sends.check()
            await send({"type": "http.response.body", "body": b""})
            group.cancel_scope.cancel()
    except BaseExceptionGroup as errors:
        raise_unwrapped(errors)


class _Sends:
    """A body's chunks sent each within ``send_timeout`` s, under one cancel scope whose
    deadline is set for each send and lifted between them (a scope a chunk cost a cold
    page's event loop more than the sends: benchmarks/HISTORY.md, "Fewer wakes")::

        sends = _Sends(send, send_timeout)
        sends.pause_with(slot, timeout, group)  # a stream that renders as it sends
        with sends.scope:
            await sends.chunk(data)             # ...for each chunk
        sends.check()                           # TimeoutError if a chunk was not taken in time

    A stream renders between its sends, so it holds a render slot; a send its client
    does not take within `_SLOT_GRACE` waits on that client alone, so the slot goes back
    until it is taken, then the stream queues for one again (`steps.Busy` after
    ``timeout``): slow readers of unstored pages never keep other pages from rendering,
    and one holds its socket, the hop being sent and its provider's iterator, nothing else.
    Only a slow send pays for this: giving the slot back before every send would put a
    reading client at the back of the queue once a hop.
    """

    __slots__ = ("_group", "_send", "_slot", "_slot_timeout", "_timeout", "scope")

    def __init__(self, send: Callable[[Message], Awaitable[None]], send_timeout: float) -> None:
        self._send = send
        self._timeout = send_timeout
        self.scope = anyio.CancelScope()
        self._slot: Slot | None = None
        self._slot_timeout: float | None = None
        self._group: anyio.abc.TaskGroup | None = None

    def pause_with(self, slot: Slot, timeout: float | None, group: anyio.abc.TaskGroup) -> None:
        """Give ``slot`` back while a send waits on the client; sends then run in ``group``."""
        self._slot, self._slot_timeout, self._group = slot, timeout, group

    async def chunk(self, data: bytes) -> None:
        self.scope.deadline = anyio.current_time() + self._timeout
        message = {"type": "http.response.body", "body": data, "more_body": True}
        if self._slot is None:
            await self._send(message)
        else:
            await self._send_pausing(message, self._slot)
        self.scope.deadline = math.inf

    async def _send_pausing(self, message: Message, slot: Slot) -> None:
        # The send runs in a task of its own: cancelling one halfway could lose its bytes.
        # What it raises reaches the stream's group, which cancels the stream.
        sent = anyio.Event()
        assert self._group is not None
        self._group.start_soon(self._sent, message, sent)
        with anyio.move_on_after(_SLOT_GRACE):
            await sent.wait()
        if sent.is_set():
            return
        slot.release()
        await sent.wait()
        self.scope.deadline = math.inf  # taken in time: queueing for a slot is not the client's
        if not await slot.acquire(self._slot_timeout):
            raise Busy(f"no render slot came free in {self._slot_timeout} s: page aborted")

    async def _sent(self, message: Message, sent: anyio.Event) -> None:
        await self._send(message)
        sent.set()

    def check(self) -> None:
        if self.scope.cancelled_caught:
            raise TimeoutError(f"the client took no chunk for {self._timeout} s: aborted")


def _next_bytes(chunks: Iterator[bytes]) -> bytes | object:
    """The next chunk, joined with those that follow at once (up to `HOP_BYTES`, within
    `HOP_SECONDS`), or `_DONE`.

    Each call is a hop from the event loop to a worker thread and back: on two CPUs, where
    the thread runs on the other one, a hop per chunk costs a cold page much of its speed
    (measured in benchmarks/HISTORY.md, "Issues 10 and 15"). A provider that is slow between
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


async def send_growing(
    reader: Reader,
    send: Callable[[Message], Awaitable[None]],
    receive: Callable[[], Awaitable[Message]],
    send_timeout: float,
) -> None:
    """Send a growing document (`caching.growing`) to one client, at that client's pace.

    The reader holds a position in the document, never the render: it waits to be woken
    by the render, and is sent a piece at a time (`growing.MOST`), so a slow client holds
    no more than that in the server's buffers; one that takes no chunk for
    ``send_timeout`` s loses its response (`TimeoutError`) and nothing else. Raises what
    ended the render, once what came before it was sent; returns early, without the final
    message, when the client went away.
    """
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(_cancel_on_disconnect, receive, group.cancel_scope)
            sends = _Sends(send, send_timeout)
            with sends.scope:
                while (data := reader.take()) is not None:
                    if data:
                        await sends.chunk(data)
                    else:
                        await reader.wait_async(_WAKE_AT_LEAST)
            sends.check()
            await send({"type": "http.response.body", "body": b""})
            group.cancel_scope.cancel()
    except BaseExceptionGroup as errors:
        raise_unwrapped(errors)
    finally:
        reader.close()


async def lead_growing(
    growing: Growing,
    reader: Reader,
    send: Callable[[Message], Awaitable[None]],
    receive: Callable[[], Awaitable[Message]],
    threads: anyio.CapacityLimiter,
    timeout: float | None,
    send_timeout: float,
    slot: Slot,
) -> None:
    """Render ``growing`` at its provider's pace while sending it to the client that asked
    first, as one more reader (``reader``): that client's pace concerns nobody else.

    ``slot`` goes back once the render is over, not once this client has read it all, and
    while a render its store will not keep waits for its readers. What ended this client's
    response is raised once the render is over too: the others may still be reading it.
    """
    failure: BaseException | None = None
    async with anyio.create_task_group() as group:
        group.start_soon(_produce, growing, threads, timeout, slot)
        try:
            await send_growing(reader, send, receive, send_timeout)
        except Exception as error:  # this client's response only
            failure = error
    if failure is not None:
        raise failure


async def _produce(
    growing: Growing, threads: anyio.CapacityLimiter, timeout: float | None, slot: Slot
) -> None:
    """Step ``growing`` to its end in worker threads, each hop under the provider deadline."""
    calls = ThreadCalls(threads, timeout)
    step = partial(_steps, growing, 0.0)  # the first chunk alone: first bytes at once
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(calls.keep)
            try:
                while not growing.ended:
                    if growing.waits_for_readers():
                        await _wait_for_readers(growing, slot, timeout)
                    await calls.run(step)
                    step = partial(_steps, growing, RENDER_HOP_SECONDS)
            except TimeoutError:
                await _fail(growing, ProviderError.stalled(timeout))
            except Busy as busy:
                await _fail(growing, ProviderError(f"{busy} in {timeout} s: page aborted"))
            except Exception:
                pass
            group.cancel_scope.cancel()
    except BaseExceptionGroup as errors:
        raise_unwrapped(errors)
    finally:
        slot.release()
        if not growing.ended:  # this task was cancelled
            await _fail(growing, ProviderError("the render was cancelled"))


async def _wait_for_readers(growing: Growing, slot: Slot, timeout: float | None) -> None:
    """Hold no render slot while every reader of a render made for them alone is behind it;
    then queue for one again (`steps.Busy` if none came free within ``timeout``)."""
    slot.release()
    delay = 0.005
    while growing.waits_for_readers():
        await anyio.sleep(delay)  # readers take on the loop, a thread or another loop: polled
        delay = min(delay * 2, 0.05)
    if not await slot.acquire(timeout):
        raise Busy("no render slot came free")


async def _fail(growing: Growing, error: ProviderError) -> None:
    # Off the loop and shielded: ending it may close the provider's iterator (a cursor).
    with anyio.CancelScope(shield=True):
        await anyio.to_thread.run_sync(growing.fail, error)


def _steps(growing: Growing, seconds: float) -> None:
    """Steps for ``seconds`` at least once, or until the render ended: one hop from the loop
    to a thread and back for many chunks (see `_next_bytes`)."""
    until = time.monotonic() + seconds
    while growing.step() and time.monotonic() < until:
        pass
