"""A growing document (caching/growing.py): one render, each reader at its own position.

These hold the document's own rules, below any adapter: every reader gets the same bytes
in either representation, an error reaches each reader after what came before it, the
render stops when its last reader leaves, and a render cut by its deadline is closed by
the step still running in the abandoned thread, never under it. An identity reader that
keeps up is sent the chunks as made, inflating nothing; one behind the render's window
inflates from where it is, whatever the interleaving, and holds no chunk made after it.
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
import tracemalloc
import zlib
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sitemap_middleware.caching import growing as growing_module
from sitemap_middleware.caching.growing import AHEAD, MOST, Growing, Reader, SyncReader
from sitemap_middleware.concurrency.deadlines import drop_unclaimed
from sitemap_middleware.errors import ProviderError
from sitemap_middleware.web.compress import Gzip
from sitemap_middleware.web.replies import Reply

GZIP = Gzip.named("zlib")
COMPRESSORS = [Gzip.named("zlib"), Gzip.named("isal")]  # the test env has the fast extra


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


class Made:
    """``count`` chunks of 100,000 bytes, each made when asked for: nothing holds them."""

    def __init__(self, count: int) -> None:
        self.count = count

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, index: int) -> bytes:
        return xml_chunk(index * 2500, 100_000)


class Pieces:
    """A `Production` of the given identity chunks, gzipped as a render's are (`GzipWriter`)."""

    def __init__(self, chunks: list[bytes] | Made, gzip: Gzip = GZIP) -> None:
        self.chunks = chunks
        self.writer = gzip.writer()
        self.pieces: list[bytes] = []
        self.closed: list[bool] = []

    def next_parts(self) -> tuple[bytes, bytes] | None:
        if len(self.pieces) == len(self.chunks):
            return None
        chunk = self.chunks[len(self.pieces)]
        self.pieces.append(self.writer.compress(chunk))
        return chunk, self.pieces[-1]

    def tail(self) -> bytes:
        self.pieces.append(self.writer.finish())
        return self.pieces[-1]

    def body(self) -> bytes:
        return b"".join(self.pieces)

    def close(self, completed: bool) -> None:
        self.closed.append(completed)


