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
them. An identity reader that keeps up is sent each chunk as it was made, from the
render's newest chunks (`caching.window`: at most `window.WINDOW` bytes, and only those
an identity reader has yet to take); one that falls behind them inflates the pieces
from where it is, with a decompressor of its own (an inflated copy kept for identity
readers would double a render's memory, for the readers a hostile client opens most
cheaply). Steps are taken one at a time (a lock) by whoever drives the render: the ASGI
adapter's producer task, in render threads, at the provider's pace; under WSGI,
whichever reader needs the next bytes first (`SyncReader`), so a client that stops
reading never holds the others. Once complete, readers go on in the stored body itself;
a reader is handed at most `MOST` bytes a take, so a slow client costs no more than that
in the server's buffers, and a reader waiting on an event loop is woken by a take's worth
of growth (or after `WAKE_AFTER`), not by every chunk. Memory is bounded by the renders in
flight times one (gzip) document and one window, whatever the number of readers.

A document past what its store keeps (`stores.max_document_bytes`) is made for its readers
alone, so no faster than the fastest reads (`waits_for_readers`), as an unstored page streams:
a client that stops reading costs `AHEAD` bytes of render past what it took, no slot.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Literal, Protocol

import anyio

from ..errors import ProviderError
from .reading import MOST, Inflater, Mark, Reader, SyncReader
from .waking import Waiter, Waiting, wake, wake_future
from .window import WINDOW, RawWindow, after

__all__ = ["MOST", "Growing", "Production", "Reader", "SyncReader"]

# A waiting task is woken by a take's worth of growth, or this long after it began to wait.
WAKE_BYTES = MOST
WAKE_AFTER = 0.02
# A render its store will not keep waits while every reader is this far behind (gzip bytes,
# ~300 KB of XML): a reader that keeps up finds its next hop made; one that stops, stops it.
AHEAD = 64 * 1024


