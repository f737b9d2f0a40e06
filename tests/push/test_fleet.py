"""A fleet of workers on one Redis change log submits each change once: two worker processes
record the same pages, and their push threads share one outbox lease per consumer."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from sitemap_middleware.changes import ChangeLog

from ..conftest import BASE
from ..redis_server import RedisServer
from .conftest import locs
from .engine import Engine
from .worker import POLL, baselined

ROOT = Path(__file__).resolve().parents[2]


def test_two_workers_on_one_redis_log_submit_each_change_once(
    engine: Engine, redis_server: RedisServer, tmp_path: Path
) -> None:
    log = f"redis://127.0.0.1:{redis_server.port}/0"
    paths = baselined(log, engine.url, tmp_path, "/p/fleet-1", "/p/fleet-2")
    command = [sys.executable, "-m", "tests.push.worker", log, engine.url, str(paths)]
    workers = [subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True) for _ in range(2)]
    try:
        for worker in workers:  # both rendered every page, and recorded what they saw
            assert worker.stdout is not None and worker.stdout.readline().strip() == "recorded"
        [post] = engine.wait_posts(1)
        assert sorted(post.urls) == locs("/p/fleet-1", "/p/fleet-2")
        outbox = ChangeLog.redis(log, prefix="fleet")
        deadline = time.monotonic() + 10
        while outbox.pending(f"indexnow|{BASE}") and time.monotonic() < deadline:
            time.sleep(POLL)
        assert outbox.pending(f"indexnow|{BASE}") == 0  # acknowledged
        time.sleep(4 * POLL)  # both push threads look at the outbox again meanwhile
        assert len(engine.posts) == 1  # one submission in the fleet, never one per worker
        recorded = [change.loc for change in outbox.since()]
        assert sorted(recorded) == locs("/p/fleet-1", "/p/fleet-2")  # recorded once, too
    finally:
        for worker in workers:
            worker.kill()
            worker.communicate(timeout=10)  # its pipe closed
