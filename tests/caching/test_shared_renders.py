"""One render, many readers, on real servers: each client reads a cold page at its own pace.

A cold page is rendered once, at its provider's pace, into the document being stored;
every client of it, the first included, reads that document as it grows. So a follower
gets its first byte before the render ends, a first client that stops reading holds
nobody else, and slow readers hold their sockets and nothing else: no render slot, no
copy of the page. Served by uvicorn (ASGI) and gunicorn's threaded worker (WSGI), each in
its own process (`slow_site`), whose provider calls are counted in a file.
"""

from __future__ import annotations

import gzip
import http.client
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from ..servers import TIMEOUT, SlowReader
from ..slow_site import BASE, FILLER, PAGE_SIZE
from ..xsd import locs, validate

pytestmark = pytest.mark.server

RENDER_SECONDS = 1.5  # one slow page's whole render (its provider sleeps, the CPU is free)
RCVBUF = 8 * 1024  # a slow reader's receive buffer (Linux doubles it)
READERS = 24
RENDER_SLOTS = 16  # the ASGI adapter's default max_renders


@dataclass
class Site:
    port: int
    kind: str
    calls: Path

    def renders_of(self, section: str, page: int) -> int:
        """How many times the provider was called for page ``page`` of ``section``, in any worker."""
        wanted = f"{section} {(page - 1) * PAGE_SIZE}"
        return self.calls.read_text().splitlines().count(wanted) if self.calls.exists() else 0

    def rss(self) -> int:
        return int(self.get("/rss")[1])

    def get(self, path: str, encoding: str = "identity") -> tuple[int, bytes]:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=TIMEOUT)
        try:
            connection.request("GET", path, headers={"Accept-Encoding": encoding})
            response = connection.getresponse()
            return response.status, response.read()
        finally:
            connection.close()


