"""`ChangeLog`: what the sitemaps published, URL by URL, and what changed between renders.

    sitemaps = Sitemaps(base_url=..., changes=ChangeLog.sqlite("var/sitemap-changes.sqlite3"))
    sitemaps.refresh()                                   # a periodic job: every page, now
    for change in sitemaps.changes.since(last_run):      # oldest first
        print(change.kind, change.loc, change.at)

Every page rendered completely (a crawler's request, an export, a refresh) is recorded,
whichever worker rendered it (`ledger.record` says how a page becomes changes). The log
lives in a backend: `sqlite` (one file, one machine) or `redis` (a fleet).

It keeps what changed for ``keep`` (90 days by default) and trims the rest as it records
(`trim`): a log that grew forever would cost every site its disk (or its Redis memory) in
the end, and nobody asks a sitemap what changed a year ago. It never trims a change a
consumer has not acknowledged, and a question it can no longer answer whole (`since` a time
before what it trimmed) is an error, never a shorter answer.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from ..errors import ChangeLogError, ConfigurationError
from .ledger import Ledger, Recorded, record
from .model import Change, Delivery, SectionState, Seen, Trimmed

if TYPE_CHECKING:
    from redis import Redis

__all__ = ["DEFAULT_KEEP", "DEFAULT_PATH", "Backend", "ChangeLog", "Windowed"]

logger = logging.getLogger(__name__)

DEFAULT_PATH = "sitemap-changes.sqlite3"
DEFAULT_KEEP = timedelta(days=90)  # a season of changes: far past any crawler's or consumer's need
_SHORTEST_KEEP = timedelta(days=1)  # the overview counts each section's changes of the last day
_TRIM_EVERY = 3600.0  # seconds between the trims a process makes as it records
_TRIM_STEP = 2_000  # changes a trim step removes: a few ms of the SQLite log's write lock
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

    def unsubscribe(self, consumer: str) -> None:
        """Drop ``consumer``'s cursor and lease (nothing, if it has none)."""
        ...

    # Retention (`ChangeLog.trim`).

    def trim(self, before: float, most: int, *, continued: bool = False) -> Trimmed:
        """Remove at most ``most`` of the changes recorded before ``before`` (seconds since the
        epoch) that every consumer's cursor has passed, oldest first, and remember the newest
        ``at`` removed (`horizon`). ``held`` is named once fewer than ``most`` were left.
        ``continued``: a later step of the same trim (the cursors its first step read, lower
        than now, may serve)."""
        ...

    def horizon(self) -> float | None:
        """The newest ``at`` of any change ever trimmed (seconds since the epoch), persisted;
        ``None`` when nothing was. Every change recorded after it is still in the log."""
        ...

    def trim_pause(self, took: float) -> float:
        """Seconds to leave the log to other writers after a trim step that took ``took``."""
        ...


