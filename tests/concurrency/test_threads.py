"""The WSGI helper threads (threads.py) and progress deadlines (deadlines.py), on their own."""

from __future__ import annotations

import threading
import time

import pytest

from sitemap_middleware.concurrency.deadlines import THREAD_GRACE, beat
from sitemap_middleware.concurrency.threads import Helpers

TIMEOUT = 0.1  # the provider deadline; a thread is cut after TIMEOUT + THREAD_GRACE of silence


def test_a_call_runs_on_a_helper_and_returns_its_result():
    assert Helpers(2).run(lambda: threading.current_thread().name, None) == "sitemap-helper"


def test_an_error_reaches_the_caller_as_raised():
    def fail() -> None:
        raise LookupError("no such row")

    with pytest.raises(LookupError, match="no such row"):
        Helpers(1).run(fail, TIMEOUT)


def test_never_more_helper_threads_than_its_size():
    helpers = Helpers(2)
    seen: set[int] = set()
    lock = threading.Lock()

    def work() -> None:
        with lock:
            seen.add(threading.get_ident())
        time.sleep(0.02)

    callers = [threading.Thread(target=helpers.run, args=(work, 5.0)) for _ in range(8)]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join()
    assert 1 <= len(seen) <= 2


def test_a_call_no_helper_takes_in_time_is_given_up_and_never_runs():
    helpers = Helpers(1)
    entered, release = threading.Event(), threading.Event()
    ran: list[str] = []

    def stuck_call() -> None:
        entered.set()
        release.wait(10)

    stuck = threading.Thread(target=helpers.run, args=(stuck_call, None))
    stuck.start()
    assert entered.wait(10)  # the only helper is now inside the stuck call
    with pytest.raises(TimeoutError, match="no helper thread became free"):
        helpers.run(lambda: ran.append("late"), TIMEOUT)
    release.set()
    stuck.join()
    assert helpers.run(lambda: "next", TIMEOUT) == "next"  # the helper skipped the given-up call
    assert ran == []


def test_a_call_that_keeps_beating_outlives_the_deadline():
    def long_but_progressing() -> str:
        for _ in range(int(3 * (TIMEOUT + THREAD_GRACE) / 0.05)):
            time.sleep(0.05)
            beat()  # a batch arrived
        return "planned"

    assert Helpers(1).run(long_but_progressing, TIMEOUT) == "planned"


def test_a_silent_call_is_cut_after_the_deadline_and_its_grace():
    release = threading.Event()
    started = time.monotonic()
    with pytest.raises(TimeoutError, match="no progress"):
        Helpers(1).run(lambda: release.wait(10), TIMEOUT)
    elapsed = time.monotonic() - started
    release.set()
    assert TIMEOUT + THREAD_GRACE <= elapsed < 5 * (TIMEOUT + THREAD_GRACE)
