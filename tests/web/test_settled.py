"""Every ISA-L call is followed by a settle (`web.settled`), and settling changes no byte.

ISA-L leaves the vector registers dirty, which slows the Python run after it on that
thread; how much is measured by ``benchmarks/run.py render`` (its "ISA-L unsettled" row),
never here. What is tested here is that no ISA-L call of a request goes unsettled, on
every path a page takes (rendered cold, read by a follower behind the window, inflated
for an identity client from the store), and that the settled module writes and reads
exactly what ISA-L's own does.
"""

from __future__ import annotations

import threading
import zlib
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sitemap_middleware import Sitemaps
from sitemap_middleware.web import settled
from sitemap_middleware.web.compress import Gzip

from ..conftest import SitemapClient, make_shop

isal_zlib = pytest.importorskip("isal.isal_zlib", reason="the isal package (the fast extra) is not installed")

PAGE = "/sitemap-products-1.xml"


class Calls:
    """What ran, in order, on each thread: ``"isal"`` for an ISA-L call, ``"settle"``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.by_thread: dict[int, list[str]] = {}

    def note(self, what: str) -> None:
        with self._lock:
            self.by_thread.setdefault(threading.get_ident(), []).append(what)

    def unsettled(self) -> list[int]:
        """The positions of ISA-L calls not followed at once by a settle, on any thread."""
        return [
            index
            for events in self.by_thread.values()
            for index, event in enumerate(events)
            if event == "isal" and events[index + 1 : index + 2] != ["settle"]
        ]

    def count(self, what: str) -> int:
        return sum(events.count(what) for events in self.by_thread.values())


class _Noted:
    """An ISA-L object whose every method call is noted."""

    def __init__(self, inner: Any, calls: Calls) -> None:
        self._inner = inner
        self._calls = calls

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._inner, name)
        if not callable(value):
            return value

        def noted(*args: Any, **kwargs: Any) -> Any:
            self._calls.note("isal")
            return value(*args, **kwargs)

        return noted


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Calls:
    """ISA-L's calls and the settles, noted in the order they run."""
    noted = Calls()
    real_settle = settled.settle

    def settle() -> None:
        noted.note("settle")
        real_settle()

    monkeypatch.setattr(settled, "settle", settle)
    for name in ("compressobj", "decompressobj"):
        make = getattr(isal_zlib, name)
        monkeypatch.setattr(isal_zlib, name, lambda *a, _make=make, **k: _Noted(_make(*a, **k), noted))
    decompress = isal_zlib.decompress

    def noted_decompress(*args: Any, **kwargs: Any) -> bytes:
        noted.note("isal")
        return decompress(*args, **kwargs)  # type: ignore[no-any-return]

    monkeypatch.setattr(isal_zlib, "decompress", noted_decompress)
    return noted


def shop() -> Sitemaps:
    return make_shop(3000, shape="generator", sections=["products"], compressor="isal")


def test_a_cold_page_and_its_cached_identity_copy_leave_no_isal_call_unsettled(
    make_client: Callable[..., SitemapClient], calls: Calls
) -> None:
    client = make_client(shop())
    cold = client.get(PAGE)  # rendered, gzipped as it goes, sent as identity
    gzipped = client.get(PAGE, headers={"Accept-Encoding": "gzip"})
    again = client.get(PAGE)  # identity from the stored gzip: inflated
    assert cold.status == gzipped.status == again.status == 200
    assert cold.body == again.body == zlib.decompress(gzipped.body, 16 + zlib.MAX_WBITS)
    assert cold.body.count(b"<loc>") == 3000
    assert calls.count("isal") > 3  # the render's chunks, and the copy's inflate
    assert calls.unsettled() == []


def test_the_inflaters_of_identity_readers_are_settled(calls: Calls) -> None:
    """What a reader behind the window uses (`Gzip.inflater` primed with the 32 KiB before a
    piece), what an identity copy uses (`Gzip.inflate`), and a whole inflater."""
    gzip = Gzip.named("isal")
    chunks = [f"<url><loc>https://shop.example/p/{n}</loc></url>\n".encode() * 800 for n in range(6)]
    writer = gzip.writer()
    pieces = [writer.compress(chunk) for chunk in chunks] + [writer.finish()]
    body = b"".join(pieces)
    behind = gzip.inflater(chunks[0][-32 * 1024 :])  # joins at the second piece
    assert behind.decompress(b"".join(pieces[1:])) + behind.flush() == b"".join(chunks[1:])
    assert b"".join(gzip.inflate(body)) == b"".join(chunks)
    whole = gzip.inflater()
    assert whole.decompress(body) + whole.flush() == b"".join(chunks)
    assert calls.count("isal") >= 2 * len(chunks) + 6
    assert calls.unsettled() == []


def _raw_gzip(chunks: list[bytes]) -> bytes:
    """The same gzip as `Gzip.writer` makes, with ISA-L's own module, unsettled."""
    deflater = isal_zlib.compressobj(1, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    out = [deflater.compress(chunk) + deflater.flush(zlib.Z_SYNC_FLUSH) for chunk in chunks]
    return b"".join(out) + deflater.flush(zlib.Z_FINISH)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.binary(max_size=4096), min_size=1, max_size=8))
def test_settling_changes_no_byte_written_or_read(chunks: list[bytes]) -> None:
    gzip = Gzip.named("isal")
    body = b"".join(gzip.stream(iter(chunks)))
    assert body == _raw_gzip(chunks)
    identity = b"".join(chunks)
    assert gzip.decompress(body, len(identity)) == identity
    inflater = gzip.inflater()
    assert inflater.decompress(body) + inflater.flush() == identity
    assert inflater.eof and inflater.unused_data == b"" and inflater.unconsumed_tail == b""
