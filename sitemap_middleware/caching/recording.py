"""A cold page's render as a `growing.Production`: chunks from the provider, their gzip
pieces, and the stored `Document` once the last chunk is made.

The copy is stored only once the render is complete: a failed render, or one every
client left, leaves the store as it was::

    recording = Recording(chunks, writer, store=lambda body, digest, size: ..., flight=flight)
    recording.next_parts()      # (identity, gzip piece), or None once stored
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from typing import Any

from ..concurrency.flights import Flight
from ..web.compress import GzipWriter

__all__ = ["Recording"]


class Recording:
    """`growing.Production` of one page, under its single-flight ``flight``:
    ``store(gzip_body, digest, size)`` keeps the result, and the flight is released at the end.

    Followers in other processes watch the flight: every chunk renews its heartbeat, and
    between two chunks the render waits for its readers (`Flight.sending`, until `sent`):
    under WSGI, where readers make the chunks, a render whose only reader stopped reading
    is taken over elsewhere after `flights.CLIENT_PATIENCE`, as a stalled one is.
    """

    def __init__(
        self,
        chunks: Iterator[bytes],
        writer: GzipWriter,
        *,
        store: Callable[[bytes, Any, int], None],
        flight: Flight,
    ) -> None:
        self._flight = flight
        self._chunks = chunks
        self._writer = writer
        self._store = store
        self._digest = hashlib.sha256()
        self._parts: list[bytes] = []
        self._size = 0
        self._tail = self._body = b""
        self._closed = False

    def next_parts(self) -> tuple[bytes, bytes] | None:
        self._flight.sent()  # a reader wants more: the render goes on
        chunk = next(self._chunks, None)
        if chunk is None:
            self._tail = self._writer.finish()
            self._parts.append(self._tail)
            self._body = b"".join(self._parts)
            self._store(self._body, self._digest, self._size)
            return None
        self._digest.update(chunk)
        self._size += len(chunk)
        piece = self._writer.compress(chunk)
        self._parts.append(piece)
        self._flight.sending()  # until a reader wants the next chunk
        return chunk, piece

    def tail(self) -> bytes:
        return self._tail

    def body(self) -> bytes:
        return self._body

    def close(self, completed: bool) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            close = getattr(self._chunks, "close", None)
            if close is not None:
                close()
        finally:
            self._parts = []
            self._flight.release()
