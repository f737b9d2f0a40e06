"""load: hundreds of concurrent clients on a mix of sitemap and app requests (issues 5 and 9).

    python benchmarks/run.py load [--quick] [--clients N] [--seconds N] [--cache-bytes N]
        [--hang-ups N] [--slow-readers N] [--stallers N] [--provider-timeout S] [--send-timeout S]

One uvicorn worker on 127.0.0.1 serves the trivial Starlette app of ``apps.py`` wrapped
in our middleware: section ``products`` of 500,000 URLs in 100 pages of 5,000, from a
lazily sliced sequence provider, behind a `MemoryStore` much smaller than the 100 pages,
so cold pages keep being rendered and evicted. A bounded asyncio client (one keep-alive
connection per client) runs three measurements of the same length (1 and 2 alternate in
four segments: app, ours, ours, app):

1. the app alone (no middleware), app requests only: the reference;
2. our middleware, app requests only: what routing costs the app;
3. our middleware, the mix: app requests, cached pages, 304s, cold pages, index, robots;
   beside it, the hostile clients of ``hostile.py`` (hang-ups before the first byte, slow
   readers, a provider that stalls once a page) and the well-behaved clients that ask for
   what they touched. The server runs with a short ``provider_timeout`` and
   ``send_timeout`` (10 s and 5 s by default) so that stalls and aborts happen within the run.

Every answer of a well-behaved client is checked (status, and for a sample of sitemap
bodies: gzip and XML parse). Errors are counted, never retried; any server traceback
counts too, except the one a slow reader's abort logs. Hostile clients report what
happened to them. The server's counters (``sitemaps.stats``) are read at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import time
from collections import Counter
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import TypeVar

import httpx
from apps import STATS_PATH
from clients import GZIP, Connection, Request, Tally, one
from common import HOST, Server, machine, mib, proc_status_kib, table, uvicorn_server
from hostile import LARGE_PAGES, STALL_PAGES, Hostile, aborts_in_log

URLS = 500_000
PAGE_SIZE = 5_000
PAGES = URLS // PAGE_SIZE
HOT = range(1, 6)  # pages kept cached: they are asked for all the time
RSS_EVERY = 2.0  # seconds between two samples of the server's RSS in run 3
T = TypeVar("T")
# kind -> weight in the mix
MIX = {"app": 40, "cached page": 20, "304": 20, "cold page": 10, "index": 5, "robots.txt": 5}


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
    port: int,
    mix: dict[str, int],
    clients: int,
    seconds: float,
    etags: dict[int, str],
    hostile: Hostile | None = None,
) -> tuple[Tally, float, float]:
    """Run the clients until the deadline (plus the last answers), and ``hostile`` beside them.

    Returns the tally, the time the mix took and the time until the hostile clients were done.
    """
    tally = Tally()
    start = time.perf_counter()
    deadline = start + seconds
    others = [
        asyncio.ensure_future(c) for c in (hostile.clients(port, start, deadline, tally) if hostile else [])
    ]
    await asyncio.gather(*(client_loop(port, mix, etags, deadline, seed, tally) for seed in range(clients)))
    mixed = time.perf_counter() - start
    await asyncio.gather(*others)
    return tally, mixed, time.perf_counter() - start


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
    tracebacks: int  # unexpected ones: every traceback but a slow reader's abort
    warm_kib: int = 0  # RSS once warmed up, before the load (run 3)
    warm_threads: int = 0
    end_kib: int = 0  # RSS once every client is done (run 3)
    threads: int = 0  # the server's threads once every client is done (run 3)
    aborts: int = 0  # slow readers aborted, as the server log says (run 3)
    stats: dict[str, dict[str, int]] = field(default_factory=dict)  # our counters (run 3)
    hostile_seconds: float = 0.0  # until the hostile clients were done (run 3)
    rss_kib: list[int] = field(default_factory=list)  # every RSS_EVERY seconds (run 3)

    @property
    def requests(self) -> int:
        return sum(len(self.tally.latencies.get(kind, ())) for kind in MIX)

    @property
    def errors(self) -> int:
        """Errors of every well-behaved client, beside the mix too, and unexpected tracebacks."""
        return sum(self.tally.errors.values()) + self.tracebacks


def segment(
    server: Server, mix: dict[str, int], clients: int, seconds: float, etags: dict[int, str]
) -> Measured:
    """One stretch of load on ``server``; the caller names it and reads the server's RSS."""
    tally, elapsed, _ = asyncio.run(drive(server.port, mix, clients, seconds, etags))
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


