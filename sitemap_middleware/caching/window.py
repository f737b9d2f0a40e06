"""Identity at a render's front: its newest chunks as made, for the identity readers there.

A growing document is kept as gzip (`caching.growing`), and an identity reader could
inflate it all; but a reader that keeps up with the render wants exactly the chunk just
made, which existed uncompressed a moment ago. The window holds those chunks, from the
slowest identity reader still in it up to the newest, and never more than `WINDOW`
bytes (the newest chunk always): a reader it no longer holds is out of it for good, and
goes on inflating the gzip pieces, from where it is, with no copy of anything before it::

    window = RawWindow()
    window.add(0, chunk, keep_from=0)       # chunk 0, kept for readers from 0 on
    window.get(0)                           # the chunk, or None once it is not held
    history = after(history, chunk)         # a reader's last 32 KiB, as it passes chunks

Why a reader can leave the window at any chunk: every gzip piece of a growing document
ends at a flush point (`web.compress.GzipWriter`: ``Z_SYNC_FLUSH``), where a new deflate
block begins on a byte boundary, and deflate looks back at most 32 KiB (RFC 1951 §2): a
raw inflater given the 32 KiB of identity before a piece, as its dictionary, inflates
from that piece on exactly as one that inflated everything before it would
(`web.compress.Gzip.inflater`). So a reader keeps those 32 KiB (less than a
decompressor's own window, which every identity reader held before) and nothing else.
"""

from __future__ import annotations

__all__ = ["HISTORY", "WINDOW", "RawWindow", "after"]

# RFC 1951 §2: deflate's back references reach at most 32 KiB back.
HISTORY = 32 * 1024
# The most identity bytes one render holds for its readers at the front: a few times what
# a render makes while a reader on a busy event loop waits its turn for the interpreter
# (5 ms, about 450 KB); a reader further behind inflates.
WINDOW = 1024 * 1024


def after(history: bytes, data: bytes) -> bytes:
    """The last `HISTORY` bytes of ``history`` followed by ``data``."""
    if len(data) >= HISTORY:
        return data[-HISTORY:]
    return (history + data)[-HISTORY:]


class RawWindow:
    """The newest identity chunks of one render, by their index in it.

    Not thread-safe: the growing document calls it under its lock.
    """

    __slots__ = ("_base", "_chunks", "_held", "_most")

    def __init__(self, most: int = WINDOW) -> None:
        self._most = most
        self._chunks: list[bytes] = []
        self._base = 0  # the index of _chunks[0]
        self._held = 0

    @property
    def held(self) -> int:
        """Identity bytes held now."""
        return self._held

    def get(self, index: int) -> bytes | None:
        """Chunk ``index``, or ``None`` when it is not held (dropped, or never kept)."""
        offset = index - self._base
        if 0 <= offset < len(self._chunks):
            return self._chunks[offset]
        return None

    def add(self, index: int, chunk: bytes, keep_from: int) -> None:
        """Hold chunk ``index``, the newest, for readers at ``keep_from`` or later."""
        if index != self._base + len(self._chunks):  # the chunks before it were never kept
            self.clear()
            self._base = index
        self._chunks.append(chunk)
        self._held += len(chunk)
        self.trim(keep_from)

    def trim(self, keep_from: int) -> None:
        """Drop the chunks before ``keep_from``, and the oldest while over `WINDOW` bytes."""
        chunks = self._chunks
        drop = 0
        while drop < len(chunks) and (self._base + drop < keep_from or self._held > self._most):
            if self._base + drop >= keep_from and drop == len(chunks) - 1:
                break  # the newest chunk, which a reader is about to take
            self._held -= len(chunks[drop])
            drop += 1
        if drop:
            del chunks[:drop]
            self._base += drop

    def clear(self) -> None:
        self._base += len(self._chunks)
        self._chunks = []
        self._held = 0
