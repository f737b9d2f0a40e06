"""A worker killed in the middle of a POST: the next process sends exactly that batch again,
once the dead worker's lease has run out, and nothing after it was answered."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from .conftest import Shelf, locs
from .engine import Answer, Engine
from .worker import baselined, shop

ROOT = Path(__file__).resolve().parents[2]


def test_a_batch_unanswered_when_its_worker_died_is_sent_again_by_the_next(
    engine: Engine, log_path: Path, tmp_path: Path
) -> None:
    paths = baselined(str(log_path), engine.url, tmp_path, "/p/new-1", "/p/new-2")
    engine.script(Answer(stall=True))  # the engine never answers the first POST
    worker = subprocess.Popen(
        [sys.executable, "-m", "tests.push.worker", str(log_path), engine.url, str(paths)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        [sent] = engine.wait_posts(1)
    finally:
        worker.kill()  # SIGKILL: no finally, no atexit, mid-POST
        _, errors = worker.communicate(timeout=10)
    assert b"Traceback" not in errors, errors.decode()
    assert sorted(sent.urls) == locs("/p/new-1", "/p/new-2")
    shelf = Shelf(0)
    shelf.rows = dict.fromkeys(paths.read_text().split())
    restarted = shop(str(log_path), engine.url, shelf)
    try:
        restarted.refresh()  # its first request starts its push thread; it records nothing new
        engine.wait_posts(2)  # polled, claimed once the dead worker's lease ran out, and sent
        assert restarted.push_now() == []
    finally:
        restarted.close()
    assert [post.urls for post in engine.posts] == [sent.urls, sent.urls]
