"""memory: peak RSS while serving 1M and 10M URLs from a generator provider, cache off and on.

    python benchmarks/run.py memory [--quick] [--full] [--cache-bytes N]

Each measurement is a fresh subprocess (so ``VmHWM``, the kernel's peak RSS, belongs to
that run alone) that serves requests through the WSGI middleware in-process and reads
every body chunk by chunk, discarding it, as a crawler asking for gzip would. Two run
at a time, one per core; RSS does not depend on speed.

Which pages: with a plain generator and no cache, page *n* is found by measuring the
*n - 1* pages before it, so fetching every page of 200 is ~100 full passes over 10M
URLs (hours). Each run therefore fetches the index (a full pass over every URL) and the
same pages at both scales: 1 and 2 with the cache off; 1 to 10 and the last with it on
(more than the cache holds). ``--full`` adds the last page to the cache-off runs (one more
full pass). Where the package supports a declared ``count`` and ``offset``/``limit``
providers, a *windowed* generator run fetches every page once, a linear sweep (at 1M;
at 10M too with ``--full``).
"""

from __future__ import annotations

import argparse
import inspect
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from common import BASE_URL, EPOCH, bench_env, close_wsgi, machine, mib, proc_status_kib, table

from sitemap_middleware import Sitemaps, Url
from sitemap_middleware.caching.stores import MemoryStore

LASTMODS = [EPOCH + timedelta(minutes=n) for n in range(1000)]