def xml_chunk(first: int, size: int) -> bytes:
    """``size`` bytes of sitemap-like XML from URL ``first`` on: alike enough that deflate
    refers across chunks, varied enough that a wrong dictionary shows."""
    lines = (
        f"<url><loc>https://shop.example/p/{n}?c={n % 7}</loc></url>\n"
        for n in range(first, first + size // 40 + 1)
    )
    text = "".join(lines).encode()
    return text[:size]


class Counting:
    """An inflater factory (`Gzip.inflater`) that counts the decompressors it made."""

    def __init__(self, gzip: Gzip = GZIP) -> None:
        self.gzip = gzip
        self.made: list[bytes | None] = []  # the history each one started from

    def __call__(self, history: bytes | None = None) -> Any:
        self.made.append(history)
        return self.gzip.inflater() if history is None else self.gzip.inflater(history)


def test_an_identity_reader_that_keeps_up_is_sent_each_chunk_as_made_and_inflates_nothing() -> None:
    chunks = [xml_chunk(n * 1000, 50_000 + n) for n in range(6)]
    inflaters = Counting()
    growing = Growing("page|p|1", Pieces(chunks), lambda _: None, inflaters)
    reader = growing.reader(gzip=False)
    taken = []
    for _ in chunks:
        growing.step()
        taken.append(reader.take())
    assert growing.step() and growing.ended  # the end: the tail, stored
    assert taken == chunks
    assert reader.take() is None
    assert inflaters.made == []


def test_a_sync_reader_of_identity_inflates_nothing() -> None:
    chunks = [xml_chunk(n * 1000, 70_000) for n in range(4)]
    inflaters = Counting()
    growing = Growing("page|p|1", Pieces(chunks), lambda _: None, inflaters)
    body = SyncReader(growing.reader(gzip=False), lambda step: step(), stall_after=5.0)
    assert list(body) == chunks
    body.close()
    assert inflaters.made == []


def test_an_identity_reader_behind_the_window_inflates_from_where_it_is() -> None:
    chunks = [xml_chunk(n * 3000, 100_000) for n in range(8)]
    inflaters = Counting()
    growing = Growing("page|p|1", Pieces(chunks), lambda _: None, inflaters, window=250_000)
    slow = growing.reader(gzip=False)
    fast = growing.join(gzip=True)
    assert fast is not None
    growing.step(), growing.step()
    first = slow.take()  # chunks 0 and 1, as made
    for _ in range(6):
        growing.step()  # its window holds 250,000 bytes: chunk 2 is gone by now
    during = slow.take()  # inflated from the gzip parts, as the render goes on
    assert during
    while growing.step():
        pass
    rest = read_all(slow)  # from the stored body
    assert first + during + rest == b"".join(chunks)
    assert len(inflaters.made) == 1 and inflaters.made[0] == b"".join(chunks[:2])[-32 * 1024 :]


def test_an_identity_reader_behind_in_a_long_chunk_reads_on_to_the_end() -> None:
    chunks = [xml_chunk(0, 30_000), xml_chunk(750, 600_000), xml_chunk(15_750, 600_000)]
    growing = Growing("page|p|1", Pieces(chunks), lambda _: None, GZIP.inflater, window=700_000)
    reader = growing.reader(gzip=False)
    growing.step(), growing.step()
    taken = [reader.take(), reader.take()]  # chunk 0, then the first piece of chunk 1
    assert taken == [chunks[0], chunks[1][:MOST]]
    while growing.step():
        pass
    read: list[bytes] = []
    # In a thread: a take that never ends (the trailer after the last block, inflated
    # again and again) fails the test rather than hanging it.
    worker = threading.Thread(target=lambda: read.append(read_all(reader)), daemon=True)
    worker.start()
    worker.join(10)
    assert read, "the reader never got to the end"
    assert taken[0] + taken[1] + read[0] == b"".join(chunks)


Action = tuple[str, int]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sizes=st.lists(
        st.sampled_from([1, 100, 40_000, 200_000, 300_000, 600_000]) | st.integers(1, 600_000),
        min_size=1,
        max_size=6,
    ),
    window=st.sampled_from([1, 40_000, 300_000, 2_000_000]),
    compressor=st.sampled_from(COMPRESSORS),
    actions=st.lists(
        st.tuples(
            st.sampled_from(["step", "take", "join-identity", "join-gzip", "close"]), st.integers(0, 5)
        ),
        max_size=40,
    ),
)
def test_every_reader_reads_the_whole_document_whatever_the_interleaving(
    sizes: list[int], window: int, compressor: Gzip, actions: list[Action]
) -> None:
    chunks, first = [], 0
    for size in sizes:
        chunks.append(xml_chunk(first, size))
        first += size // 40
    document = b"".join(chunks)
    production = Pieces(chunks, compressor)
    growing = Growing("page|p|1", production, lambda _: None, compressor.inflater, window=window)
    readers: list[tuple[Reader, list[bytes]]] = [(growing.reader(gzip=False), [])]
    closed: set[int] = set()
    for action, which in actions:
        if action == "step":
            growing.step()
        elif action.startswith("join"):
            joined = growing.join(gzip=action == "join-gzip")
            if joined is not None:
                readers.append((joined, []))
        elif action == "close" and len(closed) < len(readers) - 1 and which % len(readers) not in closed:
            closed.add(which % len(readers))  # one reader, at least, reads it all
            readers[which % len(readers)][0].close()
        elif action == "take" and which % len(readers) not in closed:
            reader, taken = readers[which % len(readers)]
            if (data := reader.take()) is not None:
                assert len(data) <= MOST
                taken.append(data)
    while growing.step():
        pass
    assert production.closed == [True]
    for number, (reader, taken) in enumerate(readers):
        if number in closed:
            continue
        read = b"".join(taken) + read_all(reader)
        assert (zlib.decompress(read, wbits=31) if reader.gzip else read) == document


def test_a_slow_identity_reader_holds_no_chunk_made_after_it() -> None:
    made = Made(60)  # 6 MB identity, made as asked: what the render holds is what is traced
    growing = Growing("page|p|1", Pieces(made), lambda _: None, GZIP.inflater)
    slow, fast = growing.reader(gzip=False), growing.join(gzip=False)
    assert fast is not None
    growing.step()
    assert slow.take() == made[0]  # then it stops reading
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        while growing.step():
            fast.take()
        held = tracemalloc.get_traced_memory()[0] - start
    finally:
        tracemalloc.stop()
    assert held < 2 * 1024 * 1024  # the window, at most (1 MiB), and the gzip body