def the_mix(clients: int, seconds: float, ours_env: dict[str, str], hostile: Hostile) -> Measured:
    server = uvicorn_server("load-mix", "asgi_ours", **ours_env)
    with server:
        etags = warm(server.base)
        warm_kib = proc_status_kib("VmRSS", server.pid)
        warm_threads = proc_status_kib("Threads", server.pid)  # a count, read the same way
        print(f"  run 3: {clients} clients for {seconds:.0f} s, and the hostile ones", file=sys.stderr)
        samples: list[int] = []
        tally, elapsed, hostile_seconds = asyncio.run(
            sampling_rss(server.pid, samples, drive(server.port, MIX, clients, seconds, etags, hostile))
        )
        result = Measured("3. ours, the mix", tally, elapsed, proc_status_kib("VmHWM", server.pid), 0)
        result.rss_kib = samples
        result.warm_kib, result.warm_threads, result.hostile_seconds = warm_kib, warm_threads, hostile_seconds
        result.end_kib = proc_status_kib("VmRSS", server.pid)
        result.threads = proc_status_kib("Threads", server.pid)
        result.stats = httpx.get(server.base + STATS_PATH, timeout=30.0).json()
    assert server.log is not None
    result.aborts, result.tracebacks = aborts_in_log(
        server.log.read_text(errors="replace"), hostile.send_timeout
    )
    return result


async def sampling_rss(pid: int, samples: list[int], work: Awaitable[T]) -> T:
    """Await ``work`` while appending the RSS of ``pid`` to ``samples`` every `RSS_EVERY` seconds."""

    async def sample() -> None:
        while True:
            samples.append(proc_status_kib("VmRSS", pid))
            await asyncio.sleep(RSS_EVERY)

    sampler = asyncio.create_task(sample())
    try:
        return await work
    finally:
        sampler.cancel()


def ms(values: list[float], quantile: float) -> str:
    if not values:
        return "-"
    if len(values) == 1:
        return f"{values[0] * 1000:,.1f}"
    return f"{statistics.quantiles(values, n=100, method='inclusive')[round(quantile * 100) - 1] * 1000:,.1f}"


