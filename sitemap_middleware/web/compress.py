"""gzip for streamed bodies: compress each chunk as it passes, flushing so it leaves at once.

Two compressors write the same format (RFC 1952), chosen once per `Sitemaps`::

    gzip = Gzip.named("auto")              # ISA-L when the isal package is installed, else zlib
    writer = gzip.writer()
    out = [writer.compress(chunk) for chunk in chunks] + [writer.finish()]
    gzip.compress(data)                    # one-shot, same container
    gzip.inflate(body)                     # a stored body, piece by piece
    gzip.decompress(body, size)            # ... or whole

- ``zlib``: the standard library's, level 6; what earlier versions always served.
- ``isal``: ISA-L (``pip install "sitemap-middleware[fast]"``), level 1: on sitemap XML
  many times as fast as zlib level 6 for a few percent more bytes, and faster to inflate
  (benchmarks/HISTORY.md, "gzip by ISA-L"); every call settled (`web.settled`: ISA-L
  leaves the vector registers in a state that slows the Python after it).

The gzip header carries no file name and a zero mtime, and the flush points follow the
chunks (whose sizes depend on the provider's batches, never on timing), so equal input
gives equal bytes in every process running the same compressor (name and version): the
workers of one deployment agree. Validators never depend on the compressor: an ETag is a
hash of the XML, and the gzip representation's is derived from it.
"""

from __future__ import annotations

import importlib
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigurationError
from .settled import SettledDeflater, SettledInflater, SettledModule

__all__ = ["COMPRESSORS", "Gzip", "GzipWriter"]

COMPRESSORS = ("auto", "isal", "zlib")
_LEVELS = {"zlib": 6, "isal": 1}  # isal 2 and 3: about the same bytes for more time (benchmarks/HISTORY.md)
_GZIP_WBITS = 16 + zlib.MAX_WBITS  # gzip container, mtime 0, no name
_INFLATE_CHUNK = 1024 * 1024  # few, large pieces: each costs a thread hop under ASGI


@dataclass(frozen=True, slots=True)
class Gzip:
    """One compressor: ``name`` (``"zlib"`` or ``"isal"``) and the zlib-compatible module it runs
    (the standard library's ``zlib``, or ISA-L's as a `SettledModule`)."""

    name: str
    module: Any
    level: int

    @classmethod
    def named(cls, choice: str) -> Gzip:
        """``"zlib"``, ``"isal"`` (raises when it is not installed) or ``"auto"`` (isal if installed)."""
        if choice not in COMPRESSORS:
            raise ConfigurationError(f"compressor must be one of {', '.join(COMPRESSORS)}, not {choice!r}")
        if choice != "zlib":
            try:
                isal = importlib.import_module("isal.isal_zlib")
            except ImportError:
                if choice == "isal":
                    raise ConfigurationError(
                        'compressor="isal" needs the isal package: pip install "sitemap-middleware[fast]"'
                    ) from None
            else:
                return cls("isal", SettledModule(isal), _LEVELS["isal"])
        return cls("zlib", zlib, _LEVELS["zlib"])

    def writer(self) -> GzipWriter:
        return GzipWriter(self.module.compressobj(self.level, zlib.DEFLATED, _GZIP_WBITS))

    def compress(self, data: bytes) -> bytes:
        """One-shot gzip with the same container settings as `writer`."""
        writer = self.writer()
        return writer.compress(data) + writer.finish()

    def stream(self, chunks: Iterator[bytes]) -> Iterator[bytes]:
        """Compress ``chunks`` lazily; closing this closes ``chunks``."""
        writer = self.writer()
        try:
            for chunk in chunks:
                if data := writer.compress(chunk):
                    yield data
            yield writer.finish()
        finally:
            close = getattr(chunks, "close", None)
            if close is not None:
                close()

    def decompress(self, data: bytes, size: int) -> bytes:
        """A stored gzip body inflated whole; ``size``: its identity length, known in advance."""
        return self.module.decompress(data, _GZIP_WBITS, max(size, 1))  # type: ignore[no-any-return]

    def inflater(self, history: bytes | None = None) -> zlib._Decompress | SettledInflater:
        """A fresh gzip decompressor (what `inflate` uses), for bytes that arrive in pieces.

        Given ``history``, the identity before a flush point of a `writer`'s body (its last
        32 KiB at least, or all of it), one that starts inflating at that point: raw
        deflate, that identity as its dictionary (RFC 1951 §2: nothing looks further back),
        the gzip trailer left over (`caching.window`).
        """
        if history is None:
            return self.module.decompressobj(_GZIP_WBITS)  # type: ignore[no-any-return]
        if not history:
            return self.module.decompressobj(-zlib.MAX_WBITS)  # type: ignore[no-any-return]
        return self.module.decompressobj(-zlib.MAX_WBITS, zdict=history)  # type: ignore[no-any-return]

    def inflate(self, data: bytes) -> Iterator[bytes]:
        """Inflate a stored gzip body piece by piece, so identity never sits whole in memory."""
        inflater = self.module.decompressobj(_GZIP_WBITS)
        while data:
            yield inflater.decompress(data, _INFLATE_CHUNK)
            data = inflater.unconsumed_tail
        if tail := inflater.flush():
            yield tail


class GzipWriter:
    """Incremental gzip: `compress` returns what can be sent now, `finish` the trailer."""

    __slots__ = ("_compressor",)

    def __init__(self, compressor: zlib._Compress | SettledDeflater) -> None:
        self._compressor = compressor

    def compress(self, chunk: bytes) -> bytes:
        # Z_SYNC_FLUSH: a streamed page must reach the client as it is produced. It costs
        # under 1% of zlib's time here, a tenth of isal's (one flush per batch of entries).
        return self._compressor.compress(chunk) + self._compressor.flush(zlib.Z_SYNC_FLUSH)

    def finish(self) -> bytes:
        return self._compressor.flush(zlib.Z_FINISH)
