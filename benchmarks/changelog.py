"""changelog: what the change log costs: a cold page with and without it, bytes per URL, a refresh.

    python benchmarks/run.py changelog [--quick] [--rounds N] [--urls N] [--rows N]

- **cold page**: one 50,000-URL page (`memory.products`: ``&`` in every loc, 1% non-ASCII,
  lastmod, changefreq, priority) through ``sitemaps.wsgi`` in-process with the default cache,
  cold each time (``invalidate()`` first), gzip and identity, its body read to the end, the
  log off and on over the same data: the page unchanged since the log last saw it (a
  re-render after a TTL or an invalidate: the common case), and every URL's lastmod moved
  between rounds (the worst case: the page is read back and all 50,000 URLs compared and
  written). Rounds interleaved, order rotating; the median round, its ratio to the log off
  over the same data, and the log's own thread's work after the last byte.
- **bytes per URL**: ``--urls`` URLs (default 10M; ``--quick`` 1M) recorded in pages of
  50,000 into a fresh SQLite log (the baseline pass), straight through `ChangeLog.record`
  from rendered pages; the file's size over the URLs, and the pass's time.
- **trim**: ``--trim-urls`` URLs (default 1M) recorded in a fresh log (SQLite; Redis beside
  ``--redis-keys`` keys of a cache, default 100,000), then every
  lastmod moved twice, a day apart (two changes a URL), then the first day's trimmed
  (`ChangeLog.trim`) while another thread records an unchanged page every 10 ms, as a busy
  worker serving crawlers would: the trim's time, and that record's time alone and during it.
- **refresh**: ``sitemaps.refresh()`` of a keyset section over ``--rows`` rows of SQLite
  (`keyset.catalogue`, built once: 10M rows, ~700 MB; ``--quick`` 1M) with a fresh log: the
  baseline, again unchanged, and after 1% of the rows were updated.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from common import BASE_URL, close_wsgi, machine, ratio, table
from keyset import catalogue
from memory import products

from sitemap_middleware import Sitemaps, Url
from sitemap_middleware.changes import ChangeLog
from sitemap_middleware.changes.model import Seen

PAGE = 50_000


def _not_found(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    start_response("404 Not Found", [("Content-Type", "text/plain")])
    return [b"Not Found\n"]


class Moving:
    """`memory.products`, whose lastmods all move when ``moved`` is set (a changed page)."""

    def __init__(self) -> None:
        self.moved = False

    def __call__(self) -> Any:
        for entry in products(PAGE):
            yield Url(entry.loc, lastmod="2026-11-30" if self.moved else entry.lastmod, changefreq="daily")


def cold_page(rounds: int, folder: Path) -> None:
    print(f"\n### cold page: one {PAGE:,}-URL page, default cache, cold ({rounds} rounds, median)\n")
    contenders: dict[str, tuple[Sitemaps, Moving, Callable[[Moving], None]]] = {}

    def keep(_: Moving) -> None:
        return None

    def flip(provider: Moving) -> None:
        provider.moved = not provider.moved

    for name, log, before in (
        ("log off, page unchanged", None, keep),
        ("log on, page unchanged", ChangeLog.sqlite(folder / "same.sqlite3"), keep),
        ("log off, every URL changed", None, flip),
        ("log on, every URL changed", ChangeLog.sqlite(folder / "moved.sqlite3"), flip),
    ):
        provider = Moving()
        sitemaps = Sitemaps(base_url=BASE_URL, changes=log)
        sitemaps.add_provider("products", provider)
        contenders[name] = (sitemaps, provider, before)
        sitemaps.refresh()  # the plan and the log's baseline
    times: dict[tuple[str, str], list[float]] = {}
    after: dict[tuple[str, str], list[float]] = {}
    names = list(contenders)
    for round_number in range(rounds):
        order = names[round_number % len(names) :] + names[: round_number % len(names)]
        for encoding in ("identity", "gzip"):
            for name in order:
                sitemaps, provider, before = contenders[name]
                before(provider)
                sitemaps.invalidate()
                app = sitemaps.wsgi(_not_found)
                environ = {
                    "REQUEST_METHOD": "GET",
                    "PATH_INFO": "/sitemap-products-1.xml",
                    "HTTP_ACCEPT_ENCODING": encoding,
                    "wsgi.url_scheme": "https",
                }
                started = time.perf_counter()
                result = app(environ, lambda status, headers, exc_info=None: None)
                size = sum(len(chunk) for chunk in result)
                close_wsgi(result)
                answered = time.perf_counter()
                if sitemaps.changes is not None:
                    sitemaps.changes.flush()  # the log's own thread: after the last byte
                times.setdefault((name, encoding), []).append(answered - started)
                after.setdefault((name, encoding), []).append(time.perf_counter() - answered)
                assert size > 0
    rows = []
    for encoding in ("identity", "gzip"):
        for name in names:
            # Against the log off over the same data: a changed page's lastmods are other values.
            reference = statistics.median(times[(name.replace("log on", "log off"), encoding)])
            values = times[(name, encoding)]
            middle = statistics.median(values)
            rows.append(
                [
                    encoding,
                    name,
                    f"{middle * 1000:.0f}",
                    f"{min(values) * 1000:.0f}-{max(values) * 1000:.0f}",
                    ratio(middle, reference),
                    f"{statistics.median(after[(name, encoding)]) * 1000:.0f}",
                ]
            )
    print(
        table(
            ["encoding", "path", "to last byte, ms", "range", "vs log off", "log's thread after, ms"],
            rows,
        )
    )


def bytes_per_url(urls: int, folder: Path) -> None:
    print(f"\n### bytes per URL: {urls:,} URLs in pages of {PAGE:,}, recorded in a fresh SQLite log\n")
    from sitemap_middleware.protocol.entries import Normaliser
    from sitemap_middleware.protocol.render import Limits, PageWriter
    from sitemap_middleware.protocol.uris import Site

    path = folder / "size.sqlite3"
    log = ChangeLog.sqlite(path)
    normalise = Normaliser(Site.parse(BASE_URL))
    pages = -(-urls // PAGE)
    render = record = 0.0
    for number in range(1, pages + 1):
        started = time.perf_counter()
        writer = PageWriter(normalise, limits=Limits(), on_skip=lambda error, raw: None)
        batch = list(products(min(urls, number * PAGE), start=(number - 1) * PAGE))
        body = writer.head() + writer.feed(batch) + writer.tail()
        seen = Seen(BASE_URL, "products", number, hashlib.sha256(body).digest(), lambda body=body: body)
        middle = time.perf_counter()
        log.record(seen, pages=pages, at=time.time())
        record += time.perf_counter() - middle
        render += middle - started
    log.backend.close()  # type: ignore[attr-defined]
    db = sqlite3.connect(path)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    size = sum(f.stat().st_size for f in folder.glob("size.sqlite3*"))
    print(
        table(
            [
                "URLs",
                "file bytes",
                "bytes per URL",
                "render (s)",
                "record, baseline (s)",
                "record per page (ms)",
            ],
            [
                [
                    f"{urls:,}",
                    f"{size:,}",
                    f"{size / urls:.0f}",
                    f"{render:.1f}",
                    f"{record:.1f}",
                    f"{record / pages * 1000:.0f}",
                ]
            ],
        )
    )


def _rendered(number: int, urls: int, lastmod: str) -> Seen:
    """Page ``number`` of `memory.products` cut into pages of `PAGE`, every lastmod ``lastmod``."""
    from msgspec.structs import replace

    from sitemap_middleware.protocol.entries import Normaliser
    from sitemap_middleware.protocol.render import Limits, PageWriter
    from sitemap_middleware.protocol.uris import Site

    writer = PageWriter(Normaliser(Site.parse(BASE_URL)), limits=Limits(), on_skip=lambda error, raw: None)
    batch = [
        replace(url, lastmod=lastmod) for url in products(min(urls, number * PAGE), start=(number - 1) * PAGE)
    ]
    body = writer.head() + writer.feed(batch) + writer.tail()
    return Seen(BASE_URL, "products", number, hashlib.sha256(body).digest(), lambda: body)


def trim(urls: int, folder: Path, redis_keys: int) -> None:
    print(
        f"\n### trim: {urls:,} URLs, each changed on day 2 and day 3; day 2 trimmed while a worker records\n"
    )
    import redis
    from fleet import redis_server

    rows = [["SQLite", *measure_trim(ChangeLog.sqlite(folder / "trim.sqlite3", keep=None), urls)]]
    with redis_server() as url:
        # Other keys beside the log's, as a Redis shared with a `RedisStore` holds (documents).
        client = redis.Redis.from_url(url)
        for start in range(0, redis_keys, 10_000):
            pipe = client.pipeline(transaction=False)
            for n in range(start, min(redis_keys, start + 10_000)):
                pipe.set(f"sitemap-cache:document:{n}", b"x" * 64)
            pipe.execute()
        client.close()
        label = f"Redis, {redis_keys:,} other keys"
        rows.append([label, *measure_trim(ChangeLog.redis(url, keep=None), urls)])
    print(
        table(
            [
                "log",
                "changes",
                "removed",
                "trim, s",
                "removed a second",
                "record alone, ms (median / max)",
                "record during the trim",
                "records during it",
            ],
            rows,
        )
    )


def measure_trim(log: ChangeLog, urls: int) -> list[str]:
    """Trim day 2 of ``log`` (three passes over ``urls`` URLs, a day apart) while another
    thread records an unchanged page: the table's cells."""
    day = 86_400.0
    pages = -(-urls // PAGE)
    for at, lastmod in ((day, "2026-11-01"), (2 * day, "2026-11-02"), (3 * day, "2026-11-03")):
        for number in range(1, pages + 1):
            log.record(_rendered(number, urls, lastmod), pages=pages, at=at)
    unchanged = _rendered(1, urls, "2026-11-03")
    kept = len(log.since())

    def record_once() -> float:
        started = time.perf_counter()
        log.record(unchanged, pages=pages, at=3 * day)
        return time.perf_counter() - started

    alone = [record_once() for _ in range(50)]
    during: list[float] = []
    done = threading.Event()

    def worker() -> None:
        # A page every 10 ms: a hundred a second, far more than crawlers make a worker render.
        while not done.wait(0.01):
            during.append(record_once())

    thread = threading.Thread(target=worker)
    thread.start()
    started = time.perf_counter()
    trimmed = log.trim(_aware(2.5 * day))
    elapsed = time.perf_counter() - started
    done.set()
    thread.join()
    assert len(log.since()) == kept - urls and not trimmed.held, (kept, trimmed)

    def ms(values: list[float]) -> str:
        return f"{statistics.median(values) * 1000:.1f} / {max(values) * 1000:.1f}"

    return [
        f"{kept + 2 * pages:,}",
        f"{trimmed.removed:,}",
        f"{elapsed:.2f}",
        f"{trimmed.removed / elapsed:,.0f}",
        ms(alone),
        ms(during),
        f"{len(during):,}",
    ]


def refresh(rows: int, folder: Path) -> None:
    print(f"\n### refresh: a keyset section of {rows:,} SQLite rows, pages of {PAGE:,}\n")
    from sqlalchemy import Column, DateTime, Integer, MetaData, String, Table, create_engine, select

    from sitemap_middleware.sqlalchemy import keyset

    source_file = catalogue(rows)
    database = folder / "catalogue.sqlite3"
    shutil.copyfile(source_file, database)  # the 1% update must not touch the cached file
    product = Table(
        "product",
        MetaData(),
        Column("id", Integer, primary_key=True),
        Column("slug", String(64)),
        Column("updated_at", DateTime),
    )
    engine = create_engine(f"sqlite:///{database}")
    sitemaps = Sitemaps(base_url=BASE_URL, changes=ChangeLog.sqlite(folder / "refresh.sqlite3"))
    sitemaps.add_provider(
        "products",
        keyset(
            engine,
            select(product.c.id, product.c.slug, product.c.updated_at),
            key=product.c.id,
            entry=lambda row: Url(f"/p/{row.slug}", lastmod=row.updated_at),
        ),
        page_size=PAGE,
    )
    lines = []
    for label, prepare in (
        ("baseline (fresh log)", None),
        ("again, nothing changed", None),
        ("after 1% of rows updated", lambda: _touch(database, rows)),
    ):
        if prepare is not None:
            prepare()
        since = time.time()
        started = time.perf_counter()
        done = sitemaps.refresh()
        elapsed = time.perf_counter() - started
        changed = len(sitemaps.changes.since(_aware(since)))  # type: ignore[union-attr]
        lines.append([label, f"{done.pages['products']:,}", f"{elapsed:.1f}", f"{changed:,}"])
    print(table(["refresh", "pages", "seconds", "changes recorded"], lines))
    engine.dispose()


def _aware(timestamp: float) -> Any:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(timestamp, UTC)


def _touch(database: Path, rows: int) -> None:
    db = sqlite3.connect(database)
    db.execute("UPDATE product SET updated_at = datetime('now', '-1 day') WHERE id % 100 = 7")
    db.commit()
    db.close()


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="run.py changelog", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1M URLs and rows, 3 rounds")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--urls", type=int, default=None)
    parser.add_argument("--rows", type=int, default=None)
    parser.add_argument("--trim-urls", type=int, default=1_000_000)
    parser.add_argument("--redis-keys", type=int, default=100_000)
    parser.add_argument("--only", choices=("cold", "size", "trim", "refresh"), default=None)
    options = parser.parse_args(argv)
    rounds = options.rounds or (3 if options.quick else 9)
    urls = options.urls or (1_000_000 if options.quick else 10_000_000)
    rows = options.rows or (1_000_000 if options.quick else 10_000_000)
    print(f"## changelog ({machine()})")
    folder = Path(tempfile.mkdtemp(prefix="changelog-bench-", dir=os.environ.get("BENCH_TMP")))
    try:
        if options.only in (None, "cold"):
            cold_page(rounds, folder)
        if options.only in (None, "size"):
            bytes_per_url(urls, folder)
        if options.only in (None, "trim"):
            trim(options.trim_urls, folder, options.redis_keys)
        if options.only in (None, "refresh"):
            refresh(rows, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
