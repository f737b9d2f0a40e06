"""A growing document (caching/growing.py): one render, each reader at its own position.

These hold the document's own rules, below any adapter: every reader gets the same bytes
in either representation, an error reaches each reader after what came before it, the
render stops when its last reader leaves, and a render cut by its deadline is closed by
the step still running in the abandoned thread, never under it.
"""

from __future__ import annotations

import threading
import zlib

import pytest

from sitemap_middleware.caching.growing import MOST, Growing, Reader, SyncReader
from sitemap_middleware.errors import ProviderError
from sitemap_middleware.web.compress import Gzip

GZIP = Gzip.named("zlib")


class Chunks:
    """A `Production` of ``count`` chunks; ``hold`` makes a chunk wait until released."""

    def __init__(self, count: int, *, fail_at: int | None = None, hold: int | None = None) -> None:
        self.count, self.fail_at, self.hold = count, fail_at, hold
        self.made = 0
        self.compressor = zlib.compressobj(wbits=31)
        self.pieces: list[bytes] = []
        self.trailer = b""
        self.closed: list[bool] = []
        self.holding = threading.Event()
        self.release = threading.Event()

    def next_parts(self) -> tuple[bytes, bytes] | None:
        if self.made == self.hold:
            self.holding.set()
            assert self.release.wait(10)
        if self.made == self.fail_at:
            raise ProviderError("the database went away")
        if self.made == self.count:
            return None
        chunk = f"<chunk {self.made}/>".encode() * 50
        self.made += 1
        piece = self.compressor.compress(chunk) + self.compressor.flush(zlib.Z_SYNC_FLUSH)
        self.pieces.append(piece)
        return chunk, piece

    def tail(self) -> bytes:
        self.trailer = self.compressor.flush(zlib.Z_FINISH)
        return self.trailer

    def body(self) -> bytes:
        return b"".join(self.pieces) + self.trailer

    def close(self, completed: bool) -> None:
        self.closed.append(completed)


def identity_of(count: int) -> bytes:
    return b"".join(f"<chunk {n}/>".encode() * 50 for n in range(count))


def read_all(reader: Reader) -> bytes:
    parts = []
    while (data := reader.take()) is not None:
        assert data, "nothing left to wait for in a complete document"
        assert len(data) <= MOST
        parts.append(data)
    return b"".join(parts)


def test_readers_of_either_representation_read_the_whole_document_at_their_own_pace() -> None:
    production = Chunks(5)
    ended = []
    growing = Growing("page|p|1", production, ended.append, GZIP.inflater)
    early, gzipped = growing.reader(gzip=False), growing.reader(gzip=True)
    growing.step()
    assert early.take() == identity_of(1)
    assert early.take() == b""  # nothing new yet
    late = growing.join(gzip=False)  # joins after the first chunk: reads from the start all the same
    behind = growing.join(gzip=False)
    assert late is not None and behind is not None
    assert behind.take() == identity_of(1)  # it is behind when the render completes
    while growing.step():
        pass
    assert read_all(early) == identity_of(5)[len(identity_of(1)) :]
    assert read_all(late) == identity_of(5)
    assert identity_of(1) + read_all(behind) == identity_of(5)  # from the stored body, skipping what it had
    assert zlib.decompress(read_all(gzipped), wbits=31) == identity_of(5)
    assert production.closed == [True] and ended == [growing]
    assert growing.join(gzip=True) is None  # over: the store answers from now on


def test_a_reader_is_handed_a_long_document_a_piece_at_a_time() -> None:
    production = Chunks(4000)  # ~3.7 MB identity
    growing = Growing("page|p|1", production, lambda _: None, GZIP.inflater)
    during, after = growing.reader(gzip=False), growing.reader(gzip=False)
    for _ in range(2000):
        growing.step()
    first = during.take()
    assert first is not None and 0 < len(first) <= MOST
    while growing.step():
        pass
    assert first + read_all(during) == identity_of(4000)
    assert read_all(after) == identity_of(4000)


def test_an_error_reaches_each_reader_after_what_came_before_it() -> None:
    production = Chunks(5, fail_at=2)
    growing = Growing("page|p|1", production, lambda _: None, GZIP.inflater)
    reader = growing.reader(gzip=False)
    growing.step(), growing.step()
    with pytest.raises(ProviderError):
        growing.step()
    assert reader.take() == identity_of(2)
    with pytest.raises(ProviderError, match="went away"):
        reader.take()
    assert production.closed == [False]


def test_the_render_stops_when_its_last_reader_leaves() -> None:
    production = Chunks(5)
    growing = Growing("page|p|1", production, lambda _: None, GZIP.inflater)
    first, second = growing.reader(gzip=True), growing.reader(gzip=False)
    growing.step()
    first.close()
    assert growing.step()  # one reader is left: the render goes on
    second.close()
    assert not growing.step()
    assert growing.ended and production.closed == [False]  # closed, and not complete


def test_a_render_cut_while_a_step_runs_is_closed_by_that_step_when_it_returns() -> None:
    production = Chunks(5, hold=1)
    growing = Growing("page|p|1", production, lambda _: None, GZIP.inflater)
    reader = growing.reader(gzip=False)
    growing.step()
    stuck = threading.Thread(target=growing.step)
    stuck.start()
    assert production.holding.wait(10)
    growing.fail(ProviderError.stalled(1.0))  # the deadline gave up on that thread
    assert production.closed == []  # never closed under a step that still runs
    assert reader.take() == identity_of(1)
    with pytest.raises(ProviderError, match="produced nothing"):
        reader.take()
    production.release.set()
    stuck.join(10)
    assert production.closed == [False]


def test_a_sync_reader_makes_the_bytes_it_needs_when_no_other_thread_does() -> None:
    production = Chunks(3)
    growing = Growing("page|p|1", production, lambda _: None, GZIP.inflater)
    body = SyncReader(growing.reader(gzip=False), lambda step: step(), stall_after=5.0)
    assert b"".join(body) == identity_of(3)
    body.close()
    assert production.closed == [True]


def test_a_sync_reader_whose_client_leaves_first_ends_a_render_nobody_reads() -> None:
    production = Chunks(3)
    growing = Growing("page|p|1", production, lambda _: None, GZIP.inflater)
    body = SyncReader(growing.reader(gzip=False), lambda step: step(), stall_after=5.0)
    assert next(body) == identity_of(1)
    body.close()
    assert growing.ended and production.closed == [False]
