"""The change log in Redis (`ChangeLog.redis`): a fleet's workers share one log, and each
change is recorded once.

The rules of the log itself run on both backends in `tests.changes.test_ledger`; here:
worker *processes* recording at once, a worker killed mid-record, a lock outlived or held
too long, Redis away, and the Redis log reporting exactly what the SQLite log reports for
any sequence of renders (hypothesis).
"""

from __future__ import annotations

import multiprocessing
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import redis
from hypothesis import given, settings
from hypothesis import strategies as st
from redis.backoff import NoBackoff
from redis.retry import Retry

from sitemap_middleware import Url
from sitemap_middleware.changes import Change, ChangeLog
from sitemap_middleware.changes.ledger import record
from sitemap_middleware.changes.model import Seen
from sitemap_middleware.errors import ChangeLogError, ConfigurationError
from sitemap_middleware.redis.changes import RedisChanges

from ..changes.test_ledger import SCOPE, Page, kinds, render, seen
from ..conftest import WAIT
from ..redis_server import Partition, RedisServer, free_port

SPAWN = multiprocessing.get_context("spawn")


def prefix() -> str:
    return f"changes-{uuid.uuid4().hex}"


def catalogue(count: int, pages: int) -> list[list[str | Url]]:
    """``count`` product URLs cut into ``pages`` pages, in order."""
    urls: list[str | Url] = [f"/p/item-{number:06d}" for number in range(count)]
    size = -(-count // pages)
    return [urls[start : start + size] for start in range(0, count, size)]


# -- worker processes ----------------------------------------------------------------------------


def record_passes(url: str, name: str, passes: list[list[Page]], start: Any, failures: Any) -> None:
    """A worker process: records every page of each pass in order, the passes in step with
    the other workers (``start``, a barrier); puts what went wrong on ``failures``."""
    try:
        log = ChangeLog.redis(url, prefix=name)
        for number, pages in enumerate(passes, 1):
            start.wait(WAIT)
            for page_number, page in enumerate(pages, 1):
                log.record(seen(page_number, page), pages=len(pages), at=1000.0 * number)
    except BaseException as error:
        failures.put(repr(error))
        raise


def hold_mid_record(url: str, name: str, page: Page, holding: Any, never: Any) -> None:
    """A worker process that compares a page, then stops before its commit (until killed)."""
    log = ChangeLog.redis(url, prefix=name, lock_timeout=0.5)
    with log.backend.ledger(SCOPE, "products") as ledger:
        record(ledger, seen(1, page), pages=1, at=2000.0)
        holding.set()
        never.wait()


def test_two_worker_processes_recording_the_same_pages_at_once_record_each_change_once(
    redis_server: RedisServer,
) -> None:
    name = prefix()
    before = catalogue(4000, 4)
    after = [list(page) for page in before]
    changed = {str(page[7]) for page in before}
    for page in after:  # one URL of each page changed in place
        page[7] = Url(str(page[7]), changefreq="daily")
    after[-1].pop()  # the last URL removed, two added at the end: no URL moves between pages
    after[-1] += ["/p/new-1", "/p/new-2"]
    passes = [before, after, after]
    start, failures = SPAWN.Barrier(2), SPAWN.Queue()
    workers = [
        SPAWN.Process(target=record_passes, args=(redis_server.url, name, passes, start, failures))
        for _ in range(2)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    assert failures.empty(), failures.get()
    assert [worker.exitcode for worker in workers] == [0, 0]
    log = ChangeLog.redis(redis_server.url, prefix=name)
    render(log, after, at=4000.0)  # a pass that surely ends after the change: the removal is due
    expected = {("changed", path) for path in changed}
    expected |= {("added", "/p/new-1"), ("added", "/p/new-2"), ("removed", "/p/item-003999")}
    changes = log.since()
    assert kinds(changes) == expected
    assert len(changes) == len(expected)  # none twice


def test_a_worker_killed_before_its_commit_writes_nothing_and_its_lock_expires(
    redis_server: RedisServer,
) -> None:
    name = prefix()
    log = ChangeLog.redis(redis_server.url, prefix=name, lock_timeout=0.5)
    render(log, [["/a", "/b"]], at=1000.0)
    holding, never = SPAWN.Event(), SPAWN.Event()
    worker = SPAWN.Process(
        target=hold_mid_record, args=(redis_server.url, name, ["/a", "/c"], holding, never)
    )
    worker.start()
    try:
        assert holding.wait(WAIT), "the worker never held the section's lock"
    finally:
        worker.kill()
        worker.join(WAIT)
    assert log.since() == []
    # The dead worker's lock expires; this record waits for it, then finds the page unrecorded.
    recorded = log.record(seen(1, ["/a", "/c"]), pages=1, at=3000.0)
    assert kinds(recorded.changes) == {("added", "/c"), ("removed", "/b")}
    assert log.since() == recorded.changes
    state = log.state(SCOPE, "products")
    assert state is not None and state.urls == 2 and state.passes == 2


def test_a_worker_that_outlived_its_lock_writes_nothing_and_says_so(redis_server: RedisServer) -> None:
    name = prefix()
    slow = ChangeLog.redis(redis_server.url, prefix=name, lock_timeout=0.2)
    render(slow, [["/a"]], at=1000.0)
    other = ChangeLog.redis(redis_server.url, prefix=name)
    recorded: list[Change] = []

    def record_meanwhile() -> None:  # waits for the lock to expire, then records
        recorded.extend(other.record(seen(1, ["/a", "/b"]), pages=1, at=3000.0).changes)

    # The commit at the block's end finds the lock gone.
    with (  # noqa: PT012
        pytest.raises(ChangeLogError, match="past lock_timeout"),
        slow.backend.ledger(SCOPE, "products") as ledger,
    ):
        record(ledger, seen(1, ["/a", "/b"]), pages=1, at=2000.0)
        meanwhile = threading.Thread(target=record_meanwhile)
        meanwhile.start()
        meanwhile.join(WAIT)
    assert kinds(recorded) == {("added", "/b")}
    assert other.since() == recorded


def test_a_lock_held_past_wait_timeout_is_a_clear_error(redis_server: RedisServer) -> None:
    name = prefix()
    holder = ChangeLog.redis(redis_server.url, prefix=name)
    waiter = ChangeLog.redis(redis_server.url, prefix=name, wait_timeout=0.2)
    with holder.backend.ledger(SCOPE, "products") as ledger:
        record(ledger, seen(1, ["/a"]), pages=1, at=1000.0)
        with pytest.raises(ChangeLogError, match="stayed locked by another worker"):
            waiter.record(seen(1, ["/a"]), pages=1, at=1000.0)
    state = waiter.state(SCOPE, "products")  # the holder committed once the waiter gave up
    assert state is not None and state.baselined


def test_a_restart_with_a_ready_client_reports_nothing_twice(redis_server: RedisServer) -> None:
    name = prefix()
    render(ChangeLog.redis(redis_server.client(), prefix=name), [["/a", "/b"]], at=1000.0)
    render(ChangeLog.redis(redis_server.client(), prefix=name), [["/a", "/c"]], at=2000.0)
    again = ChangeLog.redis(redis_server.client(), prefix=name)
    assert render(again, [["/a", "/c"]], at=3000.0) == []
    assert kinds(again.since()) == {("added", "/c"), ("removed", "/b")}


def test_logs_under_different_prefixes_are_apart(redis_server: RedisServer) -> None:
    one, two = (ChangeLog.redis(redis_server.url, prefix=prefix()) for _ in range(2))
    render(one, [["/a"]], at=1000.0)
    render(one, [["/a", "/b"]], at=2000.0)
    assert render(two, [["/a", "/b"]], at=2000.0) == []  # its own baseline
    assert two.since() == [] and kinds(one.since()) == {("added", "/b")}


# -- Redis away ----------------------------------------------------------------------------------


def test_a_redis_nobody_answers_on_is_a_change_log_error() -> None:
    log = ChangeLog.redis(f"redis://127.0.0.1:{free_port()}/0", prefix=prefix())
    with pytest.raises(ChangeLogError, match=r"the change log's Redis at 127\.0\.0\.1"):
        log.record(seen(1, ["/a"]), pages=1, at=1000.0)
    with pytest.raises(ChangeLogError):
        log.since()


def test_a_redis_that_stopped_answering_fails_a_record_within_the_socket_timeout(
    redis_server: RedisServer,
) -> None:
    partition = Partition(redis_server.port)
    try:
        client = redis.Redis(port=partition.port, socket_timeout=0.5, retry=Retry(NoBackoff(), 0))
        log = ChangeLog.redis(client, prefix=prefix())
        render(log, [["/a"]], at=1000.0)
        partition.stall()
        began = time.monotonic()
        with pytest.raises(ChangeLogError, match="Timeout"):
            log.record(seen(1, ["/a", "/b"]), pages=1, at=2000.0)
        assert partition.heard.is_set()
        assert time.monotonic() - began < 0.5 + 1.0
    finally:
        partition.cut()


def test_a_failed_record_leaves_the_section_unlocked(redis_server: RedisServer) -> None:
    log = ChangeLog.redis(redis_server.url, prefix=prefix(), wait_timeout=0.2)
    render(log, [["/a"]], at=1000.0)

    def broken() -> bytes:
        raise RuntimeError("the page could not be read")

    with pytest.raises(RuntimeError):
        log.record(Seen(SCOPE, "products", 1, b"another digest", broken), pages=1, at=2000.0)
    assert kinds(log.record(seen(1, ["/b"]), pages=1, at=3000.0).changes) == {
        ("added", "/b"),
        ("removed", "/a"),
    }


# -- configuration -------------------------------------------------------------------------------


def test_without_the_redis_extra_the_error_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    for module in [name for name in sys.modules if name == "redis" or name.startswith("redis.")]:
        monkeypatch.setitem(sys.modules, module, None)
    monkeypatch.delitem(sys.modules, "sitemap_middleware.redis.changes", raising=False)
    monkeypatch.delitem(sys.modules, "sitemap_middleware.redis", raising=False)
    with pytest.raises(ConfigurationError, match=r"sitemap-middleware\[redis\]"):
        ChangeLog.redis("redis://127.0.0.1:6379/0")


@pytest.mark.parametrize(
    ("argument", "options", "message"),
    [
        pytest.param("", {}, "a redis:// URL or a redis.Redis", id="empty-url"),
        pytest.param(b"redis://127.0.0.1", {}, "a redis:// URL or a redis.Redis", id="bytes"),
        pytest.param("redis://127.0.0.1:1/0", {"prefix": ""}, "prefix", id="empty-prefix"),
        pytest.param("redis://127.0.0.1:1/0", {"lock_timeout": 0}, "lock_timeout", id="lock-timeout"),
        pytest.param("redis://127.0.0.1:1/0", {"wait_timeout": -1}, "wait_timeout", id="wait-timeout"),
    ],
)
def test_a_misconfigured_redis_log_fails_at_construction(argument: Any, options: Any, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        ChangeLog.redis(argument, **options)


def test_a_client_that_decodes_responses_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="decode_responses=False"):
        ChangeLog.redis(redis.Redis(port=free_port(), decode_responses=True))


# -- the same answers as SQLite, whatever is rendered -------------------------------------------

PATHS = ["/a", "/b", "/c", "/d", "/e", "/f", "/s?q=1&x=<2>", "/é", "/g", "/h"]
# A page: (path, variant) pairs; a render: pages, in the order recorded, and whether the plan is known.
pages_of = st.lists(
    st.lists(st.tuples(st.sampled_from(range(len(PATHS))), st.integers(0, 3)), max_size=4),
    min_size=1,
    max_size=3,
)
renders = st.lists(
    st.tuples(pages_of, st.permutations(range(3)), st.integers(1, 3), st.booleans()), min_size=1, max_size=6
)


def built(pages: list[list[tuple[int, int]]]) -> list[list[str | Url]]:
    """The pages, each path on one page at most (the first), its variant a priority or a lastmod."""
    placed: set[int] = set()
    out: list[list[str | Url]] = []
    for page in pages:
        urls: list[str | Url] = []
        for index, variant in page:
            if index not in placed:
                placed.add(index)
                if variant == 3:
                    urls.append(Url(PATHS[index], lastmod="2026-12-01"))
                else:
                    urls.append(PATHS[index] if variant == 0 else Url(PATHS[index], priority=variant / 4))
        out.append(urls)
    return out


def canonical(changes: list[Change]) -> list[Change]:
    """The order of one record's changes is the algorithm's walk, not a rule: by time, then loc."""
    return sorted(changes, key=lambda change: (change.at, change.loc, change.kind))


@settings(max_examples=30, deadline=None)
@given(renders)
def test_the_redis_log_reports_what_the_sqlite_log_reports(
    redis_server: RedisServer, steps: list[tuple[list[list[tuple[int, int]]], Sequence[int], int, bool]]
) -> None:
    with tempfile.TemporaryDirectory() as directory:
        sqlite = ChangeLog.sqlite(Path(directory) / "changes.sqlite3")
        on_redis = ChangeLog.redis(redis_server.url, prefix=prefix())
        # A section of more pages than the claim carries: digests and the pass asked one by one.
        asked = ChangeLog(RedisChanges(redis_server.client(), prefix=prefix(), prefetch_pages=0))
        for at, (raw, order, recorded, known) in enumerate(steps, 1):
            pages = built(raw)
            numbers = [number for number in order if number < len(pages)][:recorded]
            for number in numbers:
                page = seen(number + 1, pages[number])
                plan = len(pages) if known else None
                one = sqlite.record(page, pages=plan, at=1000.0 * at)
                for other in (on_redis, asked):
                    two = other.record(page, pages=plan, at=1000.0 * at)
                    assert (canonical(one.changes), one.completed) == (canonical(two.changes), two.completed)
        for other in (on_redis, asked):
            logged = other.since()
            assert canonical(sqlite.since()) == canonical(logged)
            assert [change.at for change in logged] == sorted(change.at for change in logged)  # oldest first
            assert sqlite.state(SCOPE, "products") == other.state(SCOPE, "products")
            assert sqlite.counts(2500.0, SCOPE, "products") == other.counts(2500.0, SCOPE, "products")
        sqlite.backend.close()  # type: ignore[attr-defined]
