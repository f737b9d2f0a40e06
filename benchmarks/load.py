"""load: hundreds of concurrent clients on a mix of sitemap and app requests (issue 5).

    python benchmarks/run.py load [--quick] [--clients N] [--seconds N] [--cache-bytes N]

One uvicorn worker on 127.0.0.1 serves the trivial Starlette app of ``apps.py`` wrapped
in our middleware: section ``products`` of 500,000 URLs in 100 pages of 5,000, from a
lazily sliced sequence provider, behind a `MemoryStore` much smaller than the 100 pages,
so cold pages keep being rendered and evicted. A bounded asyncio client (one keep-alive
connection per client) runs three measurements of the same length (1 and 2 alternate in
four segments: app, ours, ours, app):

1. the app alone (no middleware), app requests only: the reference;
2. our middleware, app requests only: what routing costs the app;
3. our middleware, the mix: app requests, cached pages, 304s, cold pages, index, robots.

Every answer is checked (status, and for a sample of sitemap bodies: gzip and XML parse).
Errors are counted, never retried; any server traceback counts too.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import statistics
import sys
import time
import zlib
from collections import Counter, defaultdict
from dataclasses import dataclass, field

import httpx
from common import HOST, Server, machine, mib, proc_status_kib, table, uvicorn_server
from lxml import etree

URLS = 500_000
PAGE_SIZE = 5_000
PAGES = URLS // PAGE_SIZE
HOT = range(1, 6)  # pages kept cached: they are asked for all the time
GZIP = {"Accept-Encoding": "gzip"}
SAMPLE_EVERY = 25  # every 25th sitemap body of each kind is parsed as XML by the client
SAMPLED = frozenset({"cached page", "cold page", "index"})
REQUEST_TIMEOUT = 30.0  # a request unanswered this long is an error (and its connection dropped)

Request = tuple[str, dict[str, str], int]  # path, headers, expected status

# kind -> weight in the mix
MIX = {"app": 40, "cached page": 20, "304": 20, "cold page": 10, "index": 5, "robots.txt": 5}


@dataclass
class Tally:
    """Latencies (seconds) and errors per kind of request."""

    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    causes: Counter[str] = field(default_factory=Counter)
    notes: Counter[str] = field(default_factory=Counter)  # correct answers worth counting
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
        self.sampled += other.sampled


def request_for(kind: str, rng: random.Random, etags: dict[int, str]) -> Request:
    """Path, headers and expected status of one request of ``kind``."""
    if kind == "app":
        return f"/items/{rng.randrange(1_000_000)}", {}, 200
    if kind == "cached page":
        return f"/sitemap-products-{rng.choice(HOT)}.xml", GZIP, 200
    if kind == "304":
        page = rng.choice(HOT)
        return f"/sitemap-products-{page}.xml", {**GZIP, "If-None-Match": etags[page]}, 304
    if kind == "cold page":
        return f"/sitemap-products-{rng.randrange(HOT.stop, PAGES + 1)}.xml", GZIP, 200
    if kind == "index":
        return "/sitemap-index.xml", GZIP, 200
    return "/robots.txt", {}, 200


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
    connection: Connection, kind: str, request: tuple[str, dict[str, str], int], tally: Tally
) -> None:
    path, headers, expect = request
    start = time.perf_counter()
    try:
        status, body = await asyncio.wait_for(connection.get(path, headers), REQUEST_TIMEOUT)
    except TimeoutError:
        tally.error(kind, f"no answer within {REQUEST_TIMEOUT:.0f} s")
        await connection.close()
        return
    except (OSError, ValueError, asyncio.IncompleteReadError, asyncio.LimitOverrunError) as exc:
        tally.error(kind, type(exc).__name__)
        await connection.close()
        return
    tally.latencies[kind].append(time.perf_counter() - start)
    if kind == "304" and status == 200:
        # RFC 9110 §13.1.2: a full 200 is a correct answer to If-None-Match too; it is what
        # a page evicted from the (small, on purpose) cache gets, rendered cold, without
        # validators. It is counted, and its body checked, but it is not an error.
        tally.notes["304 answered by a whole 200 (page evicted from the cache)"] += 1
        check_body(kind, body, tally)
    elif status != expect:
        tally.error(kind, f"status {status}, expected {expect}")
    elif expect == 200 and not body:
        tally.error(kind, "empty body")
    elif kind in SAMPLED and len(tally.latencies[kind]) % SAMPLE_EVERY == 0:
        check_body(kind, body, tally)


async def client_loop(
    port: int, mix: dict[str, int], etags: dict[int, str], deadline: float, seed: int, tally: Tally
) -> None:
    rng = random.Random(seed)
    kinds, weights = list(mix), list(mix.values())
    connection = Connection(HOST, port)
    try:
        while time.perf_counter() < deadline:
            kind = rng.choices(kinds, weights)[0]
            await one(connection, kind, request_for(kind, rng, etags), tally)
    finally:
        await connection.close()


async def drive(
    port: int, mix: dict[str, int], clients: int, seconds: float, etags: dict[int, str]
) -> tuple[Tally, float]:
    """Run the clients until the deadline (plus the last answers); returns the tally and the time taken."""
    tally = Tally()
    start = time.perf_counter()
    deadline = start + seconds
    await asyncio.gather(*(client_loop(port, mix, etags, deadline, seed, tally) for seed in range(clients)))
    return tally, time.perf_counter() - start


def warm(base: str) -> dict[int, str]:
    """Plan the section (the index) and cache the hot pages; returns their gzip ETags."""
    with httpx.Client(base_url=base, timeout=300.0) as client:
        client.get("/sitemap-index.xml", headers=GZIP).raise_for_status()
        client.get("/robots.txt").raise_for_status()
        etags = {}
        for page in HOT:
            client.get(f"/sitemap-products-{page}.xml", headers=GZIP).raise_for_status()  # cold: no ETag yet
            response = client.get(f"/sitemap-products-{page}.xml", headers=GZIP)
            response.raise_for_status()
            etags[page] = response.headers["etag"]
        return etags


@dataclass
class Measured:
    label: str
    tally: Tally
    seconds: float
    peak_kib: int
    tracebacks: int
    warm_kib: int = 0  # RSS once warmed up, before the load (run 3)

    @property
    def requests(self) -> int:
        return sum(map(len, self.tally.latencies.values()))

    @property
    def errors(self) -> int:
        return sum(self.tally.errors.values()) + self.tracebacks


def segment(
    server: Server, mix: dict[str, int], clients: int, seconds: float, etags: dict[int, str]
) -> Measured:
    """One stretch of load on ``server``; the caller names it and reads the server's RSS."""
    tally, elapsed = asyncio.run(drive(server.port, mix, clients, seconds, etags))
    return Measured("", tally, elapsed, 0, 0)