class Production(Protocol):
    """What makes a growing document: its next parts, its end, and what it holds."""

    def next_parts(self) -> tuple[bytes, bytes] | None:
        """The next chunk as ``(identity, gzip piece)``, the piece holding all of the chunk
        and ending at a flush point (`caching.window`); ``None`` once the last was made
        (the production has then stored the document, if it is stored at all)."""
        ...

    def tail(self) -> bytes:
        """The gzip trailer, known once `next_parts` returned ``None``: no identity bytes."""
        ...

    def body(self) -> bytes:
        """The whole gzip document, as stored, once `next_parts` returned ``None``: the
        pieces, then the tail."""
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
        inflater: Callable[..., Inflater],
        *,
        window: int = WINDOW,
        clock: Callable[[], float] = time.monotonic,
        keeps: int | None = None,
    ) -> None:
        self.key = key
        self._production = production
        self._on_end = on_end
        # A fresh gzip decompressor for an identity reader behind the window; given the
        # identity before a piece, one that starts there (`web.compress.Gzip.inflater`).
        self.inflater = inflater
        self._changed = threading.Condition()
        self._waiting = Waiting()  # readers waiting on event loops
        self._clock = clock
        self._complete: bytes | None = None  # the stored gzip body, once complete
        self._stepping = threading.Lock()  # one step at a time, on whatever thread
        self._gzip: list[bytes] = []
        self._chunks = 0  # chunks made so far
        self._window = RawWindow(window)  # the newest chunks, for identity readers that keep up
        self._fronts: set[Reader] = set()  # the identity readers reading from the window
        self._ended = False
        self._error: BaseException | None = None
        self._readers = 0
        self._positions: set[Reader] = set()  # every reader: how far behind the render they are
        self._keeps = keeps  # the largest body the store keeps (None: any)
        self._gzip_made = 0
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
            woken: list[Waiter] = []
            with self._changed:
                cut = self._ended  # `fail` ended it while this step ran in an abandoned thread
                if not cut:
                    self._gzip.append(parts[1])
                    if self._fronts:
                        self._hold(parts[0])
                    self._chunks += 1
                    self.made += len(parts[0])
                    self._gzip_made += len(parts[1])
                    self.last_growth = time.monotonic()
                    woken = self._notify()
            wake(woken)
            if cut:
                self._close_production(False)
            return not cut
        finally:
            self._stepping.release()

    def waits_for_readers(self) -> bool:
        """Past what its store keeps, and every reader `AHEAD` gzip bytes behind (none: the
        next step ends the render)."""
        keeps = self._keeps
        if keeps is None or self._gzip_made <= keeps:
            return False
        with self._changed:
            if self._ended or not self._positions:
                return False
            front = max(reader.offset for reader in self._positions)
            return self._gzip_made - front > AHEAD

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
            self._close_window()
            woken = self._notify()
        wake(woken)
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
            self._close_window()
            woken = self._notify()
        wake(woken)
        try:
            self._close_production(tail is not None)
        finally:
            self._on_end(self)

    def _hold(self, chunk: bytes) -> None:
        """Under the lock: the new chunk in the window, for the identity readers still in it.

        A reader whose chunk the window dropped (it fell `window.WINDOW` bytes behind) is at
        the front no longer: the window stops holding chunks for it at once, rather than
        when it next reads, or never, if it stopped reading.
        """
        window, index = self._window, self._chunks
        window.add(index, chunk, min(reader.index for reader in self._fronts))
        behind = [
            reader for reader in self._fronts if reader.index <= index and window.get(reader.index) is None
        ]
        if behind:
            self._fronts.difference_update(behind)
            if self._fronts:
                window.trim(min(reader.index for reader in self._fronts))
            else:
                window.clear()

    def _close_window(self) -> None:
        # Under the lock, at the end: the window is for readers of a render that runs, and
        # the readers at the front go on inflating (a complete document's readers could
        # otherwise hold its window for as long as they take, beyond `max_renders`).
        self._window.clear()
        self._fronts.clear()

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
        reader = self.join(gzip=gzip)
        assert reader is not None  # made with the document, before it can end
        return reader

    def join(self, *, gzip: bool) -> Reader | None:
        """A new reader, unless the render has ended (the store answers then, or nobody)."""
        with self._changed:
            if self._ended:
                return None
            self._readers += 1
            reader = Reader(self, gzip)
            self._positions.add(reader)
            if not gzip and (self._chunks == 0 or self._window.get(0) is not None):
                self._fronts.add(reader)  # nothing made that it has not, held
                return reader
        if not gzip:
            reader.inflate(self.inflater())
        return reader

    def next_front(self, reader: Reader) -> bytes | Literal[Mark.BEHIND] | None:
        """`next_gzip` for an identity reader at the front: the chunks past its position as
        they were made, at most `MOST` bytes; `Mark.BEHIND` once the window no longer holds
        them (the reader inflates from there)."""
        with self._changed:
            index = reader.index
            if index >= self._chunks:
                if self._complete is not None:
                    return None  # every chunk is taken, and the tail holds no identity
                if self._error is not None:
                    raise self._error
                return b""
            first = self._window.get(index)
            if first is None:
                self._fronts.discard(reader)
                return Mark.BEHIND
            within = reader.within
            if within or len(first) > MOST:  # a long chunk, a piece at a time
                data = first[within : within + MOST]
                reader.within = within + len(data)
                if reader.within < len(first):
                    return data
                reader.within, passed, count = 0, first, 1
            else:
                taken, size = [first], len(first)
                while index + len(taken) < self._chunks:
                    chunk = self._window.get(index + len(taken))
                    if chunk is None or size + len(chunk) > MOST:
                        break
                    taken.append(chunk)
                    size += len(chunk)
                data = passed = first if len(taken) == 1 else b"".join(taken)
                count = len(taken)
            gzip = self._gzip
            reader.offset += sum(len(gzip[n]) for n in range(index, index + count))
            reader.index = index + count
            reader.history = after(reader.history, passed)
            return data

    def next_gzip(self, reader: Reader) -> bytes | None:
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

    def wait_for(self, reader: Reader, timeout: float) -> None:
        with self._changed:
            if self._complete is None and self._chunks <= reader.index and not self._ended:
                self._changed.wait(timeout)

    async def wait_for_async(self, reader: Reader, timeout: float) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # pragma: no cover - another async library: look again soon
            await anyio.sleep(min(timeout, 0.01))
            return
        woken = loop.create_future()
        with self._changed:
            if self._complete is not None or self._chunks > reader.index or self._ended:
                return
            # A reader that has had nothing is woken by the first chunk (first bytes at once).
            enough = 0 if reader.index == 0 else self.made + WAKE_BYTES
            waiter = Waiter(loop, woken, enough, self._clock() + WAKE_AFTER)
            self._waiting.add(waiter)
        # Timers of the loop's own (a cancel scope a wait cost the loop more than the wait).
        timers: list[asyncio.TimerHandle] = []

        def look() -> None:
            # `WAKE_AFTER` on: a chunk made meanwhile, too small to wake it, is sent now, though
            # nothing more may come for long (a slow provider); else it waits out its timeout.
            if self._chunks > reader.index or self._ended:
                wake_future(woken)
            else:
                timers.append(loop.call_later(max(timeout - WAKE_AFTER, 0.0), wake_future, woken))

        timers.append(loop.call_later(min(WAKE_AFTER, timeout), look))
        try:
            await woken
        finally:
            for timer in timers:
                timer.cancel()
            with self._changed:
                self._waiting.remove(waiter)

    def _notify(self) -> list[Waiter]:
        """Wake the threads waiting (under the lock); return the tasks to wake once it is
        released (`waking.wake`).

        A task is woken once the document ended, or grew by `WAKE_BYTES` since it began to
        wait, or `WAKE_AFTER` seconds after it did: each wake makes its loop's thread take the
        interpreter from the render's, and one a chunk made a cold ASGI page pay some 300
        hand-overs (benchmarks/HISTORY.md, "Fewer wakes").
        """
        self._changed.notify_all()
        return self._waiting.due(self.made, self._clock(), self._ended)

    def left(self, reader: Reader) -> None:
        with self._changed:
            self._readers -= 1
            self._positions.discard(reader)
            self._fronts.discard(reader)
            if self._fronts:
                self._window.trim(min(other.index for other in self._fronts))
            else:
                self._window.clear()
