"""A fleet of real worker processes sharing one `RedisStore`.

Each worker is its own process (`tests.fleet`: uvicorn, or werkzeug's threaded server) on its
own port, all against one throwaway ``redis-server`` (`tests.redis_server`). Renders are
counted across processes by the providers themselves (a line per call in a shared file), and
the order of events comes from those counts and each worker's ``/stats``, never from sleeping.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import pytest

from ..conftest import wait_until
from ..fleet import SECTIONS
from ..redis_server import Partition, RedisServer
from ..servers import TIMEOUT, Got
from ..xsd import locs, validate

pytestmark = pytest.mark.server

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Worker:
    """One worker process of the fleet, and how to ask it things."""

    process: subprocess.Popen[str]
    port: int
    adapter: str

    def get(self, path: str, headers: dict[str, str] | None = None) -> Got:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=TIMEOUT)
        try:
            connection.request("GET", path, headers=headers or {})
            response = connection.getresponse()
            return Got(response.status, response.headers, response.read())
        finally:
            connection.close()

    def page(self, path: str, headers: dict[str, str] | None = None) -> Got:
        got = self.get(path, headers)
        assert got.status == 200, f"{self.adapter}:{self.port} GET {path}: {got.status} {got.body[:200]!r}"
        return got

    def stats(self) -> dict[str, dict[str, dict[str, int]]]:
        stats: dict[str, dict[str, dict[str, int]]] = json.loads(self.get("/stats").body)
        return stats

    def counter(self, section: str, name: str) -> int:
        return self.stats()["sitemaps"].get(section, {}).get(name, 0)

    def store_counter(self, name: str) -> int:
        return self.stats()["store"].get("", {}).get(name, 0)

    def invalidate(self, section: str) -> None:
        assert self.heard(section), f"{self.adapter}:{self.port}: invalidate({section!r}) was refused"

    def heard(self, section: str) -> bool:
        """Invalidate ``section`` as a save hook would: True once the fleet heard it, False
        when the store refused it (the hook saw `InvalidationError`)."""
        got = self.get(f"/invalidate?section={section}")
        assert got.status in (200, 503), got
        return got.status == 200


@contextmanager
def fleet(
    redis_url: str,
    directory: Path,
    adapters: tuple[str, ...],
    store: dict[str, object] | None = None,
    sitemaps: dict[str, object] | None = None,
) -> Iterator[list[Worker]]:
    """Start one worker process per adapter name, all at once; stop them all on the way out.

    ``store`` and ``sitemaps``: options of each worker's `RedisStore` and `Sitemaps`.
    """
    env = {
        **os.environ,
        "FLEET_REDIS": redis_url,
        "FLEET_DIR": str(directory),
        "FLEET_STORE": json.dumps(store or {}),
        "FLEET_SITEMAPS": json.dumps(sitemaps or {}),
        "PYTHONPATH": str(ROOT),
    }
    processes = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.fleet", adapter],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        for adapter in adapters
    ]
    try:
        workers = []
        for process, adapter in zip(processes, adapters, strict=True):
            assert process.stdout is not None
            line = process.stdout.readline()
            assert line.strip().isdigit(), f"the {adapter} worker did not start (exit {process.poll()})"
            workers.append(Worker(process, int(line), adapter))
        for worker in workers:
            wait_until(lambda w=worker: _answers(w), f"the {worker.adapter} worker answers", TIMEOUT)
        yield workers
    finally:
        for process in processes:
            if process.poll() is None:
                process.send_signal(signal.SIGINT)
        for process in processes:
            try:
                process.wait(TIMEOUT)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(TIMEOUT)
            if process.stdout is not None:
                process.stdout.close()


def _answers(worker: Worker) -> bool:
    try:
        return worker.get("/stats").status == 200
    except OSError:
        return False


def page_locs(body: bytes) -> list[str]:
    return locs(validate(body))


def renders(directory: Path, section: str) -> int:
    log = directory / f"{section}.renders"
    return len(log.read_text().splitlines()) if log.exists() else 0


@pytest.fixture(scope="module")
def shared_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fleet")


@pytest.fixture(scope="module")
def workers(shared_dir: Path) -> Iterator[list[Worker]]:
    """Two uvicorn workers and a WSGI one, against one redis-server, for the whole module."""
    with ExitStack() as stack:
        server = stack.enter_context(RedisServer(shared_dir / "redis"))
        yield stack.enter_context(fleet(server.url, shared_dir, ("asgi", "asgi", "wsgi")))


def test_concurrent_cold_requests_over_the_fleet_render_once(workers: list[Worker], shared_dir: Path) -> None:
    path = "/sitemap-cold-1.xml"
    hold = shared_dir / "cold.hold"
    hold.touch()
    requests = 24
    with ThreadPoolExecutor(requests) as pool:
        futures = [pool.submit(workers[n % len(workers)].page, path) for n in range(requests)]
        # Every request but the leader's follows its flight, in whichever worker it arrived.
        wait_until(
            lambda: sum(w.counter("cold", "flight_waits") for w in workers) >= requests - 1,
            "every other request follows the one render",
        )
        hold.unlink()
        bodies = {future.result().body for future in futures}
    assert renders(shared_dir, "cold") == 1
    assert len(bodies) == 1
    assert page_locs(next(iter(bodies))) == [f"https://fleet.example/cold/{n}" for n in range(3)]


def test_every_worker_serves_the_same_document(workers: list[Worker], shared_dir: Path) -> None:
    path = "/sitemap-shared-1.xml"
    workers[0].page(path)
    for headers in ({}, {"Accept-Encoding": "gzip"}):
        answers = [worker.page(path, headers) for worker in workers]
        assert len({got.headers["ETag"] for got in answers}) == 1
        assert len({got.body for got in answers}) == 1
        assert len({got.headers["Last-Modified"] for got in answers}) == 1
    assert renders(shared_dir, "shared") == 1


def test_a_worker_answers_304_to_another_workers_etag(workers: list[Worker]) -> None:
    path = "/sitemap-shared-1.xml"
    workers[0].page(path)  # stored: a cold page streams without an ETag
    for n, worker in enumerate(workers):
        etag = worker.page(path).headers["ETag"]
        other = workers[(n + 1) % len(workers)]
        got = other.get(path, {"If-None-Match": etag})
        assert (got.status, got.body, got.headers["ETag"]) == (304, b"", etag)


def test_an_invalidation_on_one_worker_is_seen_by_all(workers: list[Worker], shared_dir: Path) -> None:
    path = "/sitemap-fresh-1.xml"
    before = {worker.page(path).body for worker in workers}
    assert len(before) == 1 and renders(shared_dir, "fresh") == 1
    (shared_dir / "fresh.txt").write_text("/fresh/new\n")
    workers[0].invalidate("fresh")
    for worker in (*workers[1:], workers[0]):
        assert page_locs(worker.page(path).body) == ["https://fleet.example/fresh/new"]
    assert renders(shared_dir, "fresh") == 2


def test_requests_survive_redis_stopping_and_come_back_to_it_without_stale_data(tmp_path: Path) -> None:
    path = "/sitemap-outage-1.xml"
    with RedisServer(tmp_path / "redis") as server, fleet(server.url, tmp_path, ("asgi", "wsgi")) as (a, b):
        old = a.page(path).body
        assert b.page(path).body == old and renders(tmp_path, "outage") == 1

        server.stop(save=True)  # its data comes back with it: the old page included
        for worker in (a, b):
            assert worker.page(path).body == old  # rendered by the worker itself
            assert worker.store_counter("redis_fallbacks") >= 1
            assert worker.store_counter("redis_outages") == 1
        (tmp_path / "outage.txt").write_text("/outage/new\n")
        assert not a.heard("outage")  # refused: Redis cannot hear it now
        new = ["https://fleet.example/outage/new"]
        assert page_locs(b.page(path).body) == new

        server.start()
        for worker in (b, a):
            wait_until(
                lambda w=worker: (
                    page_locs(w.page(path).body) == new and w.store_counter("redis_recoveries") >= 1
                ),
                "the worker uses Redis again",
            )
        # Shared again: one more render at most, then both answer from Redis.
        counted = renders(tmp_path, "outage")
        answers = {worker.page(path).body for worker in (a, b, a, b)}
        assert len(answers) == 1 and page_locs(answers.pop()) == new
        assert renders(tmp_path, "outage") <= counted + 1


def test_a_dead_workers_render_is_taken_over_once_its_lock_expires(tmp_path: Path) -> None:
    path = "/sitemap-takeover-1.xml"
    hold = tmp_path / "takeover.hold"
    with RedisServer(tmp_path / "redis") as server, fleet(server.url, tmp_path, ("asgi", "asgi")) as (a, b):
        hold.touch()
        leader = threading.Thread(target=lambda: _swallow(a, path), daemon=True)
        leader.start()
        wait_until(lambda: renders(tmp_path, "takeover") == 1, "the first worker leads the render")
        a.process.kill()  # mid-render, holding the lock
        a.process.wait(TIMEOUT)
        hold.unlink()
        assert page_locs(b.page(path).body) == [f"https://fleet.example/takeover/{n}" for n in range(3)]
        assert renders(tmp_path, "takeover") == 2
        leader.join(TIMEOUT)


def _swallow(worker: Worker, path: str) -> None:
    with suppress(OSError, http.client.HTTPException):
        worker.get(path)


def test_an_invalidation_redis_cannot_hear_is_refused_so_a_dying_worker_loses_nothing(tmp_path: Path) -> None:
    """The save hook is told when the fleet has not heard it, and makes it again: an
    invalidation never waits, unheard, inside a worker that may die before Redis is back."""
    path = "/sitemap-outage-1.xml"
    new = ["https://fleet.example/outage/new"]
    with RedisServer(tmp_path / "redis") as server:
        partition = Partition(server.port)  # Redis goes on (its documents with it); the workers lose it
        try:
            with fleet(partition.url, tmp_path, ("asgi", "wsgi")) as (a, b):
                old = a.page(path).body
                assert b.page(path).body == old
                partition.cut()
                (tmp_path / "outage.txt").write_text("/outage/new\n")
                heard = a.heard("outage")
                assert page_locs(a.page(path).body) == new  # rendered by the worker itself
                a.process.kill()
                a.process.wait(TIMEOUT)
                partition.mend()
                if not heard:
                    b.invalidate("outage")  # the hook makes a refused invalidation again
                assert page_locs(b.page(path).body) == new
                assert page_locs(b.page(path).body) == new
        finally:
            partition.cut()


# A slow Redis: each reply this late, inside `from_url`'s 1 s socket timeout.
SLOW = (0.3, 0.8)
BUDGET = 0.5  # seconds each request may wait on Redis in all (the workers' request_budget)
# The call under way when the budget runs out: one round trip, after the client's handshake
# when it opens a connection (redis-py 8: HELLO, CLIENT MAINT_NOTIFICATIONS, two SETINFO).
CALL = 5 * SLOW[1]
MARGIN = 0.5  # for HTTP and a fast render on a busy machine
WARM = ("/sitemap-outage-1.xml", "/sitemap-takeover-1.xml", "/robots.txt", "/sitemap-outage-2.xml")


def test_a_slow_redis_costs_each_request_its_budget_at_most_never_a_503(tmp_path: Path) -> None:
    """Every provider is fast: time spent on a slow Redis must neither be charged to them
    (a 503 counted as theirs) nor make a request wait longer than its budget and one call."""
    paths = ["/sitemap-index.xml", "/sitemap-cold-1.xml", "/sitemap-shared-1.xml", "/sitemap-fresh-1.xml"]
    store = {"request_budget": BUDGET}
    with RedisServer(tmp_path / "redis") as server:
        partition = Partition(server.port)
        try:
            with (
                fleet(partition.url, tmp_path, ("asgi", "asgi"), store, {"provider_timeout": 1.0}) as workers,
                ThreadPoolExecutor(2 * len(paths) + 1) as pool,
            ):
                # The scripts loaded while Redis is fast (a new instance's first call loads
                # them: nine round trips), on paths the slow rounds never ask for.
                for future in [pool.submit(worker.get, path) for worker in workers for path in WARM]:
                    future.result()
                partition.slow(*SLOW)
                answers = []
                for n in range(2):  # each round races an invalidation, as a save hook's would
                    invalidating = pool.submit(workers[n % 2].invalidate, SECTIONS[n])
                    asked = [pool.submit(_timed, worker, path) for worker in workers for path in paths]
                    answers += [future.result() for future in asked]
                    invalidating.result()
                partition.slow(0)
                counts = [worker.stats() for worker in workers]
        finally:
            partition.cut()
    failed = [(path, got.status) for path, got, _ in answers if got.status != 200]
    assert failed == []
    assert all(len(page_locs(got.body)) >= 3 for _, got, _ in answers)  # whole documents
    slowest = max(answers, key=lambda answer: answer[2])
    assert slowest[2] < BUDGET + CALL + MARGIN, f"GET {slowest[0]} took {slowest[2]:.2f} s"
    # No failure counted as a provider's (or as a queue for render slots).
    charged = [
        (section, name)
        for c in counts
        for section, counters in c["sitemaps"].items()
        for name in ("provider_errors", "busy")
        if counters.get(name)
    ]
    assert charged == []
    assert sum(c["store"].get("", {}).get("redis_slow", 0) for c in counts) >= 1


def _timed(worker: Worker, path: str) -> tuple[str, Got, float]:
    started = time.monotonic()
    got = worker.get(path)
    return path, got, time.monotonic() - started
