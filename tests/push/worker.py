"""A worker process for the crash and fleet tests: ``python -m tests.push.worker LOG ENGINE PATHS``.

It builds the push tests' shop over the paths in the file PATHS, refreshes it (recording
what changed in the log at LOG: a SQLite file, or a ``redis://`` URL shared by a fleet),
and waits while its push thread POSTs to ENGINE, until it is killed.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path

from sitemap_middleware import Sitemaps
from sitemap_middleware.changes import ChangeLog
from sitemap_middleware.push import IndexNow, Push

from ..conftest import BASE
from .conftest import KEY, Shelf

LEASE = 3.0  # seconds: the next process waits this long for a dead worker's lease
POLL = 0.25  # seconds between two looks at the outbox
TIMEOUT = 2.5  # seconds a POST may take: longer than the test takes to kill the worker


def shop(log: str, engine: str, shelf: Shelf) -> Sitemaps:
    target = IndexNow(key=KEY, endpoint=engine, timeout=TIMEOUT)
    push = Push([target], lease=LEASE, poll=POLL)
    changes = ChangeLog.redis(log, prefix="fleet") if log.startswith("redis://") else ChangeLog.sqlite(log)
    sitemaps = Sitemaps(base_url=BASE, changes=changes, push=push)
    sitemaps.add_provider("products", shelf)
    return sitemaps


def baselined(log: str, engine: str, folder: Path, *added: str) -> Path:
    """A log whose baseline this process recorded over three rows, and the file of paths a
    worker then serves: those rows and ``added`` (the changes it records, and pushes)."""
    shelf = Shelf(3)
    baseline = shop(log, engine, shelf)
    baseline.refresh()
    baseline.close()
    paths = folder / "paths.txt"
    paths.write_text("\n".join([*shelf.rows, *added]))
    return paths


def main(log: str, engine: str, paths: str) -> None:
    shelf = Shelf(0)
    shelf.rows = dict.fromkeys(Path(paths).read_text().split())
    shop(log, engine, shelf).refresh()
    print("recorded", flush=True)
    threading.Event().wait()  # until killed


if __name__ == "__main__":
    main(*sys.argv[1:])
