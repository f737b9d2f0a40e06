"""`ChangeLog`: what the sitemaps published, URL by URL, and what changed between renders.

    sitemaps = Sitemaps(base_url=..., changes=ChangeLog.sqlite("var/sitemap-changes.sqlite3"))
    sitemaps.refresh()                                   # a periodic job: every page, now
    for change in sitemaps.changes.since(last_run):      # oldest first
        print(change.kind, change.loc, change.at)

Every page rendered completely (a crawler's request, an export, a refresh) is recorded,
whichever worker rendered it (`ledger.record` says how a page becomes changes). The log
lives in a backend: `sqlite` (one file, one machine) or `redis` (a fleet).
"""

from __future__ import annotations

import os
from contextlib import AbstractContextManager
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from ..errors import ConfigurationError
from .ledger import Ledger, Recorded, record
from .model import Change, SectionState, Seen

if TYPE_CHECKING:
    from redis import Redis

__all__ = ["DEFAULT_PATH", "Backend", "ChangeLog"]

DEFAULT_PATH = "sitemap-changes.sqlite3"


class Backend(Protocol):
    """Where a log is kept (`sqlite.SqliteBackend`, `sitemap_middleware.redis`)."""

    def ledger(self, scope: str, section: str) -> AbstractContextManager[Ledger]:
        """One section's records inside one transaction: committed when the block ends
        normally, nothing written when it raises."""
        ...

    def state(self, scope: str, section: str) -> SectionState | None: ...

    def since(self, when: float | None, section: str | None, scope: str | None = None) -> list[Change]: ...

    def counts(self, when: float, scope: str, section: str) -> dict[str, int]: ...


class ChangeLog:
    """A log of the URLs the sitemaps published, kept in ``backend``.

    Make one with `ChangeLog.sqlite` or `ChangeLog.redis` and give it to
    ``Sitemaps(changes=...)``; one log may serve one `Sitemaps` (its sections are
    recorded under the site's base URL and mount prefix, so several sites may share it).
    """

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    @classmethod
    def sqlite(cls, path: str | os.PathLike[str] = DEFAULT_PATH) -> ChangeLog:
        """A log in one SQLite file, created on first use: the workers of one machine share it."""
        from .sqlite import SqliteBackend

        if not str(path):
            raise ConfigurationError("ChangeLog.sqlite needs a file path")
        return cls(SqliteBackend(path))

    @classmethod
    def redis(
        cls,
        url_or_client: str | Redis,
        *,
        prefix: str = "sitemap-changes",
        lock_timeout: float = 10.0,
        wait_timeout: float = 30.0,
    ) -> ChangeLog:
        """A log in Redis that every worker of a fleet shares, each change recorded once
        (`sitemap_middleware.redis.changes`).

        - ``url_or_client``: ``"redis://127.0.0.1:6379/0"`` (a client that gives up after
          2 s when Redis stops answering), or a ``redis.Redis`` (decode_responses=False).
        - ``prefix``: of every key the log writes; one per log sharing a Redis.
        - ``lock_timeout``: seconds a section stays locked by a worker that died recording it.
        - ``wait_timeout``: seconds a worker waits for another's lock before `ChangeLogError`.
        """
        try:
            import redis as redis_client
            from redis.backoff import NoBackoff
            from redis.retry import Retry

            from ..redis.changes import RedisChanges
        except ImportError as error:
            raise ConfigurationError(
                "ChangeLog.redis needs the redis client: pip install 'sitemap-middleware[redis]'"
            ) from error
        if isinstance(url_or_client, str):
            if not url_or_client:
                raise ConfigurationError("ChangeLog.redis needs a redis:// URL or a redis.Redis client")
            # A record waits this long at most on a Redis that stopped answering; the one
            # retry is safe (the commit recognises its own token).
            client = redis_client.Redis.from_url(
                url_or_client,
                socket_timeout=2.0,
                socket_connect_timeout=1.0,
                retry=Retry(NoBackoff(), 1),
            )
        elif isinstance(url_or_client, redis_client.Redis):
            client = url_or_client
        else:
            raise ConfigurationError(
                f"ChangeLog.redis needs a redis:// URL or a redis.Redis client, not {url_or_client!r}"
            )
        return cls(RedisChanges(client, prefix=prefix, lock_timeout=lock_timeout, wait_timeout=wait_timeout))

    def record(self, seen: Seen, *, pages: int | None, at: float) -> Recorded:
        """Record one page rendered completely (`ledger.record`): its changes, reported once."""
        with self.backend.ledger(seen.scope, seen.section) as ledger:
            return record(ledger, seen, pages=pages, at=at)

    def since(self, when: datetime | None = None, section: str | None = None) -> list[Change]:
        """The changes recorded after ``when`` (an aware datetime; ``None``: all), oldest first."""
        if when is not None and when.tzinfo is None:
            raise ConfigurationError("changes.since needs an aware datetime (one with a tzinfo)")
        return self.backend.since(None if when is None else when.timestamp(), section)

    def state(self, scope: str, section: str) -> SectionState | None:
        """What the log keeps of a section under ``scope`` (site root and mount prefix)."""
        return self.backend.state(scope, section)

    def counts(self, when: float, scope: str, section: str) -> dict[str, int]:
        """How many changes of each kind the section had after ``when`` (seconds since the epoch)."""
        return self.backend.counts(when, scope, section)
