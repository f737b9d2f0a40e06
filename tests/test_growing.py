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

from sitemap_middleware.caching.growing import Growing, SyncReader
from sitemap_middleware.errors import ProviderError


class Chunks:
    """A `Production` of ``count`` chunks; ``hold`` makes a chunk wait until released."""

    def __init__(self, count: int, *, fail_at: int | None = None, hold: int | None = None) -> None:
        self.count, self.fail_at, self.hold = count, fail_at, hold
        self.made = 0
        self.compressor = zlib.compressobj(wbits=31)
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
        return chunk, self.compressor.compress(chunk) + self.compressor.flush(zlib.Z_SYNC_FLUSH)

    def tail(self) -> bytes:
        return self.compressor.flush(zlib.Z_FINISH)

    def close(self, completed: bool) -> None:
        self.closed.append(completed)


def identity_of(count: int) -> bytes:
    return b"".join(f"<chunk {n}/>".encode() * 50 for n in range(count))


def test_readers_of_either_representation_read_the_whole_document_at_their_own_pace() -> None:
    production = Chunks(5)
    ended = []
    growing = Growing("page|p|1", production, ended.append)
    early, gzipped = growing.reader(gzip=False), growing.reader(gzip=True)
    growing.step()
    assert early.take() == (identity_of(1), False)
    late = growing.join(gzip=False)  # joins after the first chunk: reads from the start all the same
    assert late is not None
    while growing.step():
        pass
    assert early.take() == (identity_of(5)[len(identity_of(1)) :], False)
    assert early.take() == (b"", True)
    assert late.take() == (identity_of(5), False)
    body, _ = gzipped.take()
    assert zlib.decompress(body, wbits=31) == identity_of(5)
    assert production.closed == [True] and ended == [growing]
    assert growing.join(gzip=True) is None  # over: the store answers from now on


def test_an_error_reaches_each_reader_after_what_came_before_it() -> None:
    production = Chunks(5, fail_at=2)
    growing = Growing("page|p|1", production, lambda _: None)
    reader = growing.reader(gzip=False)
    growing.step(), growing.step()
    with pytest.raises(ProviderError):
        growing.step()
    assert reader.take() == (identity_of(2), False)
    with pytest.raises(ProviderError, match="went away"):
        reader.take()
    assert production.closed == [False]


def test_the_render_stops_when_its_last_reader_leaves() -> None:
    production = Chunks(5)
    growing = Growing("page|p|1", production, lambda _: None)
    first, second = growing.reader(gzip=True), growing.reader(gzip=False)
    growing.step()
    first.close()
    assert growing.step()  # one reader is left: the render goes on
    second.close()
    assert not growing.step()
    assert growing.ended and production.closed == [False]  # closed, and not complete


def test_a_render_cut_while_a_step_runs_is_closed_by_that_step_when_it_returns() -> None:
    production = Chunks(5, hold=1)
    growing = Growing("page|p|1", production, lambda _: None)
    reader = growing.reader(gzip=False)
    growing.step()
    stuck = threading.Thread(target=growing.step)
    stuck.start()
    assert production.holding.wait(10)
    growing.fail(ProviderError.stalled(1.0))  # the deadline gave up on that thread
    assert production.closed == []  # never closed under a step that still runs
    assert reader.take() == (identity_of(1), False)
    with pytest.raises(ProviderError, match="produced nothing"):
        reader.take()
    production.release.set()
    stuck.join(10)
    assert production.closed == [False]


def test_a_sync_reader_makes_the_bytes_it_needs_when_no_other_thread_does() -> None:
    production = Chunks(3)
    growing = Growing("page|p|1", production, lambda _: None)
    body = SyncReader(growing.reader(gzip=False), lambda step: step(), stall_after=5.0)
    assert b"".join(body) == identity_of(3)
    body.close()
    assert production.closed == [True]


def test_a_sync_reader_whose_client_leaves_first_ends_a_render_nobody_reads() -> None:
    production = Chunks(3)
    growing = Growing("page|p|1", production, lambda _: None)
    body = SyncReader(growing.reader(gzip=False), lambda step: step(), stall_after=5.0)
    assert next(body) == identity_of(1)
    body.close()
    assert growing.ended and production.closed == [False]
