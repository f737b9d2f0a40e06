"""ISA-L, leaving the vector registers as the interpreter needs them after every call.

ISA-L's deflate and inflate are hand-written AVX2 and AVX-512 assembly that return
without ``VZEROUPPER`` (intel/isa-l#24): the upper halves of the vector registers stay
in use, and on Intel cores every legacy-SSE instruction that runs next on that thread
pays for it (a false dependency on those halves) until something clears them. CPython
runs such instructions all the time (its copies, its floats), so one ISA-L call made
the Python after it 20 to 30% slower, until something cleared them (nothing on our path
did): a cold 50,000-URL page, gzipped as it rendered, came out at 0.71x the hand-rolled
renderer's speed, and at 0.85x once every call was followed by a clear, in the same runs
(benchmarks/HISTORY.md, "ISA-L's dirty registers").

Python cannot issue ``VZEROUPPER``; OpenSSL can. Its SHA-512 block function, in the AVX
and AVX2 code it picks on every CPU where ISA-L uses AVX, ends with one, and SHA-384 of
nothing runs it once, in about a microsecond (`settle`). Where it is not so (another
hash library, a CPU without AVX), the call clears nothing and costs as little, and
ISA-L is no slower than before::

    isal = SettledModule(importlib.import_module("isal.isal_zlib"))
    deflater = isal.compressobj(1, zlib.DEFLATED, 31)     # as the module's own, settled
    deflater.compress(data) + deflater.flush()
"""

from __future__ import annotations

import hashlib
import zlib
from typing import Any

__all__ = ["SettledModule", "settle"]


def settle() -> None:
    """Clear the upper halves of the vector registers (see the module's docstring)."""
    hashlib.sha384(b"").digest()


class SettledModule:
    """A zlib-compatible module (``isal.isal_zlib``) whose every call is followed by `settle`."""

    __slots__ = ("_module",)

    def __init__(self, module: Any) -> None:
        self._module = module

    def compressobj(self, *args: Any, **kwargs: Any) -> SettledDeflater:
        return SettledDeflater(self._module.compressobj(*args, **kwargs))

    def decompressobj(self, *args: Any, **kwargs: Any) -> SettledInflater:
        return SettledInflater(self._module.decompressobj(*args, **kwargs))

    def decompress(self, *args: Any, **kwargs: Any) -> bytes:
        try:
            return self._module.decompress(*args, **kwargs)  # type: ignore[no-any-return]
        finally:
            settle()


class SettledDeflater:
    """A compressor object of `SettledModule`: ``compress`` and ``flush`` as zlib's."""

    __slots__ = ("_deflater",)

    def __init__(self, deflater: Any) -> None:
        self._deflater = deflater

    def compress(self, data: bytes) -> bytes:
        try:
            return self._deflater.compress(data)  # type: ignore[no-any-return]
        finally:
            settle()

    def flush(self, mode: int = zlib.Z_FINISH) -> bytes:
        try:
            return self._deflater.flush(mode)  # type: ignore[no-any-return]
        finally:
            settle()


class SettledInflater:
    """A decompressor object of `SettledModule`: ``decompress``, ``flush``, ``unconsumed_tail``,
    ``unused_data`` and ``eof`` as zlib's."""

    __slots__ = ("_inflater",)

    def __init__(self, inflater: Any) -> None:
        self._inflater = inflater

    def decompress(self, data: bytes, max_length: int = 0) -> bytes:
        try:
            return self._inflater.decompress(data, max_length)  # type: ignore[no-any-return]
        finally:
            settle()

    def flush(self, *args: int) -> bytes:
        try:
            return self._inflater.flush(*args)  # type: ignore[no-any-return]
        finally:
            settle()

    @property
    def unconsumed_tail(self) -> bytes:
        return self._inflater.unconsumed_tail  # type: ignore[no-any-return]

    @property
    def unused_data(self) -> bytes:
        return self._inflater.unused_data  # type: ignore[no-any-return]

    @property
    def eof(self) -> bool:
        return self._inflater.eof  # type: ignore[no-any-return]