@pytest.fixture(scope="module", params=["uvicorn-asgi", "gunicorn-wsgi"])
def site(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    kind = request.param
    calls = tmp_path_factory.mktemp("slow") / "calls.txt"
    listener = socket.create_server(("127.0.0.1", 0))
    fd = listener.fileno()
    if kind == "uvicorn-asgi":
        command = ["uvicorn", "--fd", str(fd), "--log-level", "warning", "tests.slow_site:asgi_app"]
    else:  # threads enough for every slow reader: a WSGI connection holds its thread
        command = ["gunicorn", "--bind", f"fd://{fd}", "--worker-class", "gthread", "--threads", "64"]
        command += ["--log-level", "warning", "tests.slow_site:wsgi_app"]
    env = {"SLOW_CALLS": str(calls), "SLOW_SECONDS": str(RENDER_SECONDS), "PATH": "/usr/bin:/bin"}
    root = Path(__file__).resolve().parents[2]
    server = subprocess.Popen(
        [sys.executable, "-m", *command], cwd=root, env=env, pass_fds=[fd], stderr=subprocess.PIPE
    )
    try:
        yield Site(listener.getsockname()[1], kind, calls)
    finally:
        server.terminate()
        _, errors = server.communicate(timeout=TIMEOUT)
        listener.close()
        assert b"Traceback" not in errors, errors.decode()


def expected_locs(section: str, page: int) -> list[str]:
    first = (page - 1) * PAGE_SIZE
    return [f"{BASE}/{section}/{n}/{FILLER}" for n in range(first, first + PAGE_SIZE)]


class Timed:
    """A full GET in a thread of its own: when it asked, got its first byte, and finished."""

    def __init__(self, site: Site, path: str) -> None:
        self.site, self.path = site, path
        self.asked = self.first = self.done = 0.0
        self.body = b""
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", self.site.port, timeout=TIMEOUT)
        try:
            self.asked = time.monotonic()
            connection.request("GET", self.path, headers={"Accept-Encoding": "identity"})
            response = connection.getresponse()
            parts = [response.read(1)]
            self.first = time.monotonic()
            parts.append(response.read())
            self.done = time.monotonic()
            self.body = b"".join(parts)
        finally:
            connection.close()

    def join(self) -> Timed:
        self.thread.join(TIMEOUT)
        assert not self.thread.is_alive(), f"{self.path}: no whole answer within {TIMEOUT} s"
        return self


def wait_for_first_call(site: Site, section: str, page: int) -> None:
    end = time.monotonic() + TIMEOUT
    while site.renders_of(section, page) == 0:
        assert time.monotonic() < end, f"{section} {page} was never rendered"
        time.sleep(0.01)  # polling the calls file under a deadline


def test_a_follower_gets_its_first_byte_before_the_render_ends(site: Site) -> None:
    path = "/sitemap-slow-1.xml"
    first = Timed(site, path)
    wait_for_first_call(site, "slow", 1)
    second = Timed(site, path)
    first.join(), second.join()
    # It asked while the page was rendering, and read what was made while it still was.
    assert second.first < first.done - 0.3, (second.first - second.asked, first.done - second.asked)
    assert second.body == first.body
    assert locs(validate(second.body)) == expected_locs("slow", 1)
    assert site.renders_of("slow", 1) == 1


def test_a_first_client_that_stops_reading_holds_nobody_else(site: Site) -> None:
    path = "/sitemap-slow-2.xml"
    started = time.monotonic()
    stopped = SlowReader(site.port, path, RCVBUF)  # takes the headers and one read, then nothing
    try:
        assert stopped.response.status == 200
        assert stopped.read(1024)
        follower = Timed(site, path).join()
        # The whole page, within the render's time and a little: it never waited for that client.
        assert follower.done - started < RENDER_SECONDS + 1.5, follower.done - started
        assert locs(validate(follower.body)) == expected_locs("slow", 2)
        assert site.renders_of("slow", 2) == 1
    finally:
        stopped.close()


def test_many_slow_readers_of_one_page_cost_about_one_document_and_others_are_served(site: Site) -> None:
    path = "/sitemap-slow-3.xml"
    status, _ = site.get("/sitemap-quick-1.xml")  # the process's steady state, before the readers
    assert status == 200
    before = site.rss()
    asked = time.monotonic()
    with ThreadPoolExecutor(READERS) as pool:
        readers = list(pool.map(lambda _: SlowReader(site.port, path, RCVBUF), range(READERS)))
    try:
        # Every one of them got its first bytes at once (none waited for another).
        assert [reader.response.status for reader in readers] == [200] * READERS
        assert all(reader.read(1024) for reader in readers)
        assert time.monotonic() - asked < RENDER_SECONDS, time.monotonic() - asked
        # Meanwhile other cold pages are served at once.
        for number in (2, 3):
            status, body = site.get(f"/sitemap-quick-{number}.xml", encoding="gzip")
            assert status == 200
            assert len(locs(validate(gzip.decompress(body)))) == PAGE_SIZE
        # The render has ended once a fresh client read it whole (gzip: no identity copy is made).
        status, body = site.get(path + ".gz")
        assert status == 200
        size = len(gzip.decompress(body))
        grown = site.rss() - before
        # About one document (its bytes held for the readers who are behind), not 24 of them.
        assert grown < 3 * size + 16 * 1024 * 1024, (grown, size)
        assert site.renders_of("slow", 3) == 1
    finally:
        for reader in readers:
            reader.close()


def test_slow_readers_of_as_many_cold_pages_as_render_slots_hold_no_slot(site: Site) -> None:
    pages = range(10, 10 + RENDER_SLOTS)
    with ThreadPoolExecutor(RENDER_SLOTS) as pool:
        readers = list(
            pool.map(lambda number: SlowReader(site.port, f"/sitemap-quick-{number}.xml", RCVBUF), pages)
        )
    try:
        assert all(reader.read(1024) for reader in readers)
        # Every slot would be taken if readers held them: other cold pages answer at once instead.
        for number in (30, 31):
            asked = time.monotonic()
            status, _ = site.get(f"/sitemap-quick-{number}.xml", encoding="gzip")
            assert status == 200
            assert time.monotonic() - asked < 3.0
    finally:
        for reader in readers:
            reader.close()
    # Nothing was kept for them: a burst of cold pages all answer.
    with ThreadPoolExecutor(8) as pool:
        statuses = list(pool.map(lambda n: site.get(f"/sitemap-quick-{n}.xml", "gzip")[0], range(32, 40)))
    assert statuses == [200] * 8