@dataclass(frozen=True)
class Run:
    """One child process: what it serves and which pages it asks for."""

    label: str
    urls: int
    page_size: int
    cache_bytes: int | None  # None: cache off
    pages: list[int]  # page numbers; -1 is the last page
    windowed: bool = False  # a counted, offset/limit generator provider

    @property
    def page_count(self) -> int:
        return -(-self.urls // self.page_size)


# -- the child ----------------------------------------------------------------------------------


def products(count: int, start: int = 0, stop: int | None = None) -> Iterator[Url]:
    """The generator provider: URLs made on the fly (``&`` in each; 1% non-ASCII), none kept."""
    for n in range(start, count if stop is None else min(stop, count)):
        path = (
            f"/p/caf\u00e9-{n}?colour=red&size={n % 7}" if n % 100 == 0 else f"/p/{n}?colour=red&size={n % 7}"
        )
        yield Url(path, lastmod=LASTMODS[n % 1000], changefreq="daily", priority=0.8)


def supports_count() -> bool:
    return "count" in inspect.signature(Sitemaps.provider).parameters


def build(run: Run) -> Sitemaps:
    cache = None if run.cache_bytes is None else MemoryStore(max_bytes=run.cache_bytes)
    sitemaps = Sitemaps(base_url=BASE_URL, cache=cache, page_size=run.page_size)
    if run.windowed:

        def windowed(offset: int = 0, limit: int | None = None) -> Iterator[Url]:
            return products(run.urls, offset, None if limit is None else offset + limit)

        sitemaps.provider("products", count=lambda: run.urls)(windowed)  # type: ignore[call-arg]
    else:
        sitemaps.provider("products")(lambda: products(run.urls))
    return sitemaps


def _not_found(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    start_response("404 Not Found", [("Content-Type", "text/plain")])
    return [b""]


def fetch(app: Any, path: str) -> int:
    """GET ``path`` with gzip, reading the body chunk by chunk and keeping none of it."""
    environ = {"REQUEST_METHOD": "GET", "PATH_INFO": path, "SCRIPT_NAME": "", "HTTP_ACCEPT_ENCODING": "gzip"}
    status: list[str] = []
    result = app(environ, lambda s, h, exc_info=None: status.append(s))
    size = 0
    try:
        for chunk in result:
            size += len(chunk)
    finally:
        close_wsgi(result)
    if not status[0].startswith("200"):
        raise RuntimeError(f"{path} answered {status[0]}")
    return size


def child(run: Run) -> dict[str, Any]:
    sitemaps = build(run)
    app = sitemaps.wsgi(_not_found)
    baseline = proc_status_kib("VmRSS")
    start = time.perf_counter()
    sent = fetch(app, "/sitemap-index.xml")
    for page in run.pages:
        sent += fetch(app, f"/sitemap-products-{run.page_count if page == -1 else page}.xml")
    held = sitemaps.cache.current_bytes if isinstance(sitemaps.cache, MemoryStore) else 0
    return {
        "seconds": time.perf_counter() - start,
        "baseline_kib": baseline,
        "peak_kib": proc_status_kib("VmHWM"),
        "sent": sent,
        "held": held,
    }


# -- the parent ---------------------------------------------------------------------------------


def spawn(run: Run) -> dict[str, Any]:
    argv = [sys.executable, str(Path(__file__).resolve()), "--child", json.dumps(asdict(run))]
    done = subprocess.run(argv, capture_output=True, text=True, env=bench_env(), check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{run.label} failed:\n{done.stderr[-3000:]}")
    print(f"  {run.label}: done", file=sys.stderr)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def pages_text(run: Run) -> str:
    if run.pages == list(range(1, run.page_count + 1)):
        return f"index + all {run.page_count}"
    names = ["last" if p == -1 else str(p) for p in run.pages]
    if len(names) > 4 and run.pages[: len(names) - 1] == list(range(1, len(names))):
        names = [f"1-{len(names) - 1}", names[-1]]
    return "index + " + ", ".join(names)


def plan_runs(small: int, large: int, page_size: int, cache_bytes: int, *, full: bool) -> list[Run]:
    """The same requests at both scales; the long runs first, so two at a time stay balanced."""
    off = [1, 2, -1] if full else [1, 2]
    sweep = [*range(1, 11), -1]  # ten pages overflow the default limit; then the last one
    runs = [
        Run("cache off, 10M-scale", large, page_size, None, off),
        Run("cache on, 10M-scale", large, page_size, cache_bytes, sweep),
        Run("cache off, 1M-scale", small, page_size, None, off),
        Run("cache on, 1M-scale", small, page_size, cache_bytes, sweep),
    ]
    if supports_count():
        every = list(range(1, -(-small // page_size) + 1))
        runs.append(Run("windowed + count, cache off, 1M-scale", small, page_size, None, every, True))
        if full:
            every = list(range(1, -(-large // page_size) + 1))
            runs.append(Run("windowed + count, cache off, 10M-scale", large, page_size, None, every, True))
    return runs


def report(runs: list[Run], results: list[dict[str, Any]]) -> str:
    headers = ["run", "URLs", "pages", "fetched", "cache limit", "time s", "RSS after setup", "peak RSS"]
    headers += ["peak - setup", "cache holds"]
    body = []
    for run, result in zip(runs, results, strict=True):
        limit = "off" if run.cache_bytes is None else mib(run.cache_bytes / 1024)
        body.append(
            [
                run.label,
                f"{run.urls:,}",
                run.page_count,
                pages_text(run),
                limit,
                f"{result['seconds']:,.1f}",
                mib(result["baseline_kib"]),
                mib(result["peak_kib"]),
                mib(result["peak_kib"] - result["baseline_kib"]),
                mib(result["held"] / 1024),
            ]
        )
    return table(headers, body)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="memory", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="100k and 1M URLs in pages of 5,000 (~15 s)")
    parser.add_argument(
        "--full", action="store_true", help="also the last page without cache; every page at 10M windowed"
    )
    parser.add_argument(
        "--cache-bytes", type=int, default=2 * 1024 * 1024, help="MemoryStore limit (default 2 MiB)"
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(Run(**json.loads(args.child)))))
        return
    small, large, page_size = (100_000, 1_000_000, 5_000) if args.quick else (1_000_000, 10_000_000, 50_000)
    runs = plan_runs(small, large, page_size, args.cache_bytes, full=args.full)
    print(f"memory: peak RSS (VmHWM) of one process per run, gzip bodies read and discarded; {machine()}")
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(spawn, runs))
    print()
    print(report(runs, results))
    off = {
        run.urls: result["peak_kib"]
        for run, result in zip(runs, results, strict=True)
        if run.cache_bytes is None and not run.windowed
    }
    if small in off and large in off:
        growth = off[large] / off[small]
        verdict = "met" if growth <= 1.10 else "missed"
        print(
            f"\npeak RSS, cache off, {large:,} / {small:,} URLs: {growth:.3f}x (target <= 1.10x: {verdict})"
        )
    if not supports_count():
        print("windowed + count: not supported yet (Sitemaps.provider has no count=)")


if __name__ == "__main__":
    main()