def test_an_identity_reader_the_render_left_behind_holds_no_window() -> None:
    made = Made(40)  # 4 MB identity
    production = Pieces(made)
    growing = Growing("page|p|1", production, lambda _: None, GZIP.inflater, window=300_000)
    stuck, driver = growing.reader(gzip=False), growing.join(gzip=True)
    assert driver is not None
    growing.step()
    assert stuck.take() == made[0]  # then it stops reading, at the front
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        for _ in range(30):  # 3 MB past it: far beyond its window
            growing.step()
            driver.take()
        gzip = sum(len(piece) for piece in production.pieces[1:])
        held = tracemalloc.get_traced_memory()[0] - start - gzip
    finally:
        tracemalloc.stop()
    assert held < 100_000  # no identity chunk is kept for a reader that can never take it
    while growing.step():
        pass
    assert read_all(stuck) == b"".join(made[n] for n in range(1, 40))


def test_a_dropped_reply_ends_its_render_for_the_readers_that_joined_it_meanwhile() -> None:
    """A render cut at its deadline goes on in its thread and may still make its reply; the
    thread drops it (`deadlines.drop_unclaimed`). A follower that joined the render before
    then must get the error, never wait on a render that nobody will step again."""
    production = Chunks(5)
    ended: list[Growing] = []
    growing = Growing("page|p|1", production, ended.append, GZIP.inflater)
    reply = Reply(200, [], growing.reader(gzip=False), growing=growing)
    follower = growing.join(gzip=True)
    assert follower is not None
    drop_unclaimed(reply)
    with pytest.raises(ProviderError, match="gave up"):
        follower.take()
    assert ended == [growing] and production.closed == [False]
    assert growing.join(gzip=False) is None  # ended: nobody joins it any more


