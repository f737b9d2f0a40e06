"""What the change log's tests share: `reopen`, the one log of a test on each backend."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from sitemap_middleware.changes import ChangeLog


@pytest.fixture(params=["sqlite", "redis"])
def reopen(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], ChangeLog]:
    """Opens the one log of this test again, as a restarted worker would: the same SQLite
    file, or the same Redis and prefix through a new client."""
    if request.param == "sqlite":
        return lambda: ChangeLog.sqlite(tmp_path / "changes.sqlite3")
    server = request.getfixturevalue("redis_server")
    prefix = f"changes-{uuid.uuid4().hex}"
    return lambda: ChangeLog.redis(server.url, prefix=prefix)
