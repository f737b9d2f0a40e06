"""A cold document as it is rendered: one render, read by every client of it at its own pace.

A cold page is rendered once, into the document being stored, and each of its clients
(the first one included) holds a position in that document, never a copy of it and never
the render itself: a client that stops reading holds its socket and nothing else, and
clients that ask while it renders get its first bytes at once and finish when it does
(nginx's proxy buffering, with the stored document as the buffer)::

    growing = Growing(key, production, on_end, inflater)  # production: what makes the parts
    reader = growing.reader(gzip=True)          # one per client: a position, nothing more
    growing.step()                              # the producer: one chunk more (any thread)
    reader.take()                               # at most MOST bytes made since the last take
    reader.close()                              # the last reader gone: the render stops

The document grows once, as the gzip pieces of the body being stored (each flushed,
`web.compress.GzipWriter`, so what exists can be read at once); a gzip reader is sent
them, an identity reader inflates them as it goes with a decompressor of its own (an
inflated copy kept for identity readers would double a render's memory, for the readers
a hostile client opens most cheaply). Steps are taken one at a time (a lock) by whoever
drives the render: the ASGI adapter's producer task, in render threads, at the
provider's pace; under WSGI, whichever reader needs the next bytes first (`SyncReader`),
so a client that stops reading never holds the others. Once complete, readers go on in
the stored body itself; a reader is handed at most `MOST` bytes a take, so a slow client
costs no more than that in the server's buffers. Memory is bounded by the renders in
flight times one (gzip) document, whatever the number of readers.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import Protocol

import anyio

from ..errors import ProviderError

__all__ = ["MOST", "Growing", "Production", "Reader", "SyncReader"]

# The most bytes one take hands a client: a reader who is behind is sent the document a
# piece at a time (a server buffers what it is given whole, at a slow client's expense).
MOST = 256 * 1024


class Production(Protocol):
    """What makes a growing document: its next parts, its end, and what it holds."""

    def next_parts(self) -> tuple[bytes, bytes] | None:
        """The next chunk as ``(identity, gzip piece)``; ``None`` once the last was made
        (the production has then stored the document, if it is stored at all)."""
        ...

    def tail(self) -> bytes:
        """The gzip trailer, known once `next_parts` returned ``None``."""
        ...

    def body(self) -> bytes:
        """The whole gzip document, as stored, once `next_parts` returned ``None``."""
        ...

    def close(self, completed: bool) -> None:
        """Release what the production holds (the provider's iterator, its flight); once."""
        ...


class Growing:
    """One document being rendered, and the readers reading it."""

    def __init__(
        self,
        key: str,
        production: Production,
        on_end: Callable[[Growing], None],
        inflater: Callable[[], Inflater],
    ) -> None:
        self.key = key
        self._production = production
        self._on_end = on_end
        self._inflater = inflater  # a fresh gzip decompressor, for each identity reader
        self._changed = threading.Condition()
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        self._complete: bytes | None = None  # the stored gzip body, once complete
        self._stepping = threading.Lock()  # one step at a time, on whatever thread
        self._gzip: list[bytes] = []
        self._ended = False
        self._error: BaseException | None = None
        self._readers = 0
        self._at_end: list[Callable[[], None]] = []
        self.made = 0  # identity bytes made so far
        self.last_growth = time.monotonic()

    # -- the producer ---------------------------------------------------------------------------

    @property
    def ended(self) -> bool:
        return self._ended

    @property
    def readers(self) -> int:
        return self._readers

    @property
    def stepping(self) -> bool:
        """Whether a step is running now (on any thread)."""
        return self._stepping.locked()

    def step(self, *, wait: bool = True) -> bool:
        """Make one chunk more; ``False`` when there was nothing to do (it ended, or another
        thread is stepping and ``wait`` is false). A production error ends the document:
        every reader gets it once it has read what came before."""
        if not self._stepping.acquire(blocking=wait):
            return False
        try:
            if self._ended:
                return False
            if self._readers == 0:
                # Every client went away: nobody is left to send it to (nothing is stored).
                self._end(error=ProviderError("every reader of the page went away"))
                return False
            try:
                parts = self._production.next_parts()
            except BaseException as error:
                self._end(error=error)
                raise
            if parts is None:
                self._end(tail=self._production.tail())
                return True
            with self._changed:
                cut = self._ended  # `fail` ended it while this step ran in an abandoned thread
                if not cut:
                    self._gzip.append(parts[1])
                    self.made += len(parts[0])
                    self.last_growth = time.monotonic()
                    self._notify()
            if cut:
                self._close_production(False)
            return not cut
        finally:
            self._stepping.release()

    def stop_if_unread(self) -> None:
        """End the render now if nobody reads it and no step is running (else the next step
        ends it): a WSGI reader's close, on a thread that may block."""
        if self._readers == 0:
            self.step(wait=False)

    def fail(self, error: BaseException) -> None:
        """End the document with ``error``: the producer's deadline cut a stalled provider.

        A step may still be running in the abandoned thread: the production is closed
        when it returns (`step`), never from here."""
        with self._changed:
            if self._ended:
                return
            self._ended = True
            self._error = error
            self._notify()
        try:
            if self._stepping.acquire(blocking=False):  # no step running: close it here
                try:
                    self._close_production(False)
                finally:
                    self._stepping.release()
        finally:
            self._on_end(self)

    def _end(self, *, tail: bytes | None = None, error: BaseException | None = None) -> None:
        """Under the step lock: the last part or the error, then the production closed."""
        with self._changed:
            self._ended = True
            if tail is not None:
                # Complete: readers go on in the stored body itself, and the parts go.
                self._complete = self._production.body()
                self._gzip = []
            self._error = error
            self._notify()
        try:
            self._close_production(tail is not None)
        finally:
            self._on_end(self)

    def at_end(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` once the production is closed (what its provider runs on)."""
        self._at_end.append(callback)

    def _close_production(self, completed: bool) -> None:
        try:
            self._production.close(completed)
        finally:
            callbacks, self._at_end = self._at_end, []
            for callback in callbacks:
                callback()

    # -- readers --------------------------------------------------------------------------------

    def reader(self, *, gzip: bool) -> Reader:
        """A new reader from the start of the document (its first, made with it)."""
        with self._changed:
            self._readers += 1
        return Reader(self, None if gzip else self._inflater())

    def join(self, *, gzip: bool) -> Reader | None:
        """A new reader, unless the render has ended (the store answers then, or nobody)."""
        with self._changed:
            if self._ended:
                return None
            self._readers += 1
        return Reader(self, None if gzip else self._inflater())

    def _next_gzip(self, reader: Reader) -> bytes | None:
        """At most `MOST` gzip bytes past ``reader``'s position (``b""``: none yet), ``None``
        once it has them all; raises what ended the render, once what came before is taken."""
        with self._changed:
            complete = self._complete
            parts = self._gzip
            end = len(parts)
            error = self._error
            ended = self._ended
        if complete is not None:
            data = complete[reader.offset : reader.offset + MOST]
            reader.offset += len(data)
            return data or None
        if reader.index < end:
            taken: list[bytes] = []
            size, index = 0, reader.index
            while index < end and (not taken or size + len(parts[index]) <= MOST):
                taken.append(parts[index])
                size += len(parts[index])
                index += 1
            reader.index, reader.offset = index, reader.offset + size
            return b"".join(taken)
        if error is not None:
            raise error
        return None if ended else b""

    def _wait(self, reader: Reader, timeout: float) -> None:
        with self._changed:
            if self._complete is None and len(self._gzip) <= reader.index and not self._ended:
                self._changed.wait(timeout)

    async def _wait_async(self, reader: Reader, timeout: float) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # pragma: no cover - another async library: look again soon
            await anyio.sleep(min(timeout, 0.01))
            return
        woken = loop.create_future()
        with self._changed:
            if self._complete is not None or len(self._gzip) > reader.index or self._ended:
                return
            self._waiters.append((loop, woken))
        try:
            with anyio.move_on_after(timeout):
                await woken
        finally:
            with self._changed:
                if (loop, woken) in self._waiters:
                    self._waiters.remove((loop, woken))

    def _notify(self) -> None:
        """Wake every reader waiting (under the lock): threads, and tasks on their loops."""
        self._changed.notify_all()
        waiters, self._waiters = self._waiters, []
        for loop, woken in waiters:
            with contextlib.suppress(RuntimeError):  # its loop has closed: nobody waits there
                loop.call_soon_threadsafe(_wake, woken)

    def _left(self) -> None:
        with self._changed:
            self._readers -= 1


def _wake(woken: asyncio.Future[None]) -> None:
    if not woken.done():
        woken.set_result(None)


class Inflater(Protocol):
    """A gzip decompressor (`zlib.decompressobj`, or ISA-L's)."""

    @property
    def unconsumed_tail(self) -> bytes: ...

    def decompress(self, data: bytes, max_length: int = ...) -> bytes: ...

    def flush(self) -> bytes: ...


class Reader:
    """One client's position in a growing document: what it has not yet been sent.

    The document grows as gzip, once (the parts of the stored body); a gzip reader is
    sent those bytes, an identity reader inflates them as it goes, with a decompressor of
    its own, so no reader, however far behind, holds a copy of the page. Once the render
    is complete, a reader goes on in the stored body itself.
    """

    __slots__ = ("_closed", "_done", "_inflater", "_unconsumed", "growing", "index", "offset")

    def __init__(self, growing: Growing, inflater: Inflater | None) -> None:
        self.growing = growing
        self._inflater = inflater  # None: a gzip reader
        self.index = 0  # gzip parts taken, while the document renders
        self.offset = 0  # gzip bytes taken
        self._unconsumed = b""  # gzip bytes not inflated yet (an identity piece is at most MOST)
        self._done = False
        self._closed = False

    @property
    def gzip(self) -> bool:
        return self._inflater is None

    def take(self) -> bytes | None:
        """At most `MOST` bytes made since the last take (``b""``: none yet), or ``None``
        once this reader has the whole document; raises what ended the render, once
        what came before it is taken."""
        inflater = self._inflater
        while not self._done:
            if self._unconsumed:
                data: bytes | None = self._unconsumed
                self._unconsumed = b""
            else:
                data = self.growing._next_gzip(self)
            if data is None:
                self._done = True
                return None if inflater is None else (inflater.flush() or None)
            if not data or inflater is None:
                return data
            identity = inflater.decompress(data, MOST)
            self._unconsumed = inflater.unconsumed_tail
            if identity:
                return identity
        return None

    def wait(self, timeout: float) -> None:
        """Block until the document grew past this reader, ended, or ``timeout`` passed."""
        self.growing._wait(self, timeout)

    async def wait_async(self, timeout: float) -> None:
        """`wait` on an event loop: woken by the render itself, whatever thread it runs on."""
        await self.growing._wait_async(self, timeout)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._inflater = None
            self.growing._left()


class SyncReader:
    """A reader as a WSGI body: blocking, and driving the render whenever it needs bytes
    that nobody is making, so the fastest client paces the render, never the first.

    ``step``: how this thread takes a step (inline, or on a helper under the deadline).
    ``stall_after``: seconds without growth after which the page is aborted.
    """

    def __init__(
        self, reader: Reader, step: Callable[[Callable[[], bool]], bool], stall_after: float | None
    ) -> None:
        self._reader = reader
        self._step = step
        self._stall_after = stall_after

    def __iter__(self) -> Iterator[bytes]:
        return self

    def __next__(self) -> bytes:
        reader = self._reader
        growing = reader.growing
        while True:
            data = reader.take()
            if data is None:
                raise StopIteration
            if data:
                return data
            try:
                # Another thread making the bytes: wait for them rather than take a helper.
                stepped = not growing.stepping and self._step(partial_step(growing))
            except TimeoutError:
                # Its provider stalled on a helper: every reader's page is aborted at once.
                growing.fail(ProviderError.stalled(self._stall_after))
                raise ProviderError.stalled(self._stall_after) from None
            if stepped:
                continue
            silent = time.monotonic() - growing.last_growth
            if self._stall_after is not None and silent > self._stall_after:
                raise ProviderError.stalled(self._stall_after)
            reader.wait(0.05)

    def close(self) -> None:
        self._reader.close()
        self._reader.growing.stop_if_unread()


def partial_step(growing: Growing) -> Callable[[], bool]:
    """A step that never waits for another thread's: that one makes the bytes anyway."""
    return lambda: growing.step(wait=False)