class Clock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_waiting_reader_is_woken_by_a_takes_worth_of_chunks_not_by_each_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each wake of a reader on an event loop makes the loop's thread take the interpreter
    from the render's: one per chunk made a cold ASGI page pay hundreds of hand-overs. A
    reader that has had nothing is woken by the first chunk; after that, by `MOST` bytes
    made, by `WAKE_AFTER` seconds passing (a slow provider's chunks still flow), or the end."""
    # Long enough that the loop's own look (the test below) never comes within this test,
    # however slow the machine: the render's clock alone is moved.
    monkeypatch.setattr(growing_module, "WAKE_AFTER", 600.0)
    clock = Clock()
    production = Chunks(2000)
    growing = Growing("page|p|1", production, lambda _: None, GZIP.inflater, clock=clock)
    reader = growing.reader(gzip=True)
    longest = len(identity_of(2000)) - len(identity_of(1999))

    async def run() -> None:
        async def waits() -> asyncio.Task[None]:
            task = asyncio.ensure_future(reader.wait_async(5.0))
            await asyncio.sleep(0)  # registered
            return task

        async def woken(task: asyncio.Task[None]) -> bool:
            for _ in range(3):
                await asyncio.sleep(0)
            return task.done()

        first = await waits()
        assert growing.step()
        assert await woken(first), "the first chunk wakes a reader that has had nothing"
        read_all_made(reader)

        batch = await waits()
        start = growing.made
        while growing.made - start + longest < MOST:  # the next chunk leaves it short of MOST
            assert growing.step()
            assert not await woken(batch), f"woken after {growing.made - start:,} bytes"
        while growing.made - start < MOST:
            assert growing.step()
        assert await woken(batch), "a take's worth of chunks wakes it"
        read_all_made(reader)

        slow = await waits()
        assert growing.step()
        assert not await woken(slow)
        clock.now += growing_module.WAKE_AFTER
        assert growing.step()
        assert await woken(slow), "a chunk made WAKE_AFTER seconds after it waited wakes it"
        read_all_made(reader)

        last = await waits()
        while growing.step():
            pass
        assert await woken(last), "the end wakes it"

    asyncio.run(run())


def read_all_made(reader: Reader) -> None:
    """Take what is there, as a client that keeps up does before it waits again."""
    while reader.take():
        pass


def test_a_chunk_too_small_to_wake_a_reader_is_sent_within_wake_after_though_nothing_follows() -> None:
    """A slow provider's one chunk, made just after its reader began to wait, then nothing for
    long: the reader is not left waiting for more, it is woken once `WAKE_AFTER` has passed."""
    growing = Growing("page|p|1", Chunks(10), lambda _: None, GZIP.inflater)
    reader = growing.reader(gzip=True)
    assert growing.step()
    read_all_made(reader)

    async def run() -> float:
        task = asyncio.ensure_future(reader.wait_async(5.0))
        await asyncio.sleep(0)  # registered
        started = time.monotonic()
        assert growing.step()  # made at once: too few bytes, too soon, to wake it
        await asyncio.wait_for(task, 2.0)
        return time.monotonic() - started

    assert asyncio.run(run()) < 2.0
    assert reader.take(), "the chunk it was woken for"


def test_a_waiting_task_is_woken_with_the_documents_lock_released() -> None:
    """Waking a loop writes to its socket, which lets the interpreter go: a loop woken under
    the document's lock would find it held by the render, and wait for the render before it
    could send a byte. Every wake (a chunk, the end, a failure) comes after the lock is let go."""
    growing = Growing("page|p|1", Chunks(3), lambda _: None, GZIP.inflater)
    reader = growing.reader(gzip=True)
    held_at_wake: list[bool] = []

    def held_by_another_thread() -> bool:
        taken: list[bool] = []

        def probe() -> None:
            taken.append(growing._changed.acquire(blocking=False))
            if taken[0]:
                growing._changed.release()

        thread = threading.Thread(target=probe)
        thread.start()
        thread.join()
        return not taken[0]

    async def run() -> None:
        loop = asyncio.get_running_loop()
        wake = loop.call_soon_threadsafe

        def recorded(callback: Any, *args: Any) -> Any:
            held_at_wake.append(held_by_another_thread())
            return wake(callback, *args)

        loop.call_soon_threadsafe = recorded  # type: ignore[method-assign]
        while True:
            task = asyncio.ensure_future(reader.wait_async(5.0))
            await asyncio.sleep(0)  # registered
            stepped = await asyncio.to_thread(growing.step)
            await asyncio.wait_for(task, 2.0)
            read_all_made(reader)
            if not stepped:
                break

    asyncio.run(run())
    assert held_at_wake, "the reader was woken through its loop"
    assert not any(held_at_wake), f"woken under the lock: {held_at_wake}"


# -- a document its store will not keep --------------------------------------------------------


def incompressible(count: int) -> list[bytes]:
    return [random.Random(n).randbytes(100_000) for n in range(count)]


def test_a_render_its_store_will_not_keep_goes_no_faster_than_its_fastest_reader() -> None:
    growing = Growing("page|p|1", Pieces(incompressible(12)), lambda _: None, GZIP.inflater, keeps=150_000)
    stopped, fast = growing.reader(gzip=True), growing.reader(gzip=False)
    made = 0
    while not growing.waits_for_readers():
        assert growing.step()
        made += 1
    # Past what the store keeps, and AHEAD past both readers: it waits.
    assert made * 100_000 > max(150_000, AHEAD) and made < 12
    while fast.take():  # the fast reader catches up: the render goes on
        pass
    assert not growing.waits_for_readers()
    assert growing.step()
    fast.close()  # only the reader that stopped is left, AHEAD behind
    assert growing.waits_for_readers()
    stopped.close()  # nobody reads: the next step ends the render
    assert not growing.waits_for_readers()
    assert not growing.step() and growing.ended


@pytest.mark.parametrize("keeps", [None, 12 * 100_100], ids=["any-size", "the-whole-document"])
def test_a_render_its_store_keeps_never_waits_for_readers(keeps: int | None) -> None:
    growing = Growing("page|p|1", Pieces(incompressible(12)), lambda _: None, GZIP.inflater, keeps=keeps)
    stopped = growing.reader(gzip=True)
    while growing.step():
        assert not growing.waits_for_readers()
    assert growing.ended
    assert len(read_all(stopped)) > 12 * 100_000  # complete, stored, read by the one that stopped
