"""Readers of a growing document (`caching.growing`): one client's position in it, and a
WSGI body that drives the render as it reads::

    reader = growing.reader(gzip=False)         # made by the document, one per client
    reader.take()                               # at most MOST bytes, b"" (none yet) or None (all)
    body = SyncReader(reader, step, stall_after)  # a WSGI body: it steps the render itself

A gzip reader is sent the document's gzip pieces. An identity reader is sent the chunks
as made while the render's window holds them (`caching.window`), then, once behind it,
inflates the pieces from where it is, with a decompressor of its own started there.
Either holds a position and nothing the others need.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from enum import Enum
from typing import Literal, Protocol

from ..errors import ProviderError

__all__ = ["MOST", "Document", "Inflater", "Mark", "Reader", "SyncReader", "partial_step"]

# The most bytes one take hands a client: a reader who is behind is sent the document a
# piece at a time (a server buffers what it is given whole, at a slow client's expense).
MOST = 256 * 1024


class Document(Protocol):
    """What readers read: a document as it grows (`growing.Growing`)."""

    last_growth: float  # when it last grew (time.monotonic)

    @property
    def stepping(self) -> bool: ...

    def step(self, *, wait: bool = True) -> bool: ...

    def fail(self, error: BaseException) -> None: ...

    def stop_if_unread(self) -> None: ...

    def inflater(self, history: bytes | None = None) -> Inflater:
        """A decompressor from the start of the gzip body, or from a piece after ``history``."""
        ...

    def next_front(self, reader: Reader) -> bytes | Literal[Mark.BEHIND] | None: ...

    def next_gzip(self, reader: Reader) -> bytes | None: ...

    def wait_for(self, reader: Reader, timeout: float) -> None: ...

    async def wait_for_async(self, reader: Reader, timeout: float) -> None: ...

    def left(self, reader: Reader) -> None: ...


class Inflater(Protocol):
    """A gzip decompressor (`zlib.decompressobj`, or ISA-L's)."""

    @property
    def unconsumed_tail(self) -> bytes: ...

    @property
    def eof(self) -> bool: ...

    def decompress(self, data: bytes, max_length: int = ...) -> bytes: ...

    def flush(self) -> bytes: ...


class Mark(Enum):
    BEHIND = "behind"  # an identity reader the window no longer holds chunks for


class Reader:
    """One client's position in a growing document: what it has not yet been sent.

    The document grows as gzip, once (the parts of the stored body); a gzip reader is
    sent those bytes. An identity reader is sent the chunks as made while the window
    holds them (`caching.window`), then inflates the gzip parts from where it is, with a
    decompressor of its own, so no reader, however far behind, holds a copy of the page.
    Once the render is complete, a reader goes on in the stored body itself.
    """

    __slots__ = (
        "_closed",
        "_done",
        "_front",
        "_identity",
        "_inflater",
        "_skip",
        "_unconsumed",
        "growing",
        "history",
        "index",
        "offset",
        "within",
    )

    def __init__(self, growing: Document, gzip: bool) -> None:
        self.growing = growing
        self._identity = not gzip
        self._front = not gzip  # reading the window, until it falls behind it
        self._inflater: Inflater | None = None  # an identity reader's, once behind the window
        self.index = 0  # chunks (gzip parts) taken, while the document renders
        self.offset = 0  # gzip bytes taken (at the front: those of the chunks taken)
        self.within = 0  # at the front: bytes taken of chunk `index`, a long one
        self.history = b""  # at the front: the identity before chunk `index`, its last 32 KiB
        self._skip = 0  # identity bytes the inflater makes again that were already taken
        self._unconsumed = b""  # gzip bytes not inflated yet (an identity piece is at most MOST)
        self._done = False
        self._closed = False

    @property
    def gzip(self) -> bool:
        return not self._identity

    def inflate(self, inflater: Inflater) -> None:
        """Inflate from where this identity reader is, with ``inflater``, started there."""
        self._front = False
        self._inflater = inflater
        self._skip, self.within, self.history = self.within, 0, b""

    def take(self) -> bytes | None:
        """At most `MOST` bytes made since the last take (``b""``: none yet), or ``None``
        once this reader has the whole document; raises what ended the render, once
        what came before it is taken."""
        if self._front and not self._done:
            made = self.growing.next_front(self)
            if made is not Mark.BEHIND:
                self._done = made is None
                return made
            # The chunk it is at is no longer held: its piece on, inflated (`caching.window`).
            start = self.growing.inflater(self.history) if self.index else self.growing.inflater()
            self.inflate(start)
        inflater = self._inflater
        while not self._done:
            if self._unconsumed:
                data: bytes | None = self._unconsumed
                self._unconsumed = b""
            else:
                data = self.growing.next_gzip(self)
            if data is None:
                self._done = True
                return None if inflater is None else (self._skipped(inflater.flush()) or None)
            if not data or inflater is None:
                return data
            identity = self._skipped(inflater.decompress(data, MOST))
            # After the last deflate block, one started mid-stream leaves the gzip trailer.
            self._unconsumed = b"" if inflater.eof else inflater.unconsumed_tail
            if identity:
                return identity
        return None

    def _skipped(self, identity: bytes) -> bytes:
        if self._skip:
            identity, self._skip = identity[self._skip :], max(0, self._skip - len(identity))
        return identity

    def wait(self, timeout: float) -> None:
        """Block until the document grew past this reader, ended, or ``timeout`` passed."""
        self.growing.wait_for(self, timeout)

    async def wait_async(self, timeout: float) -> None:
        """`wait` on an event loop: woken by the render itself, whatever thread it runs on."""
        await self.growing.wait_for_async(self, timeout)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._inflater = None
            self._front = False
            self.growing.left(self)


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


def partial_step(growing: Document) -> Callable[[], bool]:
    """A step that never waits for another thread's: that one makes the bytes anyway."""
    return lambda: growing.step(wait=False)
