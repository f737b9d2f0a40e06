"""Slow readers on real servers: a crawler that stops reading a huge page holds the provider back.

A page of 50,000 URLs with ~900-character locs is ~47 MB. A client with a small receive
buffer reads the headers and the first 64 KiB, then stops: the server must neither buffer
the rest of the page nor run the provider ahead of the client, so the provider stalls
once the buffers between them are full. When the client resumes it gets the whole
document; when it hangs up instead, the provider's generator is closed.

These pages are not stored (``cache=None``), so each streams to its one client at that
client's pace; a stored page is rendered once for all its readers (caching/test_shared_renders.py).
Under ASGI such a stream holds a render slot while it renders, never while its client does
not read: slow readers of as many unstored pages as there are slots keep no other page waiting.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from sitemap_middleware import Sitemaps
from sitemap_middleware.caching.stores import MemoryStore
from sitemap_middleware.providers import MAX_BATCH

from .. import apps
from ..crawl import BASE
from ..servers import TIMEOUT, Server, SlowReader, uvicorn_serving
from ..xsd import locs, validate

pytestmark = pytest.mark.server

ROWS = 50_000  # sitemaps.org: at most 50,000 URLs per file, so this is one full page
FILLER = "x" * 890  # ~940 bytes per <url>: the page is ~47 MB, under the 50 MiB limit
PAGE = "/sitemap-huge-1.xml"
HEAD_BYTES = 64 * 1024  # what the slow reader takes before it stops
CLIENT_RCVBUF = 8 * 1024  # Linux doubles it (bookkeeping overhead): 16 KiB
QUIET = 0.5  # seconds without a new URL that count as a stalled provider
POLL = 0.05
STALL_DEADLINE = 5.0


def _server_sndbuf_max() -> int:
    """The most a server socket's send buffer autotunes to: ``tcp_wmem``'s max (4 MiB by default)."""
    try:
        return int(Path("/proc/sys/net/ipv4/tcp_wmem").read_text().split()[2])
    except (OSError, IndexError, ValueError):
        return 4 * 1024 * 1024


def _loc(n: int) -> str:
    return f"{BASE}/p/{n}/{FILLER}"


# How far a provider may run ahead of a client that stopped reading, in URLs: what the
# kernel buffers hold (the server's send buffer, autotuned up to tcp_wmem's max; the
# client's receive buffer; the 64 KiB read), plus three batches of MAX_BATCH URLs in
# userland: uvicorn drains *before* each write, so one chunk sits in its transport buffer
# while our adapter holds the next one waiting to send (werkzeug: one chunk in `sendall`),
# and the provider is pulled a batch at a time. Measured on Linux defaults (4 MiB):
# uvicorn stalls at 5,461 URLs and werkzeug at 4,437, under this bound of ~7,600; a
# server that buffered the page, or an adapter that read ahead, reaches 50,000.
URL_BYTES = len(f"<url><loc>{_loc(0)}</loc></url>")  # the shortest, so the bound errs high
BUFFERED_BYTES = _server_sndbuf_max() + 2 * CLIENT_RCVBUF + HEAD_BYTES
STALL_BOUND = BUFFERED_BYTES // URL_BYTES + 3 * MAX_BATCH


class Counting:
    """A generator provider that counts the URLs it yields and records how it ended."""

    def __init__(self) -> None:
        self.yielded = 0
        self.finished = threading.Event()
        self.closed = threading.Event()  # GeneratorExit reached the generator

    def __call__(self) -> Iterator[str]:
        try:
            for n in range(ROWS):
                self.yielded += 1
                yield f"/p/{n}/{FILLER}"
            self.finished.set()
        except GeneratorExit:
            self.closed.set()
            raise


Huge = tuple[Counting, Callable[[], SlowReader]]


@pytest.fixture
def huge(serve: Callable[[Sitemaps], Server]) -> Iterator[Huge]:
    """A server for one ~47 MB page, and a way to open slow readers on it (closed at teardown)."""
    provider = Counting()
    sitemaps = Sitemaps(base_url=BASE, cache=None)
    sitemaps.provider("huge")(provider)
    server = serve(sitemaps)
    readers: list[SlowReader] = []

    def open_reader() -> SlowReader:
        readers.append(SlowReader(server.port, PAGE, CLIENT_RCVBUF))
        return readers[-1]

    try:
        yield provider, open_reader
    finally:
        for reader in readers:  # before the server stops: a stalled response would hold it up
            reader.close()


def stalled_count(provider: Counting) -> int:
    """Wait until the provider has yielded nothing new for `QUIET` seconds; its count then."""
    end = time.monotonic() + STALL_DEADLINE
    last, since = provider.yielded, time.monotonic()
    while time.monotonic() < end:
        time.sleep(POLL)  # polling a counter under a deadline, not asserting a duration
        now = provider.yielded
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= QUIET:
            return now
    pytest.fail(f"the provider never stalled: {provider.yielded} URLs after {STALL_DEADLINE} s")


def read_head_and_stall(huge: Huge) -> tuple[SlowReader, bytes, int]:
    """Open a slow reader, take the headers and the first 64 KiB, then wait for the provider to stall."""
    provider, open_reader = huge
    reader = open_reader()
    assert reader.response.status == 200
    head = reader.read(HEAD_BYTES)
    assert len(head) == HEAD_BYTES
    return reader, head, stalled_count(provider)


def test_slow_reader_stalls_the_provider_far_from_the_end(huge: Huge) -> None:
    if STALL_BOUND >= ROWS // 2:
        pytest.skip(f"this host's socket buffers hold {BUFFERED_BYTES} bytes: half the page")
    provider, _ = huge
    _, _, yielded = read_head_and_stall(huge)
    assert yielded < STALL_BOUND
    assert not provider.finished.is_set()


def test_slow_reader_that_resumes_gets_the_whole_valid_page(huge: Huge) -> None:
    provider, _ = huge
    reader, head, _ = read_head_and_stall(huge)
    body = head + reader.read()
    assert locs(validate(body)) == [_loc(n) for n in range(ROWS)]
    assert provider.finished.is_set()
    assert provider.yielded == ROWS


def test_slow_reader_that_hangs_up_closes_the_provider(huge: Huge) -> None:
    provider, _ = huge
    reader, _, _ = read_head_and_stall(huge)
    reader.close()
    assert provider.closed.wait(TIMEOUT), f"generator still open after {TIMEOUT} s"
    assert not provider.finished.is_set()


SLOTS = 2  # max_renders: as many slow readers as there are render slots
PAGES = 8
PAGE_ROWS = 30_000  # ~9 MB a page: far more than the socket buffers hold
UNSTORED = {
    "cache=None": lambda: None,
    # Pages of ~4 MB gzip (hex compresses only to half) against the 128 KiB it stores at most.
    "past-what-the-store-keeps": lambda: MemoryStore(max_bytes=1024 * 1024),
}


def _unique(n: int) -> str:
    return f"/p/{n}/{hashlib.sha256(str(n).encode()).hexdigest() * 4}"


class Paged:
    """A paged provider of `_unique` paths that counts the rows it yielded for each page."""

    def __init__(self) -> None:
        self.pulled: Counter[int] = Counter()

    def __call__(self, offset: int, limit: int | None) -> Iterator[str]:
        end = PAGES * PAGE_ROWS if limit is None else min(offset + limit, PAGES * PAGE_ROWS)
        for n in range(offset, end):
            self.pulled[offset // PAGE_ROWS + 1] += 1
            yield _unique(n)


@pytest.mark.parametrize("cache", UNSTORED.values(), ids=UNSTORED.keys())
def test_slow_readers_of_pages_nothing_stores_hold_no_render_slot(
    cache: Callable[[], MemoryStore | None],
) -> None:
    sitemaps = Sitemaps(base_url=BASE, cache=cache(), provider_timeout=5)
    provider = Paged()
    sitemaps.add_provider("big", provider, page_size=PAGE_ROWS, count=lambda: PAGES * PAGE_ROWS)
    app = sitemaps.asgi(apps.starlette_app(), max_renders=SLOTS)
    with uvicorn_serving(app) as port:
        readers = [SlowReader(port, f"/sitemap-big-{n}.xml", CLIENT_RCVBUF) for n in range(1, SLOTS + 1)]
        try:
            head = [reader.read(HEAD_BYTES) for reader in readers]
            assert all(len(part) == HEAD_BYTES for part in head)
            # Were the slots held while these clients do not read, the next pages would wait
            # for send_timeout (10 s) or get a 503 after provider_timeout (5 s).
            server = Server(port, "starlette")
            for n in (3, 4):
                asked = time.monotonic()
                assert server.fetch(f"/sitemap-big-{n}.xml").startswith(b"<?xml")
                assert time.monotonic() - asked < 3.0
            # Made no faster than their clients read: never whole for clients that stopped.
            assert all(provider.pulled[n] < PAGE_ROWS for n in range(1, SLOTS + 1)), provider.pulled
            # A paused page takes a slot back to go on, and its client gets the whole of it.
            body = head[0] + readers[0].read()
            assert locs(validate(body)) == [BASE + _unique(n) for n in range(PAGE_ROWS)]
        finally:
            for reader in readers:
                reader.close()
        # Nothing was kept for them: a burst of pages all answer.
        with ThreadPoolExecutor(4) as pool:
            statuses = list(pool.map(lambda n: server.get(f"/sitemap-big-{n}.xml").status, range(5, 9)))
        assert statuses == [200] * 4
        assert sitemaps.stats.snapshot()["big"].get("cache_hits", 0) == 0  # nothing was stored
