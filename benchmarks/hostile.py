"""The load test's hostile clients (issue 9), on raw sockets, beside the well-behaved mix.

    plan = Hostile(hang_ups=8, slow_readers=4, stallers=4, send_timeout=5.0, stall_seconds=7.0,
                   cold_pages=range(6, 101))
    tasks = plan.clients(port, start, deadline, tally)     # coroutines to run beside the mix

- **hang-up**: asks for a cold page and hangs up before the first byte of the answer
  (after 0 to 50 ms; with FIN or, one time in two, RST). At once a well-behaved client
  asks for the same page (kind ``after a hang-up``): a claim left behind would make it wait.
- **slow reader**: a receive buffer of 2 KiB, asks for a cold ~9 MB identity page of section
  ``large`` (smaller answers fit in the kernel's socket buffers, so the server never
  waits for them), reads the head and 1,000 bytes, stops reading for ``send_timeout`` + 3 s,
  then reads what is left: the server should have cut it off. One second after it stops, a
  well-behaved client asks for the same page with gzip (kind ``beside a slow reader``): it
  shows how long a slow leader holds others.
- **stalled section** (well-behaved clients, a hostile provider): section ``stalls`` blocks
  ``stall_seconds`` (longer than ``provider_timeout``) the first time each page is asked, then
  answers at once. Its pages open one every ``stall_seconds`` + 2 s, so one stall at a time.
  One 503 a page is expected (a note), to a request started during that page's stall and
  before its first 200; any other non-200 is an error (a busy 503 too).

Hostile clients have no errors: what happened to each is counted in ``Tally.outcomes``.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import socket
import struct
import time
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any

from clients import GZIP, Connection, Tally, one
from common import HOST

STALL_PAGES = 10
STALLER_PAUSE = 0.1  # seconds between two requests of one stalled-section client
LARGE_PAGES = 20  # pages of 50,000 URLs in section ``large``
HANG_UP_AFTER = (0.0, 0.001, 0.01, 0.05)  # seconds between the request and the hang-up
SLOW_RCVBUF = 2048
SLOW_READ_FIRST = 1_000  # body bytes a slow reader reads before it stops
DRAIN_TIMEOUT = 10.0  # a slow reader that resumes reading waits this long for more


@dataclass
class Stalls:
    """When each page of section ``stalls`` was first asked for and first answered 200."""

    stall_seconds: float
    start: float
    first_ask: dict[int, float] = field(default_factory=dict)
    first_ok: dict[int, float] = field(default_factory=dict)
    excused: set[int] = field(default_factory=set)  # pages whose one expected 503 came

    def opened(self, now: float) -> int:
        """Pages open to clients by ``now``: a new one after each stall is over."""
        return min(STALL_PAGES, 1 + int((now - self.start) // (self.stall_seconds + 2.0)))

    def excuse(self, page: int, started: float, status: int) -> str | None:
        """Why a 503 is expected: the page's one stall, once (the provider stalls once a page)."""
        if status != 503 or page in self.excused:
            return None
        if started >= self.first_ok.get(page, float("inf")):
            return None  # the stall is over: this page has answered 200 already
        if started - self.first_ask[page] > self.stall_seconds + 1.0:
            return None  # the provider has long come back: a 503 now is a wedge
        self.excused.add(page)
        return "stalled section: 503 to a request made during the provider's one stall (expected)"


@dataclass
class Hostile:
    """How many hostile clients run beside the mix, and the server settings they play against."""

    hang_ups: int
    slow_readers: int
    stallers: int
    send_timeout: float
    stall_seconds: float
    cold_pages: range  # products pages the mix keeps cold

    def clients(
        self, port: int, start: float, deadline: float, tally: Tally
    ) -> list[Coroutine[Any, Any, None]]:
        stalls = Stalls(self.stall_seconds, start)
        return [
            *(hang_up_loop(port, self.cold_pages, deadline, 1_000 + n, tally) for n in range(self.hang_ups)),
            *(
                slow_reader_loop(port, self.send_timeout, deadline, 2_000 + n, tally)
                for n in range(self.slow_readers)
            ),
            *(staller_loop(port, stalls, deadline, 3_000 + n, tally) for n in range(self.stallers)),
        ]


async def hang_up_loop(port: int, pages: range, deadline: float, seed: int, tally: Tally) -> None:
    rng = random.Random(seed)
    follower = Connection(HOST, port)
    try:
        while time.perf_counter() < deadline:
            path = f"/sitemap-products-{rng.choice(pages)}.xml"
            await hang_up(port, path, rng.choice(HANG_UP_AFTER), rst=rng.random() < 0.5, tally=tally)
            await one(follower, "after a hang-up", (path, GZIP, 200), tally)
    finally:
        await follower.close()


