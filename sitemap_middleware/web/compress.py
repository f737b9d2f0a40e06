"""gzip for streamed bodies: compress each chunk as it passes, flushing so it leaves at once.

The gzip header carries no file name and a zero mtime, and the flush points follow
the chunks (whose sizes do not depend on timing), so equal input gives equal output
in every process for the same zlib and level: cached copies and ETags stay comparable.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator

__all__ = ["GZIP_LEVEL", "GzipWriter", "gunzip_stream", "gzip_bytes", "gzip_stream"]

GZIP_LEVEL = 6
_GZIP_WBITS = 16 + zlib.MAX_WBITS  # gzip container, mtime 0, no name
_INFLATE_CHUNK = 1024 * 1024  # few, large pieces: each costs a thread hop under ASGI


class GzipWriter:
    """Incremental gzip: `compress` returns what can be sent now, `finish` the trailer."""

    __slots__ = ("_compressor",)

    def __init__(self) -> None:
        self._compressor = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, _GZIP_WBITS)

    def compress(self, chunk: bytes) -> bytes:
        # Z_SYNC_FLUSH: a streamed page must reach the client as it is produced.
        return self._compressor.compress(chunk) + self._compressor.flush(zlib.Z_SYNC_FLUSH)

    def finish(self) -> bytes:
        return self._compressor.flush(zlib.Z_FINISH)


def gzip_stream(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """Compress ``chunks`` lazily; closing this closes ``chunks``."""
    writer = GzipWriter()
    try:
        for chunk in chunks:
            if data := writer.compress(chunk):
                yield data
        yield writer.finish()
    finally:
        close = getattr(chunks, "close", None)
        if close is not None:
            close()


def gzip_bytes(data: bytes) -> bytes:
    """One-shot gzip with the same container settings as `GzipWriter`."""
    writer = GzipWriter()
    return writer.compress(data) + writer.finish()


def gunzip_stream(data: bytes) -> Iterator[bytes]:
    """Inflate a stored gzip body piece by piece, so identity never sits whole in memory."""
    inflater = zlib.decompressobj(_GZIP_WBITS)
    while data:
        yield inflater.decompress(data, _INFLATE_CHUNK)
        data = inflater.unconsumed_tail
    if tail := inflater.flush():
        yield tail
