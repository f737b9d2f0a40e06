"""gzip for streamed bodies: compress each chunk as it passes, flushing so it leaves at once.

The gzip header carries no file name and a zero mtime, so equal input gives equal
output in every process (zlib at a fixed level), which keeps cached copies comparable.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator

__all__ = ["GZIP_LEVEL", "gzip_bytes", "gzip_stream"]

GZIP_LEVEL = 6
_GZIP_WBITS = 16 + zlib.MAX_WBITS  # gzip container, mtime 0, no name


def gzip_stream(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """Compress ``chunks`` lazily; closing this closes ``chunks``."""
    compressor = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, _GZIP_WBITS)
    try:
        for chunk in chunks:
            # Z_SYNC_FLUSH: a streamed page must reach the client as it is produced.
            data = compressor.compress(chunk) + compressor.flush(zlib.Z_SYNC_FLUSH)
            if data:
                yield data
        yield compressor.flush(zlib.Z_FINISH)
    finally:
        close = getattr(chunks, "close", None)
        if close is not None:
            close()


def gzip_bytes(data: bytes) -> bytes:
    """One-shot gzip with the same container settings as `gzip_stream`."""
    compressor = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, _GZIP_WBITS)
    return compressor.compress(data) + compressor.flush(zlib.Z_FINISH)