def app_requests_only(clients: int, seconds: float, ours_env: dict[str, str]) -> list[Measured]:
    """Runs 1 and 2 in segments app, ours, ours, app (ABBA): the machine's drift hits both alike."""
    servers = [uvicorn_server("load-app", "asgi_app"), uvicorn_server("load-ours", "asgi_ours", **ours_env)]
    results = [
        Measured("1. app alone", Tally(), 0.0, 0, 0),
        Measured("2. ours, app requests only", Tally(), 0.0, 0, 0),
    ]
    try:
        for server in servers:
            server.start()
        print(f"  runs 1 and 2: {clients} clients, 4 segments of {seconds / 2:.1f} s", file=sys.stderr)
        for index in (0, 1, 1, 0):
            part = segment(servers[index], {"app": 1}, clients, seconds / 2, {})
            results[index].tally.merge(part.tally)
            results[index].seconds += part.seconds
        for server, result in zip(servers, results, strict=True):
            result.peak_kib = proc_status_kib("VmHWM", server.pid)
    finally:
        for server in servers:
            server.stop()
    for server, result in zip(servers, results, strict=True):
        result.tracebacks = server.tracebacks()
    return results


def the_mix(clients: int, seconds: float, ours_env: dict[str, str]) -> Measured:
    server = uvicorn_server("load-mix", "asgi_ours", **ours_env)
    with server:
        etags = warm(server.base)
        warm_kib = proc_status_kib("VmRSS", server.pid)
        print(f"  run 3: {clients} clients for {seconds:.0f} s", file=sys.stderr)
        result = segment(server, MIX, clients, seconds, etags)
        result.peak_kib = proc_status_kib("VmHWM", server.pid)
        result.warm_kib = warm_kib
    result.label = "3. ours, the mix"
    result.tracebacks = server.tracebacks()
    return result