class ChangeLog:
    """A log of the URLs the sitemaps published, kept in ``backend``.

    Make one with `ChangeLog.sqlite` or `ChangeLog.redis` and give it to
    ``Sitemaps(changes=...)``; one log may serve one `Sitemaps` (its sections are
    recorded under the site's base URL and mount prefix, so several sites may share it).
    """

    def __init__(self, backend: Backend, *, keep: timedelta | None = DEFAULT_KEEP) -> None:
        self.backend = backend
        self.keep = _checked_keep(keep)
        self.trim_every = _TRIM_EVERY
        self._next_trim = 0.0  # monotonic: the first recording trims, then every `trim_every`
        self._newest: float | None = None  # the newest time this process recorded a page at
        # Pages rendered, waiting to be recorded off their render (`record_later`).
        self._pending: queue.Queue[Callable[[], None]] = queue.Queue(maxsize=_PENDING)
        self.room_wait = _ROOM_WAIT
        self._worker: threading.Thread | None = None
        self._lock = threading.Lock()
        self._flushing = 0  # callers waiting in `flush`: a trim on the log's thread gives way

    @classmethod
    def sqlite(
        cls, path: str | os.PathLike[str] = DEFAULT_PATH, *, keep: timedelta | None = DEFAULT_KEEP
    ) -> ChangeLog:
        """A log in one SQLite file, created on first use: the workers of one machine share it.
        ``keep``: how long a change is kept (at least a day; ``None``: for ever)."""
        from .sqlite import SqliteBackend

        if not str(path):
            raise ConfigurationError("ChangeLog.sqlite needs a file path")
        return cls(SqliteBackend(path), keep=keep)

    @classmethod
    def redis(
        cls,
        url_or_client: str | Redis,
        *,
        prefix: str = "sitemap-changes",
        lock_timeout: float = 10.0,
        wait_timeout: float = 30.0,
        keep: timedelta | None = DEFAULT_KEEP,
    ) -> ChangeLog:
        """A log in Redis that every worker of a fleet shares, each change recorded once
        (`sitemap_middleware.redis.changes`).

        - ``url_or_client``: ``"redis://127.0.0.1:6379/0"`` (a client that gives up after
          2 s when Redis stops answering), or a ``redis.Redis`` (decode_responses=False).
        - ``prefix``: of every key the log writes; one per log sharing a Redis.
        - ``lock_timeout``: seconds a section stays locked by a worker that died recording it.
        - ``wait_timeout``: seconds a worker waits for another's lock before `ChangeLogError`.
        - ``keep``: how long a change is kept (at least a day; ``None``: for ever).
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
        backend = RedisChanges(client, prefix=prefix, lock_timeout=lock_timeout, wait_timeout=wait_timeout)
        return cls(backend, keep=keep)

    def record(self, seen: Seen, *, pages: int | None, at: float) -> Recorded:
        """Record one page rendered completely (`ledger.record`): its changes, reported once."""
        with self.backend.ledger(seen.scope, seen.section) as ledger:
            recorded = record(ledger, seen, pages=pages, at=at)
        if self._newest is None or at > self._newest:
            self._newest = at
        return recorded

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
        """Wait until every page handed to `record_later` in this process is recorded (and
        the trim step after the last, never a whole trim: it goes on after the next page)."""
        with self._lock:
            self._flushing += 1
        try:
            self._pending.join()
        finally:
            with self._lock:
                self._flushing -= 1

    def _work(self) -> None:
        while True:
            job = self._pending.get()
            try:
                job()  # it handles its own failures (`watch.Recorder`)
                self._trim_when_due()
            finally:
                self._pending.task_done()

    def _trim_when_due(self) -> None:
        """On the log's thread, after a recording, once every `trim_every` seconds: what was
        recorded `keep` before the newest page this process recorded goes. The recordings'
        own time, not this machine's: the log's times are the renders' (`Sitemaps` clock)."""
        newest = self._newest
        if self.keep is None or newest is None or time.monotonic() < self._next_trim:
            return
        self._next_trim = time.monotonic() + self.trim_every
        try:
            self._trim(newest - self.keep.total_seconds(), until_busy=True)
        except Exception:
            # Nothing is lost: what stays is trimmed by the next trim.
            logger.exception("sitemap change log: trimming failed (tried again in %.0f s)", self.trim_every)

    def since(self, when: datetime | None = None, section: str | None = None) -> list[Change]:
        """The changes recorded after ``when`` (an aware datetime; ``None``: all), oldest first,
        including those of every page this process rendered before the call."""
        if when is not None and when.tzinfo is None:
            raise ConfigurationError("changes.since needs an aware datetime (one with a tzinfo)")
        self.flush()
        horizon = self.horizon()
        if when is not None and horizon is not None and when < horizon:
            raise ChangeLogError(
                f"the changes recorded up to {horizon.isoformat()} were trimmed (the log keeps"
                f" {self.keep}): ask for the changes since then, or later"
            )
        return self.backend.since(None if when is None else when.timestamp(), section)

    # -- retention -----------------------------------------------------------------------------

    def trim(self, before: datetime | None = None) -> Trimmed:
        """Remove the changes recorded before ``before`` (an aware datetime; ``None``: `keep`
        before now, nothing when the log keeps everything) that every consumer has
        acknowledged. The log trims itself as it records; call this from a job of your own to
        choose the moment. A consumer that holds old changes is named in a warning."""
        if before is None:
            if self.keep is None:
                return Trimmed(0)
            return self._trim(time.time() - self.keep.total_seconds())
        if before.tzinfo is None:
            raise ConfigurationError("changes.trim needs an aware datetime (one with a tzinfo)")
        return self._trim(before.timestamp())

    def _trim(self, before: float, *, until_busy: bool = False) -> Trimmed:
        """Trim in steps of `_TRIM_STEP`, each followed by the pause its backend asks for, so
        other workers' records get the log between steps (back to back, batches of a big
        SQLite trim starved a record for over a second: benchmarks/HISTORY.md, "retention").
        ``until_busy`` (on the log's thread): stop after the step during which a page came
        to be recorded or a caller began to `flush`, and go on after the next page."""
        removed = 0
        while True:
            started = time.monotonic()
            step = self.backend.trim(before, _TRIM_STEP, continued=removed > 0)
            removed += step.removed
            if step.removed < _TRIM_STEP:
                break
            if until_busy and (self._flushing or not self._pending.empty()):
                self._next_trim = 0.0
                return Trimmed(removed)
            time.sleep(self.backend.trim_pause(time.monotonic() - started))
        if step.held:
            logger.warning(
                "sitemap change log: %s hold old changes the trim would have removed, not yet"
                " acknowledged; they stay until acknowledged (ChangeLog.unsubscribe a consumer"
                " nobody delivers any more)",
                ", ".join(repr(consumer) for consumer in step.held),
            )
        return Trimmed(removed, step.held)

    def horizon(self) -> datetime | None:
        """The newest time a trimmed change was recorded at (``None``: none ever was): `since`
        any time from then on is whole."""
        horizon = self.backend.horizon()
        return None if horizon is None else datetime.fromtimestamp(horizon, UTC)

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
        are recorded first. A consumer is of one scope: when nothing of it waits, its cursor
        passes the changes of other sites sharing the log, which it is never sent, so it
        neither counts them `pending` nor keeps them from a trim."""
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

    def unsubscribe(self, consumer: str) -> None:
        """Forget ``consumer``'s cursor: nothing more is delivered to it, and what it had not
        acknowledged may be trimmed. One you no longer deliver (an IndexNow key or a hook
        removed from the configuration) would otherwise hold the log for ever."""
        self.backend.unsubscribe(consumer)

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


def _checked_keep(keep: object) -> timedelta | None:
    if keep is None:
        return None
    if not isinstance(keep, timedelta):
        raise ConfigurationError(f"ChangeLog keep must be a timedelta (or None: for ever), not {keep!r}")
    if keep < _SHORTEST_KEEP:
        raise ConfigurationError(
            f"ChangeLog keep must be at least a day (the overview counts one), not {keep}"
        )
    return keep
