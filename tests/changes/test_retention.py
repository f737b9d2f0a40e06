"""The change log keeps what changed for `keep` (90 days by default), then trims it: never a
change a consumer has not acknowledged, never silently from under `since`, on each backend."""

from __future__ import annotations

import logging
import sqlite3
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sitemap_middleware import Sitemaps
from sitemap_middleware.changes import ChangeLog, Trimmed
from sitemap_middleware.changes import log as log_module
from sitemap_middleware.errors import ChangeLogError, ConfigurationError

from ..conftest import BASE, WAIT, Shelf, wait_until
from ..servers import Server
from .test_ledger import render, seen

DAY = 86_400.0


def moment(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def locs(changes: object) -> list[str]:
    return [change.loc.removeprefix(BASE) for change in changes]  # type: ignore[attr-defined]


@pytest.fixture
def log(reopen: Callable[[], ChangeLog]) -> ChangeLog:
    """A baselined log with two changes after it, a day apart, on each backend."""
    log = reopen()
    render(log, [["/a"]], at=1 * DAY)  # the baseline: nothing reported
    render(log, [["/a", "/1"]], at=2 * DAY)  # /1 added, and the page's bytes changed
    render(log, [["/a", "/1", "/2"]], at=3 * DAY)
    return log


def test_a_trim_removes_what_was_recorded_before_its_bound_and_keeps_the_rest(log: ChangeLog) -> None:
    trimmed = log.trim(moment(2.5 * DAY))
    assert trimmed.removed == 2  # /1's change and its page's
    assert trimmed.held == ()
    assert locs(log.since()) == ["/2"]
    assert locs(log.since(moment(2.5 * DAY))) == ["/2"]
    assert log.horizon() == moment(2 * DAY)
    assert log.trim(moment(2.5 * DAY)).removed == 0  # nothing left to trim there


def test_since_a_time_before_what_was_trimmed_is_an_error_not_a_shorter_answer(log: ChangeLog) -> None:
    log.trim(moment(2.5 * DAY))
    with pytest.raises(ChangeLogError, match="trimmed"):
        log.since(moment(1.5 * DAY))
    assert locs(log.since(moment(2 * DAY))) == ["/2"]  # everything after the horizon is kept


def test_what_a_consumer_has_not_acknowledged_stays_however_old(log: ChangeLog) -> None:
    log.subscribe("hook")
    render(log, [["/a", "/1", "/2", "/3"]], at=4 * DAY)
    delivery = log.claim("hook", "worker")
    assert delivery is not None and locs(delivery.changes) == ["/3"]
    assert log.acknowledge(delivery)
    render(log, [["/a", "/1", "/2", "/3", "/4"]], at=5 * DAY)
    trimmed = log.trim(moment(6 * DAY))
    assert trimmed.removed == 6  # /1, /2 (from before it subscribed), /3, and their pages
    assert trimmed.held == ("hook",)  # /4 is still to be delivered
    assert locs(log.since()) == ["/4"]
    rest = log.claim("hook", "worker")
    assert rest is not None and locs(rest.changes) == ["/4"] and len(rest.pages) == 1
    assert log.acknowledge(rest)
    last = log.trim(moment(6 * DAY))
    assert last.removed == 2 and last.held == ()  # /4 and its page
    assert log.since() == []


def test_a_consumer_unsubscribed_holds_nothing_and_is_delivered_nothing(log: ChangeLog) -> None:
    log.subscribe("gone")
    render(log, [["/a", "/1", "/2", "/3"]], at=4 * DAY)
    assert log.trim(moment(5 * DAY)).held == ("gone",)
    log.unsubscribe("gone")
    log.unsubscribe("never-was")  # nothing to drop
    assert log.trim(moment(5 * DAY)).held == ()
    assert log.since() == []
    with pytest.raises(LookupError, match="subscribe it first"):
        log.claim("gone", "worker")


def test_a_trim_names_the_consumer_that_stops_it_then_the_next(log: ChangeLog) -> None:
    log.subscribe("slowest")
    render(log, [["/a", "/1", "/2", "/3"]], at=4 * DAY)
    log.subscribe("slower")
    render(log, [["/a", "/1", "/2", "/3", "/4"]], at=5 * DAY)
    assert log.trim(moment(6 * DAY)).held == ("slowest",)  # /3 stays for it, and /4 for both
    log.unsubscribe("slowest")
    trimmed = log.trim(moment(6 * DAY))
    assert trimmed.removed == 2 and trimmed.held == ("slower",)  # /3 and its page went
    assert locs(log.since()) == ["/4"]


def test_a_trim_goes_in_steps_to_the_end_and_names_who_holds_the_rest(
    log: ChangeLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(log_module, "_TRIM_STEP", 3)
    for day in range(4, 9):  # /3 to /7, each with its page's change
        render(log, [["/a", *(f"/{n}" for n in range(1, day))]], at=day * DAY)
    log.subscribe("hook")
    render(log, [["/a", *(f"/{n}" for n in range(1, 9))]], at=9 * DAY)
    trimmed = log.trim(moment(10 * DAY))
    assert trimmed.removed == 14 and trimmed.held == ("hook",)  # /1 to /7 and their pages, in 5 steps
    assert locs(log.since()) == ["/8"]
    assert log.horizon() == moment(8 * DAY)


def test_a_trim_on_the_logs_thread_lets_a_waiting_page_be_recorded_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(log_module, "_TRIM_STEP", 1)
    log = ChangeLog.sqlite(tmp_path / "changes.sqlite3", keep=timedelta(days=1))
    render(log, [["/a"]], at=1 * DAY)
    render(log, [["/a", "/1", "/2", "/3"]], at=2 * DAY)  # three URLs and their page: four rows

    def rows() -> int:
        with sqlite3.connect(tmp_path / "changes.sqlite3") as connection:
            return int(connection.execute("SELECT COUNT(*) FROM changes").fetchone()[0])

    queued = threading.Event()
    seen_by_the_next: list[int] = []

    def first() -> None:  # two rows more; then a trim is due, a row a step
        queued.wait(WAIT)
        log.record(seen(1, ["/a", "/1", "/2", "/3", "/4"]), pages=1, at=5 * DAY)

    assert log.record_later(first)
    assert log.record_later(lambda: seen_by_the_next.append(rows()))
    queued.set()
    log.flush()
    assert seen_by_the_next == [6 - 1]  # one step, then the waiting page went first
    assert log.record_later(lambda: None)  # the trim goes on after the next page, to the end
    wait_until(lambda: rows() == 2, "the trim ended")
    assert locs(log.since()) == ["/4"]


def test_a_flush_waits_for_the_pages_not_for_a_long_trim_after_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`since` and `claim` flush first (the push thread claims all day): a first trim of a big
    log on the log's thread must not hold them for its whole length, only for its step."""
    monkeypatch.setattr(log_module, "_TRIM_STEP", 1)
    log = ChangeLog.sqlite(tmp_path / "changes.sqlite3", keep=timedelta(days=1))
    render(log, [["/a"]], at=1 * DAY)
    render(log, [["/a", *(f"/{n}" for n in range(20))]], at=2 * DAY)  # 21 changes: 21 steps
    trim = log.backend.trim
    stepping = threading.Event()

    def slow_step(before: float, most: int, *, continued: bool = False) -> Trimmed:
        stepping.set()
        time.sleep(0.02)
        return trim(before, most, continued=continued)

    monkeypatch.setattr(log.backend, "trim", slow_step)

    def of_day_2() -> int:  # read without flushing (`since` flushes)
        return sum(change.at == moment(2 * DAY) for change in log.backend.since(None, None))

    assert log.record_later(lambda: log.record(seen(1, ["/a", "/new"]), pages=1, at=5 * DAY))
    assert stepping.wait(WAIT)  # the trim of day 2 began: 21 steps of 20 ms, and their pauses
    log.flush()
    assert of_day_2() >= 15  # it returned after a step or two, not the whole trim's
    assert log.record_later(lambda: None)  # the next recording goes on with the trim
    wait_until(lambda: of_day_2() == 0, "the trim ended")


def test_the_horizon_survives_a_restart(reopen: Callable[[], ChangeLog]) -> None:
    log = reopen()
    render(log, [["/a"]], at=1 * DAY)
    render(log, [["/a", "/1"]], at=2 * DAY)
    assert reopen().horizon() is None
    log.trim(moment(2.5 * DAY))
    restarted = reopen()
    assert restarted.horizon() == moment(2 * DAY)
    with pytest.raises(ChangeLogError, match="trimmed"):
        restarted.since(moment(1.5 * DAY))


def test_a_trim_of_a_held_log_says_which_consumers_hold_it(
    log: ChangeLog, caplog: pytest.LogCaptureFixture
) -> None:
    log.subscribe("indexnow|https://shop.example")
    render(log, [["/a", "/1", "/2", "/3"]], at=4 * DAY)
    with caplog.at_level(logging.WARNING, logger="sitemap_middleware"):
        log.trim(moment(5 * DAY))
    assert "indexnow|https://shop.example" in caplog.text and "unsubscribe" in caplog.text


def test_the_log_trims_itself_as_it_records_what_is_older_than_keep(tmp_path: Path) -> None:
    log = ChangeLog.sqlite(tmp_path / "changes.sqlite3", keep=timedelta(days=1))
    log.trim_every = 0.0  # at every recording, not once an hour

    def later(pages: list[list[str]], at: float) -> None:
        def job() -> None:
            for number, page in enumerate(pages, 1):
                log.record(seen(number, page), pages=len(pages), at=at)

        assert log.record_later(job)

    later([["/a"]], 10 * DAY)
    later([["/a", "/1"]], 11 * DAY)
    later([["/a", "/1", "/2"]], 12.5 * DAY)  # a day and a half after /1: it goes
    log.flush()
    assert locs(log.since()) == ["/2"]
    assert log.horizon() == moment(11 * DAY)


def test_crawlers_requests_through_a_real_server_trim_what_is_older_than_keep(
    tmp_path: Path, serve: Callable[[Sitemaps], Server]
) -> None:
    log = ChangeLog.sqlite(tmp_path / "changes.sqlite3", keep=timedelta(days=1))
    log.trim_every = 0.0
    now = [10 * DAY]
    shelf = Shelf(4)
    sitemaps = Sitemaps(base_url=BASE, changes=log, clock=lambda: now[0])
    sitemaps.add_provider("products", shelf)
    server = serve(sitemaps)

    def crawl(day: float) -> None:
        now[0] = day * DAY
        sitemaps.invalidate()  # as a save hook would: the crawler reads a fresh page
        assert server.get("/sitemap-index.xml").status == 200  # plans the section: a pass ends
        assert server.get("/sitemap-products-1.xml").status == 200
        log.flush()

    crawl(10)  # the baseline
    shelf.rows["/p/new-on-day-11"] = None
    crawl(11)
    assert locs(log.since()) == ["/p/new-on-day-11"]
    shelf.rows["/p/new-on-day-12"] = None
    crawl(12.5)  # day 11 is now more than a day before the newest recording
    assert locs(log.since()) == ["/p/new-on-day-12"]
    assert log.horizon() == moment(11 * DAY)
    with pytest.raises(ChangeLogError, match="trimmed"):
        log.since(moment(10.5 * DAY))


def test_a_log_that_keeps_everything_never_trims(tmp_path: Path) -> None:
    log = ChangeLog.sqlite(tmp_path / "changes.sqlite3", keep=None)
    render(log, [["/a"]], at=1 * DAY)
    render(log, [["/a", "/1"]], at=2 * DAY)
    assert log.trim().removed == 0
    assert locs(log.since()) == ["/1"]
    assert log.trim(moment(3 * DAY)).removed == 2  # an explicit bound is still obeyed


@pytest.mark.parametrize(
    ("keep", "message"),
    [
        (timedelta(hours=23), "at least a day"),
        (30, "a timedelta"),
        (timedelta(days=-1), "at least a day"),
    ],
)
def test_a_keep_too_short_or_not_a_duration_fails_at_construction(
    tmp_path: Path, keep: object, message: str
) -> None:
    with pytest.raises(ConfigurationError, match=message):
        ChangeLog.sqlite(tmp_path / "changes.sqlite3", keep=keep)  # type: ignore[arg-type]


def test_a_naive_bound_is_refused(log: ChangeLog) -> None:
    with pytest.raises(ConfigurationError, match="aware"):
        log.trim(datetime(2026, 1, 1))


def test_a_recent_section_wider_than_what_the_log_keeps_is_refused(tmp_path: Path) -> None:
    sitemaps = Sitemaps(
        base_url=BASE, changes=ChangeLog.sqlite(tmp_path / "c.sqlite3", keep=timedelta(days=1))
    )
    with pytest.raises(ConfigurationError, match="keep"):
        sitemaps.recent("recent", window=timedelta(days=2))
    sitemaps.recent("recent", window=timedelta(hours=12))  # within it: fine


@settings(max_examples=40, deadline=None)
@given(
    times=st.lists(st.integers(min_value=1, max_value=40), min_size=1, max_size=8),
    bound=st.integers(min_value=0, max_value=45),
    consumer_after=st.one_of(st.none(), st.integers(min_value=0, max_value=8)),
)
def test_a_trim_removes_only_what_nobody_can_still_ask_for(
    times: list[int], bound: int, consumer_after: int | None
) -> None:
    """Whatever was recorded when, trimmed at any bound, with or without a consumer that
    subscribed part-way: every change recorded at or after the bound is kept, and so is every
    change the consumer has not been delivered; `since` from the horizon on answers as if
    nothing had been trimmed, and from before it raises."""
    times = sorted(times)
    with tempfile.TemporaryDirectory() as directory:
        log = ChangeLog.sqlite(Path(directory) / "changes.sqlite3", keep=None)
        render(log, [["/base"]], at=0.5 * DAY)
        for step, at in enumerate(times):
            if consumer_after == step:
                log.subscribe("hook")
            render(log, [["/base", *(f"/{n}" for n in range(step + 1))]], at=at * DAY)
        everything = log.since()
        assert len(everything) == len(times)  # one added URL a render: examples are not vacuous
        held = log.pending("hook") if consumer_after is not None and consumer_after < len(times) else 0
        trimmed = log.trim(moment(bound * DAY))
        kept = log.since()
        assert all(change in kept for change in everything if change.at >= moment(bound * DAY))
        assert len(everything) - len(kept) <= trimmed.removed
        assert trimmed.held == (("hook",) if held and any(t < bound for t in times[consumer_after:]) else ())
        if held:
            delivery = log.claim("hook", "worker", limit=1_000)
            assert delivery is not None and len(delivery.changes) + len(delivery.pages) == held
        horizon = log.horizon()
        if horizon is None:
            assert kept == everything
        else:
            assert all(change.at <= moment(bound * DAY) for change in everything if change not in kept)
            assert log.since(horizon) == [change for change in everything if change.at > horizon]
            with pytest.raises(ChangeLogError, match="trimmed"):
                log.since(horizon - timedelta(seconds=1))