def ms(values: list[float], quantile: float) -> str:
    if not values:
        return "-"
    if len(values) == 1:
        return f"{values[0] * 1000:,.1f}"
    return f"{statistics.quantiles(values, n=100, method='inclusive')[round(quantile * 100) - 1] * 1000:,.1f}"


def report(results: list[Measured], cache_bytes: int, max_renders: int) -> str:
    headers = ["run", "kind", "requests", "req/s", "errors", "p50 ms", "p99 ms", "server peak RSS"]
    body = []
    for result in results:
        body.append(
            [
                result.label,
                "all",
                f"{result.requests:,}",
                f"{result.requests / result.seconds:,.0f}",
                result.errors,
                "",
                "",
                mib(result.peak_kib),
            ]
        )
        for kind in MIX:
            latencies = result.tally.latencies.get(kind, [])
            if latencies or result.tally.errors.get(kind):
                body.append(
                    [
                        "",
                        kind,
                        f"{len(latencies):,}",
                        f"{len(latencies) / result.seconds:,.0f}",
                        result.tally.errors.get(kind, 0),
                        ms(latencies, 0.5),
                        ms(latencies, 0.99),
                        "",
                    ]
                )
    mix = results[-1]
    return table(headers, body) + (
        f"\n\nmemory, run 3: RSS {mib(mix.warm_kib)} once warmed up, peak {mib(mix.peak_kib)} under load: "
        f"+{mib(mix.peak_kib - mix.warm_kib)} for a cache limit of {mib(cache_bytes / 1024)} "
        f"and max_renders={max_renders} (each render in progress holds about 1 MB)"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="load", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="100 clients, 3 s per run (~20 s)")
    parser.add_argument("--clients", type=int, help="concurrent clients (default 300)")
    parser.add_argument("--seconds", type=float, help="length of each run (default 25)")
    parser.add_argument("--cache-bytes", type=int, default=2 * 1024 * 1024, help="MemoryStore limit")
    parser.add_argument("--max-renders", type=int, default=16, help="Sitemaps max_renders (default 16)")
    args = parser.parse_args(argv)
    clients = args.clients or (100 if args.quick else 300)
    seconds = args.seconds or (3.0 if args.quick else 25.0)
    ours = {
        "BENCH_URLS": str(URLS),
        "BENCH_PAGE_SIZE": str(PAGE_SIZE),
        "BENCH_PROVIDER": "sequence",
        "BENCH_CACHE": str(args.cache_bytes),
        "BENCH_MAX_RENDERS": str(args.max_renders),
    }
    print(f"load: {clients} clients, one keep-alive connection each; uvicorn, 1 worker; {machine()}")
    print(
        f"mix: {', '.join(f'{k} {w}%' for k, w in MIX.items())}; pages of {PAGE_SIZE:,} URLs, {PAGES} pages"
    )
    results = [*app_requests_only(clients, seconds, ours), the_mix(clients, seconds, ours)]
    print()
    print(report(results, args.cache_bytes, args.max_renders))
    for result in results:
        for cause, count in result.tally.causes.most_common():
            print(f"errors in {result.label}: {count} x {cause}")
        for note, count in result.tally.notes.most_common():
            print(f"not errors, in {result.label}: {count} x {note}")
        if result.tracebacks:
            print(f"errors in {result.label}: {result.tracebacks} tracebacks in the server log")
    total = sum(r.requests for r in results)
    errors = sum(r.errors for r in results)
    sampled = sum(r.tally.sampled for r in results)
    print(f"total: {total:,} requests, {errors} errors, {sampled} sitemap bodies parsed as XML")


if __name__ == "__main__":
    main()
