"""The load test's well-behaved client: a minimal keep-alive HTTP/1.1 client, and its tally.

    connection = Connection("127.0.0.1", port)
    tally = Tally()
    status = await one(connection, "cold page", ("/sitemap-products-9.xml", GZIP, 200), tally)

Every answer is checked (status, and for a sample of sitemap bodies: gzip and XML parse).
Errors are counted, never retried.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import zlib
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

from lxml import etree

GZIP = {"Accept-Encoding": "gzip"}
REQUEST_TIMEOUT = 30.0  # a request unanswered this long is an error (and its connection dropped)
# kind -> every how many sitemap bodies of that kind the client parses as XML
SAMPLE_EVERY = {"cached page": 25, "cold page": 25, "index": 25, "beside a slow reader": 1}

Request = tuple[str, dict[str, str], int]  # path, headers, expected status
# status -> why that status is a correct answer this time (a note), or None (an error)
Excuse = Callable[[int], str | None]


@dataclass
class Tally:
    """Latencies (seconds) and errors per kind of request; what happened to hostile clients."""

    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    causes: Counter[str] = field(default_factory=Counter)
    notes: Counter[str] = field(default_factory=Counter)  # correct answers worth counting
    outcomes: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    sampled: int = 0

    def error(self, kind: str, cause: str) -> None:
        self.errors[kind] += 1
        self.causes[f"{kind}: {cause}"] += 1

    def merge(self, other: Tally) -> None:
        for kind, values in other.latencies.items():
            self.latencies[kind].extend(values)
        for kind, count in other.errors.items():
            self.errors[kind] += count
        self.causes.update(other.causes)
        self.notes.update(other.notes)
        for kind, outcomes in other.outcomes.items():
            self.outcomes[kind].update(outcomes)
        self.sampled += other.sampled


def check_body(kind: str, body: bytes, tally: Tally) -> None:
    """A sampled sitemap body must be a whole gzip stream holding well-formed XML."""
    try:
        etree.fromstring(zlib.decompress(body, 16 + zlib.MAX_WBITS))
    except (zlib.error, etree.XMLSyntaxError) as exc:
        tally.error(kind, f"invalid body ({type(exc).__name__})")
    tally.sampled += 1


class Connection:
    """A minimal HTTP/1.1 keep-alive client: the load generator must cost far less than the server.

    httpx spends more CPU per request than the server does on a small answer, and with
    the client and the server sharing two cores that would measure the client.
    """

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def get(self, path: str, headers: dict[str, str]) -> tuple[int, bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        assert self.reader is not None
        lines = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
        self.writer.write(f"GET {path} HTTP/1.1\r\nHost: {self.host}\r\n{lines}\r\n".encode("latin-1"))
        head = await self.reader.readuntil(b"\r\n\r\n")
        status_line, *header_lines = head.decode("latin-1").split("\r\n")
        status = int(status_line.split(" ", 2)[1])
        fields = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in header_lines if h)}
        if status in (204, 304):
            body = b""
        elif "content-length" in fields:
            body = await self.reader.readexactly(int(fields["content-length"]))
        elif fields.get("transfer-encoding", "").lower() == "chunked":
            body = await self._chunked()
        else:
            raise ValueError(f"{path}: neither Content-Length nor chunked")
        if fields.get("connection", "").lower() == "close":
            await self.close()
        return status, body

    async def _chunked(self) -> bytes:
        assert self.reader is not None
        parts = []
        while size := int((await self.reader.readuntil(b"\r\n")).split(b";")[0], 16):
            parts.append((await self.reader.readexactly(size + 2))[:-2])
        await self.reader.readuntil(b"\r\n")  # the empty trailer
        return b"".join(parts)

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            with contextlib.suppress(OSError):
                await self.writer.wait_closed()
        self.reader = self.writer = None


async def one(
    connection: Connection, kind: str, request: Request, tally: Tally, excuse: Excuse | None = None
) -> int | None:
    """One request, checked and tallied; its status, or None when it got no answer."""
    path, headers, expect = request
    start = time.perf_counter()
    try:
        status, body = await asyncio.wait_for(connection.get(path, headers), REQUEST_TIMEOUT)
    except TimeoutError:
        tally.error(kind, f"no answer within {REQUEST_TIMEOUT:.0f} s")
        await connection.close()
        return None
    except (OSError, ValueError, asyncio.IncompleteReadError, asyncio.LimitOverrunError) as exc:
        tally.error(kind, type(exc).__name__)
        await connection.close()
        return None
    tally.latencies[kind].append(time.perf_counter() - start)
    every = SAMPLE_EVERY.get(kind)
    if kind == "304" and status == 200:
        # RFC 9110 §13.1.2: a full 200 is a correct answer to If-None-Match too; it is what
        # a page evicted from the (small, on purpose) cache gets, rendered cold, without
        # validators. It is counted, and its body checked, but it is not an error.
        tally.notes["304 answered by a whole 200 (page evicted from the cache)"] += 1
        check_body(kind, body, tally)
    elif status != expect:
        reason = None if excuse is None else excuse(status)
        if reason is None:
            tally.error(kind, f"status {status}, expected {expect}")
        else:
            tally.notes[reason] += 1
    elif expect == 200 and not body:
        tally.error(kind, "empty body")
    elif every is not None and len(tally.latencies[kind]) % every == 0:
        check_body(kind, body, tally)
    return status