def report(results: list[Measured]) -> str:
    headers = ["run", "kind", "requests", "req/s", "errors", "p50 ms", "p99 ms", "server peak RSS"]
    body = []
    for result in results:
        body.append(
            [
                result.label,
                "all",
                f"{result.requests:,}",
                f"{result.requests / result.seconds:,.0f}",
                sum(result.tally.errors.get(kind, 0) for kind in MIX) + result.tracebacks,
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
    return table(headers, body)


# Beside the mix in run 3: hostile clients (what happened to them) and well-behaved ones (errors).
BESIDE = {
    "hang-up": "hostile",
    "after a hang-up": "well-behaved",
    "slow reader": "hostile",
    "beside a slow reader": "well-behaved",
    "stalled section": "well-behaved, hostile provider",
}
WELL = {*MIX, *(kind for kind, behaves in BESIDE.items() if behaves != "hostile")}
STATS_SHOWN = ("renders", "served", "cache_hits", "replayed", "flight_waits", "busy", "provider_errors")


def report_beside(mix: Measured) -> str:
    headers = ["client", "behaves", "requests", "p50 ms", "p99 ms", "errors", "what happened"]
    body = []
    tally = mix.tally
    for kind, behaves in BESIDE.items():
        latencies = tally.latencies.get(kind, [])
        if behaves == "hostile":  # what happened to it, never errors
            outcomes = tally.outcomes.get(kind, Counter())
            count = sum(outcomes.values())
            happened = [f"{n:,} {outcome}" for outcome, n in outcomes.most_common()]
            errors = "n/a"
        else:
            count = len(latencies)
            happened = [f"{n:,} {note}" for note, n in tally.notes.items() if note.startswith(kind)]
            errors = str(tally.errors.get(kind, 0))
        if kind == "slow reader":
            happened.append(f"server log: {mix.aborts:,} aborted after send_timeout")
        body.append(
            [
                kind,
                behaves,
                f"{count:,}",
                ms(latencies, 0.5),
                ms(latencies, 0.99),
                errors,
                "; ".join(happened),
            ]
        )
    return table(headers, body)


def report_memory(mix: Measured, cache_bytes: int, max_renders: int) -> str:
    return (
        f"memory, run 3: RSS {mib(mix.warm_kib)} once warmed up, peak {mib(mix.peak_kib)} under load: "
        f"+{mib(mix.peak_kib - mix.warm_kib)} for a cache limit of {mib(cache_bytes / 1024)} "
        f"and max_renders={max_renders} (each render in progress holds about 1 MB); "
        f"{mib(mix.end_kib)} and {mix.threads} threads ({mix.warm_threads} warmed up) once every "
        f"client was done ({mix.hostile_seconds - mix.seconds:.1f} s after the mix)\n"
        f"RSS during run 3, every {RSS_EVERY:g} s (MiB): "
        + ", ".join(f"{kib / 1024:.0f}" for kib in mix.rss_kib)
    )


def report_stats(mix: Measured) -> str:
    lines = []
    for section, counters in mix.stats.items():
        shown = ", ".join(f"{name} {counters[name]:,}" for name in STATS_SHOWN if name in counters)
        lines.append(f"stats, run 3, {section or 'index and robots.txt'}: {shown}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="load", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="100 clients, 3 s per run (~25 s)")
    parser.add_argument("--clients", type=int, help="concurrent clients (default 300)")
    parser.add_argument("--seconds", type=float, help="length of each run (default 25)")
    parser.add_argument("--cache-bytes", type=int, default=2 * 1024 * 1024, help="MemoryStore limit")
    parser.add_argument("--max-renders", type=int, default=16, help="asgi max_renders (default 16)")
    parser.add_argument("--hang-ups", type=int, default=8, help="clients hanging up (default 8)")
    parser.add_argument("--slow-readers", type=int, default=4, help="clients that stop reading (default 4)")
    parser.add_argument("--stallers", type=int, default=4, help="clients of section stalls (default 4)")
    parser.add_argument("--send-timeout", type=float, default=5.0, help="asgi send_timeout (default 5)")
    parser.add_argument(
        "--provider-timeout", type=float, default=10.0, help="Sitemaps provider_timeout (default 10)"
    )
    args = parser.parse_args(argv)
    clients = args.clients or (100 if args.quick else 300)
    seconds = args.seconds or (3.0 if args.quick else 25.0)
    ours = {
        "BENCH_URLS": str(URLS),
        "BENCH_PAGE_SIZE": str(PAGE_SIZE),
        "BENCH_PROVIDER": "sequence",
        "BENCH_CACHE": str(args.cache_bytes),
        "BENCH_MAX_RENDERS": str(args.max_renders),
        "BENCH_SEND_TIMEOUT": str(args.send_timeout),
        "BENCH_PROVIDER_TIMEOUT": str(args.provider_timeout),
        "BENCH_STALL_PAGES": str(STALL_PAGES),
        "BENCH_STALL_SECONDS": str(args.provider_timeout + 2.0),
        "BENCH_LARGE_PAGES": str(LARGE_PAGES),
    }
    hostile = Hostile(
        hang_ups=args.hang_ups,
        slow_readers=args.slow_readers,
        stallers=args.stallers,
        send_timeout=args.send_timeout,
        stall_seconds=args.provider_timeout + 2.0,  # past the deadline for threads (+0.5 s)
        cold_pages=range(HOT.stop, PAGES + 1),
    )
    print(f"load: {clients} clients, one keep-alive connection each; uvicorn, 1 worker; {machine()}")
    print(
        f"mix: {', '.join(f'{k} {w}%' for k, w in MIX.items())}; pages of {PAGE_SIZE:,} URLs, {PAGES} pages"
    )
    print(
        f"beside it in run 3: {args.hang_ups} hang-ups, {args.slow_readers} slow readers, "
        f"{args.stallers} clients of a provider stalling once a page; provider_timeout "
        f"{args.provider_timeout:g} s, send_timeout {args.send_timeout:g} s, "
        f"stall {hostile.stall_seconds:g} s"
    )
    results = [*app_requests_only(clients, seconds, ours), the_mix(clients, seconds, ours, hostile)]
    mix = results[-1]
    print()
    print(report(results))
    print()
    print(report_beside(mix))
    print()
    print(report_memory(mix, args.cache_bytes, args.max_renders))
    print(report_stats(mix))
    for result in results:
        for cause, count in result.tally.causes.most_common():
            print(f"errors in {result.label}: {count} x {cause}")
        for note, count in result.tally.notes.most_common():
            print(f"not errors, in {result.label}: {count} x {note}")
        if result.tracebacks:
            print(f"errors in {result.label}: {result.tracebacks} tracebacks in the server log")
    total = sum(len(values) for r in results for kind, values in r.tally.latencies.items() if kind in WELL)
    errors = sum(r.errors for r in results)
    sampled = sum(r.tally.sampled for r in results)
    print(f"total: {total:,} requests, {errors} errors, {sampled} sitemap bodies parsed as XML")


if __name__ == "__main__":
    main()
