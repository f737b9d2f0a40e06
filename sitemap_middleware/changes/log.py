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
import queue
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import datetime
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from ..errors import ConfigurationError
from .ledger import Ledger, Recorded, record
from .model import Change, Delivery, SectionState, Seen

if TYPE_CHECKING:
    from redis import Redis

__all__ = ["DEFAULT_PATH", "Backend", "ChangeLog", "Windowed"]

DEFAULT_PATH = "sitemap-changes.sqlite3"
_PENDING = 4  # pages waiting to be recorded, at most
_ROOM_WAIT = 2.0  # seconds a render waits for one of them to be recorded, at most


class Backend(Protocol):
    """Where a log is kept (`sqlite.SqliteBackend`, `sitemap_middleware.redis`)."""

    def ledger(self, scope: str, section: str) -> AbstractContextManager[Ledger]:
        """One section's records inside one transaction: committed when the block ends
        normally, nothing written when it raises."""
        ...

    def state(self, scope: str, section: str) -> SectionState | None: ...

    def since(self, when: float | None, section: str | None, scope: str | None = None) -> list[Change]: ...

    def counts(self, when: float, scope: str, section: str) -> dict[str, int]: ...

    # The outbox: what must reach another system, delivered from the log (`ChangeLog.claim`).

    def subscribe(self, consumer: str) -> None: ...

    def claim(
        self, consumer: str, scope: str | None, holder: str, *, limit: int, lease: float, now: float
    ) -> Delivery | None: ...

    def acknowledge(self, delivery: Delivery) -> bool: ...

    def release(self, delivery: Delivery) -> None: ...

    def pending(self, consumer: str) -> int: ...


class ChangeLog:
    """A log of the URLs the sitemaps published, kept in ``backend``.

    Make one with `ChangeLog.sqlite` or `ChangeLog.redis` and give it to
    ``Sitemaps(changes=...)``; one log may serve one `Sitemaps` (its sections are
    recorded under the site's base URL and mount prefix, so several sites may share it).
    """

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        # Pages rendered, waiting to be recorded off their render (`record_later`).
        self._pending: queue.Queue[Callable[[], None]] = queue.Queue(maxsize=_PENDING)
        self.room_wait = _ROOM_WAIT
        self._worker: threading.Thread | None = None
        self._lock = threading.Lock()

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

    def record_later(self, job: Callable[[], None]) -> bool:
        """Run ``job`` (a `record` and what follows it) on the log's own thread, in order;
        ``False`` when it was dropped.

        A render hands its page over and ends: its readers get their last bytes, and its
        slot is free, however long the log takes. At most a few pages wait (each a gzip
        copy); past that the render waits for room, so pages are recorded in the order
        they were rendered and memory stays bounded, but never more than ``room_wait``
        seconds (a log locked by another process): then the page is dropped, which loses
        nothing, since its next render is compared with what the log last saw.
        """
        with self._lock:
            if self._worker is None or not self._worker.is_alive():
                self._worker = threading.Thread(target=self._work, name="sitemap-changes", daemon=True)
                self._worker.start()
        try:
            self._pending.put(job, timeout=self.room_wait)
        except queue.Full:
            return False
        return True

    def flush(self) -> None:
        """Wait until every page handed to `record_later` in this process is recorded."""
        self._pending.join()

    def _work(self) -> None:
        while True:
            job = self._pending.get()
            try:
                job()  # it handles its own failures (`watch.Recorder`)
            finally:
                self._pending.task_done()

    def since(self, when: datetime | None = None, section: str | None = None) -> list[Change]:
        """The changes recorded after ``when`` (an aware datetime; ``None``: all), oldest first,
        including those of every page this process rendered before the call."""
        if when is not None and when.tzinfo is None:
            raise ConfigurationError("changes.since needs an aware datetime (one with a tzinfo)")
        self.flush()
        return self.backend.since(None if when is None else when.timestamp(), section)

    def state(self, scope: str, section: str) -> SectionState | None:
        """What the log keeps of a section under ``scope`` (site root and mount prefix)."""
        return self.backend.state(scope, section)

    def counts(self, when: float, scope: str, section: str) -> dict[str, int]:
        """How many changes of each kind the section had after ``when`` (seconds since the epoch)."""
        return self.backend.counts(when, scope, section)

    # -- the outbox ----------------------------------------------------------------------------

    def subscribe(self, consumer: str) -> None:
        """Give ``consumer`` (a name: ``"indexnow|https://shop.example"``) a cursor at the newest
        change, if it has none: it is delivered every change recorded from now on, and none
        before (IndexNow wants what changed since you started using it)."""
        self.backend.subscribe(consumer)

    def claim(
        self,
        consumer: str,
        holder: str,
        *,
        scope: str | None = None,
        limit: int = 10_000,
        lease: float = 60.0,
    ) -> Delivery | None:
        """The oldest undelivered changes of ``consumer`` (at most ``limit``; only sections under
        ``scope``, a site root, if given), leased to ``holder`` for ``lease`` seconds, or ``None``
        (nothing waits, or another holder delivers them now). Pages handed to `record_later`
        are recorded first."""
        self.flush()
        return self.backend.claim(consumer, scope, holder, limit=limit, lease=lease, now=time.time())

    def acknowledge(self, delivery: Delivery) -> bool:
        """``delivery`` was answered: its consumer's cursor moves past it. ``False`` when its
        lease had run out and another holder may have delivered it too."""
        return self.backend.acknowledge(delivery)

    def release(self, delivery: Delivery) -> None:
        """``delivery`` was not answered: it is delivered again later, by whoever claims it."""
        self.backend.release(delivery)

    def pending(self, consumer: str) -> int:
        """How many changes wait for ``consumer``."""
        return self.backend.pending(consumer)

    def recent(self, when: float, root: str) -> list[Change]:
        """The changes recorded after ``when`` in the site at ``root``, oldest first.

        A backend that can select them by site itself (`Windowed`) does; another is asked
        for the changes of the scope ``root`` (its sections at no mount prefix).
        """
        self.flush()  # the pages this process rendered are in it
        if isinstance(self.backend, Windowed):
            return self.backend.recent(when, root)
        return self.backend.since(when, None, root)

    def mark(self, when: float) -> str:
        """A token that moves whenever the changes recorded after ``when`` do (a new one, or
        the oldest sliding out): the declared version of a recent section (`recent`)."""
        self.flush()
        if isinstance(self.backend, Windowed):
            return self.backend.mark(when)
        changes = self.backend.since(when, None)
        return f"{len(changes)}:{changes[-1].at.timestamp() if changes else None}"


@runtime_checkable
class Windowed(Protocol):
    """A backend's optional capability: the recent changes of one site, and a cheap mark
    of them, read by the backend itself (`sqlite.SqliteBackend`) rather than from `since`."""

    def recent(self, when: float, root: str) -> list[Change]: ...

    def mark(self, when: float) -> str: ...
