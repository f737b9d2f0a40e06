"""What the push tests share: a loopback engine, a change log, and a shop that pushes."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from sitemap_middleware import Sitemaps
from sitemap_middleware.changes import ChangeLog
from sitemap_middleware.push import Backoff, IndexNow, Push

from ..conftest import BASE
from ..conftest import Shelf as _Shelf
from .engine import Engine, serving_engine

KEY = "a1b2c3d4-e5f6-key"


class Shelf(_Shelf):
    """The shared `Shelf`, its paths five digits wide (10,001 URLs in one change)."""

    def __init__(self, count: int) -> None:
        super().__init__(count, width=5)


@pytest.fixture
def engine() -> Iterator[Engine]:
    with serving_engine() as engine:
        yield engine


@pytest.fixture
def log_path(tmp_path: Path) -> Path:
    return tmp_path / "changes.sqlite3"


@pytest.fixture
def make_shop(engine: Engine, log_path: Path) -> Iterator[Callable[..., Sitemaps]]:
    """A `Sitemaps` of one section over a `Shelf`, pushing to ``engine``; closed at the end
    (after the engine lets any stalled request go)."""
    made: list[Sitemaps] = []

    def make(shelf: Shelf, *, window: float = 0.05, targets: Any = None, **push: Any) -> Sitemaps:
        push.setdefault("backoff", Backoff(first=0.05, cap=0.2))
        if targets is None:
            targets = [IndexNow(key=KEY, endpoint=engine.url, timeout=5.0)]
        sitemaps = Sitemaps(
            base_url=BASE,
            changes=ChangeLog.sqlite(log_path),
            push=Push(targets, window=window, **push),
        )
        sitemaps.add_provider("products", shelf)
        made.append(sitemaps)
        return sitemaps

    yield make
    engine.release()
    for sitemaps in made:
        sitemaps.close()


def locs(*paths: str) -> list[str]:
    return [f"{BASE}{path}" for path in paths]


@pytest.fixture
def log(tmp_path: Path) -> ChangeLog:
    return ChangeLog.sqlite(tmp_path / "changes.sqlite3")