async def hang_up(port: int, path: str, after: float, *, rst: bool, tally: Tally) -> None:
    try:
        reader, writer = await asyncio.open_connection(HOST, port)
    except OSError as exc:
        tally.outcomes["hang-up"][f"could not connect ({type(exc).__name__})"] += 1
        return
    writer.write(f"GET {path} HTTP/1.1\r\nHost: {HOST}\r\nAccept-Encoding: gzip\r\n\r\n".encode())
    await writer.drain()
    answered = False
    if after:
        with contextlib.suppress(TimeoutError):
            answered = bool(await asyncio.wait_for(reader.read(1), after))
    if rst:  # SO_LINGER 0: close() sends a reset instead of a FIN
        writer.get_extra_info("socket").setsockopt(
            socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
        )
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    how = "RST" if rst else "FIN"
    what = "the answer began first" if answered else "hung up before the first byte"
    tally.outcomes["hang-up"][f"{what} ({how})"] += 1


async def slow_reader_loop(port: int, send_timeout: float, deadline: float, seed: int, tally: Tally) -> None:
    rng = random.Random(seed)
    while time.perf_counter() < deadline:
        path = f"/sitemap-large-{rng.randint(1, LARGE_PAGES)}.xml"
        await slow_reader(port, path, send_timeout, tally)


async def slow_reader(port: int, path: str, send_timeout: float, tally: Tally) -> None:
    outcomes = tally.outcomes["slow reader"]
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, SLOW_RCVBUF)  # before connect: sets the window
    sock.setblocking(False)
    start = time.perf_counter()
    try:
        await asyncio.get_running_loop().sock_connect(sock, (HOST, port))
        # A small StreamReader limit: asyncio stops reading the socket past 2 KiB buffered.
        reader, writer = await asyncio.open_connection(sock=sock, limit=1024)
    except OSError as exc:
        sock.close()
        outcomes[f"could not connect ({type(exc).__name__})"] += 1
        return
    follower: asyncio.Task[None] | None = None
    try:
        writer.write(f"GET {path} HTTP/1.1\r\nHost: {HOST}\r\n\r\n".encode())
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30.0)
        tally.latencies["slow reader"].append(time.perf_counter() - start)
        status = int(head.split(b" ", 2)[1])
        if status != 200:
            outcomes[f"answered {status}"] += 1
            return
        received = len(await reader.readexactly(SLOW_READ_FIRST))
        follower = asyncio.create_task(beside(port, path, tally))
        await asyncio.sleep(send_timeout + 3.0)  # not reading
        tail = b""
        try:
            while not tail.endswith(b"\r\n0\r\n\r\n"):
                data = await asyncio.wait_for(reader.read(65_536), DRAIN_TIMEOUT)
                if not data:  # EOF before the last chunk
                    outcomes[f"cut off by the server after {received / 1e6:.1f} MB"] += 1
                    return
                received += len(data)
                tail = (tail + data)[-7:]
        except TimeoutError:
            outcomes[f"still open, nothing more for {DRAIN_TIMEOUT:.0f} s"] += 1
            return
        outcomes["got the whole page (the server never waited)"] += 1
    except (OSError, asyncio.IncompleteReadError, TimeoutError, ValueError) as exc:
        outcomes[f"{type(exc).__name__} from the server"] += 1
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
        if follower is not None:
            await follower


async def beside(port: int, path: str, tally: Tally) -> None:
    """A well-behaved client asking for the slow reader's page while it is not reading."""
    await asyncio.sleep(1.0)
    connection = Connection(HOST, port)
    try:
        await one(connection, "beside a slow reader", (path, GZIP, 200), tally)
    finally:
        await connection.close()


async def staller_loop(port: int, stalls: Stalls, deadline: float, seed: int, tally: Tally) -> None:
    rng = random.Random(seed)
    connection = Connection(HOST, port)
    try:
        while (now := time.perf_counter()) < deadline:
            page = rng.randint(1, stalls.opened(now))
            stalls.first_ask.setdefault(page, now)
            path = f"/sitemap-stalls-{page}.xml"
            status = await one(
                connection,
                "stalled section",
                (path, GZIP, 200),
                tally,
                excuse=lambda status, page=page, now=now: stalls.excuse(page, now, status),
            )
            if status == 200:
                stalls.first_ok.setdefault(page, time.perf_counter())
            await asyncio.sleep(STALLER_PAUSE)
    finally:
        await connection.close()


def aborts_in_log(log: str, send_timeout: float) -> tuple[int, int]:
    """Tracebacks in a server log: (slow readers the middleware aborted, any other)."""
    total = log.count("Traceback")
    aborts = log.count(f"TimeoutError: the client took no chunk for {send_timeout} s: aborted")
    return aborts, total - aborts
