"""The change log in Redis: one log for a fleet, each change recorded once whoever saw it.

    log = ChangeLog.redis("redis://127.0.0.1:6379/0", prefix="sitemap-changes")
    sitemaps = Sitemaps(base_url="https://shop.example", changes=log)

Every worker of every machine records the pages it renders into the same log
(`changes.ledger.record`); two workers recording the same page at once record each of its
changes once. How:

- **A lock per section, then one atomic commit.** A worker takes the section's lock
  (``SET NX PX``), reads what it needs (batched: the lock, the section's state, its page
  digests and the current pass come back with the claim, in one round trip), and applies
  every write at the end in one Lua script that first checks it still holds the lock and
  releases it as it commits. A worker that dies or hangs mid-record writes nothing (its
  writes never left the process); its lock expires after ``lock_timeout`` and the next
  worker goes on from the last commit. A worker that outlived its lock (a pause longer
  than ``lock_timeout``) finds it gone at commit: nothing written, `ChangeLogError`.
  Optimistic ``WATCH``/``MULTI`` was the other way: it would watch a section's whole URL
  hash, so two workers recording *different* pages of a section at once (the common case
  in a refresh) would abort each other and redo the work; a lock makes the second wait a
  few milliseconds, then find the page already recorded (one digest read).
- A lock is renewed while its record goes on (at each call to Redis past a third of
  ``lock_timeout``); a waiter sleeps on a ``BLPOP`` that the release wakes (or that ends
  when the holder's lock would expire), and gives up after ``wait_timeout``:
  `ChangeLogError`. The commit is safe to retry (a reply lost after the script ran is
  recognised by the token it leaves), so the client may retry as it likes.
- **Round trips**: an unchanged page (same digest) costs two (claim, commit), however many
  URLs it has; a changed one adds a read of its entries and one ``HMGET`` for the URLs
  that arrived or left (pipelined in chunks), never one call per URL.
- Redis unreachable or failing: `ChangeLogError` (from the ``redis`` error), after the
  client's ``socket_timeout`` at most; the caller counts it. Nothing is retried later.
- **Retention**: `RedisChanges.trim` removes the head of each section's stream, 1,000
  entries a step (an ``XRANGE`` and one script: ``XTRIM MINID``, Redis 6.2 or later),
  never past what every consumer's cursor has passed nor what was appended since it began;
  it raises ``:horizon`` before each step.

Redis holds, under ``prefix`` (per section ``<id>``, a hash of its scope and name):
``:sections`` (hash: id -> scope and name), ``:clock`` (the last change's stream ID),
``:horizon`` (the newest ``a`` trimmed, µs since the epoch), ``:outbox:<consumer>`` (hash:
a consumer's cursor and lease, `change_outbox`), and
``:<id>:`` ``state`` (hash), ``digests`` and ``entries`` (hashes: page -> digest, packed
entries), ``urls`` (hash: loc -> page and fingerprint, 8 bytes), ``missing`` and ``behind`` (sets),
``pass`` (sorted set of the pages of the current pass), ``log`` (a stream: the changes,
with IDs from the shared clock, so all sections' changes merge in recording order),
``lock``, ``done`` and ``wake``. One Redis (a primary): the scripts touch keys they
compute, which Redis Cluster does not allow.
"""

from __future__ import annotations

import hashlib
import heapq
import math
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from datetime import datetime, timedelta
from typing import Any

import redis

from ..changes.model import KINDS, Change, Delivery, SectionState, Trimmed
from ..config import check_timeout
from ..errors import ChangeLogError, ConfigurationError
from .change_ledger import EPOCH, FETCH, PAGE, RedisLedger, Session, read_state
from .change_outbox import Outbox, position, stream_id
from .change_scripts import CLAIM, COMMIT, MARK, RELEASE, RENEW, TRIM

__all__ = ["RedisChanges", "section_id"]


class RedisChanges:
    """A `changes.log.Backend` in Redis, shared by every worker using the same ``prefix``.

    - ``client``: a ``redis.Redis`` (not decoding responses), with a ``socket_timeout``:
      a call waits that long at most when Redis stops answering.
    - ``prefix``: of every key the log writes; one per log sharing a Redis.
    - ``lock_timeout``: seconds a section's lock outlives a worker that died recording it.
    - ``wait_timeout``: seconds a worker waits for another's lock before `ChangeLogError`.
    - ``prefetch_pages``: a section of at most this many pages sends every page's digest
      and the current pass with the claim (an unchanged page: two round trips); a larger
      one is asked page by page (four), so a claim never carries more than ~50 KB.
    """

    def __init__(
        self,
        client: redis.Redis,
        *,
        prefix: str = "sitemap-changes",
        lock_timeout: float = 10.0,
        wait_timeout: float = 30.0,
        prefetch_pages: int = 1000,
    ) -> None:
        kwargs = client.connection_pool.connection_kwargs
        if kwargs.get("decode_responses"):
            raise ConfigurationError("ChangeLog.redis needs a client with decode_responses=False")
        if not isinstance(prefix, str) or not prefix:
            raise ConfigurationError(f"prefix must be a non-empty string, not {prefix!r}")
        self.client = client
        # Replies as Redis sends them (bytes), untyped: redis-py types them for either decoding.
        self.raw: Any = client
        self.prefix = prefix
        self.lock_ms = max(1, round(check_timeout("lock_timeout", lock_timeout) * 1000))
        self.wait_timeout = check_timeout("wait_timeout", wait_timeout)
        if isinstance(prefetch_pages, bool) or not isinstance(prefetch_pages, int) or prefetch_pages < 0:
            raise ConfigurationError(f"prefetch_pages must be an int >= 0, not {prefetch_pages!r}")
        self.prefetch_pages = prefetch_pages
        self._socket_timeout: float | None = kwargs.get("socket_timeout")
        self._where = f"{kwargs.get('host', kwargs.get('path', '?'))}:{kwargs.get('port', '')}"
        self._claim = client.register_script(CLAIM)
        self._session = Session(
            self.raw,
            self.lock_ms,
            renew=client.register_script(RENEW),
            release=client.register_script(RELEASE),
            commit=client.register_script(COMMIT),
            sections=self.key("sections"),
            clock=self.key("clock"),
        )
        self._outbox = Outbox(self.raw, prefix)
        self._mark = client.register_script(MARK)
        self._trim = client.register_script(TRIM)
        self._bound: tuple[int, dict[str, int]] = (0, {})  # `_trim_bound`'s last read

    def key(self, *parts: str) -> str:
        return ":".join((self.prefix, *parts))

    @contextmanager
    def ledger(self, scope: str, section: str) -> Iterator[RedisLedger]:
        """One section's records under its lock: committed when the block ends normally."""
        with self._speaking():
            ledger = self._take(scope, section)
        try:
            yield ledger
        except BaseException as error:
            with suppress(redis.RedisError):  # else the lock expires after lock_timeout
                ledger.release()
            if isinstance(error, redis.RedisError):
                raise self._failed(error) from error
            raise
        with self._speaking():
            ledger.commit()

    def _take(self, scope: str, section: str) -> RedisLedger:
        ident = section_id(scope, section)
        keys = {name: self.key(ident, name) for name in _SECTION_KEYS}
        token = uuid.uuid4().hex
        deadline = time.monotonic() + self.wait_timeout
        claim = [keys["lock"], keys["state"], keys["digests"], keys["pass"], keys["missing"], keys["behind"]]
        while True:
            reply = self._claim(keys=claim, args=[token, self.lock_ms, self.prefetch_pages])
            if reply[0] == 1:
                return RedisLedger(self._session, scope, section, ident, keys, token, reply[1:])
            left = deadline - time.monotonic()
            if left <= 0:
                raise ChangeLogError(
                    f"section {section!r} of the change log stayed locked by another worker for "
                    f"{self.wait_timeout:g} s (wait_timeout); its lock expires {self.lock_ms / 1000:g} s "
                    "after its holder stops renewing it"
                )
            # Woken by the release; else when the holder's lock would expire; within the socket timeout.
            wait = min(left, max(int(reply[1]), 1) / 1000)
            if self._socket_timeout:
                wait = min(wait, self._socket_timeout / 2)
            self.raw.blpop([keys["wake"]], timeout=max(wait, 0.001))

    def state(self, scope: str, section: str) -> SectionState | None:
        with self._speaking():
            fields = self.raw.hgetall(self.key(section_id(scope, section), "state"))
        return read_state(fields) if fields else None

    def since(self, when: float | None, section: str | None, scope: str | None = None) -> list[Change]:
        """The changes recorded after ``when`` (seconds since the epoch), oldest first."""
        return self._merged(
            when,
            lambda its_scope, its_section: (
                (section is None or its_section == section) and (scope is None or its_scope == scope)
            ),
        )

    def recent(self, when: float, root: str) -> list[Change]:
        """The changes recorded after ``when`` of the sections of the site at ``root`` (its
        scope, or a mount below it), oldest first (`changes.log.Windowed`)."""
        below = root + "/"
        return self._merged(when, lambda its_scope, _: its_scope == root or its_scope.startswith(below))

    def mark(self, when: float) -> str:
        """A token that moves whenever the changes recorded after ``when`` do: the newest
        change's ID and the oldest one's still after ``when``, in one script (a few reads
        per section, none of its URLs)."""
        with self._speaking():
            token: bytes = self._mark(
                keys=[self.key("clock"), self.key("sections")], args=[self.prefix, _start(when), repr(when)]
            )
        return token.decode()

    def _merged(self, when: float | None, wanted: Callable[[str, str], bool]) -> list[Change]:
        """The changes after ``when`` of the sections ``wanted(scope, section)``, merged by ID."""
        with self._speaking():
            named = self.raw.hgetall(self.key("sections"))
            streams: list[list[tuple[tuple[int, int], Change]]] = []
            for ident, name in named.items():
                its_scope, _, its_section = name.decode().partition("\n")
                if wanted(its_scope, its_section):
                    streams.append(list(self._read(ident.decode(), its_section, when)))
        return [change for _, change in heapq.merge(*streams, key=lambda item: item[0])]

    def counts(self, when: float, scope: str, section: str) -> dict[str, int]:
        """How many changes of each kind the section had after ``when``."""
        found: dict[str, int] = {}
        with self._speaking():
            for _, change in self._read(section_id(scope, section), section, when):
                found[change.kind] = found.get(change.kind, 0) + 1
        return found

    def _read(self, ident: str, section: str, when: float | None) -> Iterator[tuple[tuple[int, int], Change]]:
        start = "-" if when is None else _start(when)
        stream = self.key(ident, "log")
        while True:
            batch = self.raw.xrange(stream, start, "+", count=FETCH)
            for raw, fields in batch:
                ms, seq = map(int, raw.split(b"-"))
                kind = int(fields[b"k"])
                at = _moment(int(fields[b"a"]))
                if kind != PAGE and (when is None or at.timestamp() > when):
                    lastmod = fields.get(b"x")
                    yield (
                        (ms, seq),
                        Change(fields[b"l"].decode(), KINDS[kind], at, section, lastmod and lastmod.decode()),
                    )
            if len(batch) < FETCH:
                return
            ms, seq = map(int, batch[-1][0].split(b"-"))
            start = f"{ms}-{seq + 1}"

    # -- the outbox (`change_outbox`) ------------------------------------------------------------

    def subscribe(self, consumer: str) -> None:
        """Start ``consumer``'s cursor at the newest change, unless it has one."""
        with self._speaking():
            self._outbox.subscribe(consumer)

    def claim(
        self, consumer: str, scope: str | None, holder: str, *, limit: int, lease: float, now: float
    ) -> Delivery | None:
        """Up to ``limit`` changes past ``consumer``'s cursor (of sections under ``scope``, if
        given), leased to ``holder`` until ``now + lease``; ``None`` when there are none, or
        another holder's lease runs."""
        with self._speaking():
            return self._outbox.claim(consumer, scope, holder, limit=limit, lease=lease, now=now)

    def acknowledge(self, delivery: Delivery) -> bool:
        """Move the cursor past ``delivery`` and free the lease; ``False`` if the lease was lost."""
        with self._speaking():
            return self._outbox.acknowledge(delivery)

    def release(self, delivery: Delivery) -> None:
        """Give the lease back without moving the cursor (to be delivered again, by anyone)."""
        with self._speaking():
            self._outbox.release(delivery)

    def pending(self, consumer: str) -> int:
        """How many changes (of URLs and of pages) wait past ``consumer``'s cursor, of every scope."""
        with self._speaking():
            return self._outbox.pending(consumer)

    def unsubscribe(self, consumer: str) -> None:
        """Drop ``consumer``'s cursor and lease (nothing, if it has none)."""
        with self._speaking():
            self._outbox.unsubscribe(consumer)

    # -- retention ---------------------------------------------------------------------------------

    def trim(self, before: float, most: int, *, continued: bool = False) -> Trimmed:
        """Remove at most ``most`` of the changes (of URLs and of pages) recorded before
        ``before`` (seconds since the epoch) that every consumer's cursor has passed: the head
        of each section's stream, `_TRIM` entries a script. An older change recorded after a
        newer one waits for a later trim (the shared clock makes IDs follow recording order,
        not ``at``). ``held`` is named once fewer than ``most`` were left. ``continued``: a
        later step of one trim, which stays behind the bound its first step read."""
        with self._speaking():
            if not continued:
                self._bound = self._trim_bound()
            bound, cursors = self._bound
            removed, oldest = 0, None
            for ident in self.raw.hkeys(self.key("sections")):
                count, held = self._trim_section(
                    self.key(ident.decode(), "log"), before, bound, most - removed
                )
                removed += count
                if removed >= most:
                    return Trimmed(removed)  # there may be more: the caller steps again
                if held is not None and (oldest is None or held < oldest):
                    oldest = held
        behind = () if oldest is None else tuple(sorted(name for name, at in cursors.items() if at < oldest))
        return Trimmed(removed, behind)

    def _trim_bound(self) -> tuple[int, dict[str, int]]:
        """The `position` a trim stays at or behind, and every consumer's cursor. Read once a
        trim: its steps share one ``SCAN`` of the keyspace (a Redis shared with a cache holds
        many keys) rather than make one each."""
        # The clock first: a consumer the scan misses subscribed after it was read, at a
        # cursor at least this far; an entry appended since is never removed either.
        clock = self.raw.get(self.key("clock"))
        cursors = self._outbox.cursors()
        # Cursors and the clock only move forward: a bound read earlier is lower, so an
        # acknowledgement during the trim loses nothing.
        return min([position(clock) if clock else 0, *cursors.values()]), cursors

    def _trim_section(self, stream: str, before: float, bound: int, most: int) -> tuple[int, int | None]:
        """How many entries of ``stream`` went (at most ``most``), and the `position` of the
        first one kept that was recorded before ``before`` (``None`` if it is not that old)."""
        removed = 0
        while removed < most:
            batch = self.raw.xrange(stream, "-", "+", count=min(_TRIM, most - removed))
            last, newest, held, done = None, 0, None, len(batch) < min(_TRIM, most - removed)
            for raw, fields in batch:
                micros = int(fields[b"a"])
                if _moment(micros).timestamp() >= before:  # as SQLite compares `at.timestamp()`
                    done = True
                    break
                if position(raw) > bound:
                    held, done = position(raw), True
                    break
                last, newest = position(raw), max(newest, micros)
            if last is not None:
                # Everything before the next ID: IDs grow, so an entry appended since is after it.
                past = stream_id(last + 1)
                removed += int(self._trim(keys=[self.key("horizon"), stream], args=[newest, past]))
            if done:
                return removed, held
        return removed, None

    def trim_pause(self, took: float) -> float:
        """None: each step is a few short scripts, and other workers' calls run between them."""
        return 0.0

    def horizon(self) -> float | None:
        """The newest ``at`` of any change ever trimmed (seconds since the epoch); ``None``
        when nothing was."""
        with self._speaking():
            raw = self.raw.get(self.key("horizon"))
        return None if raw is None else _moment(int(raw)).timestamp()

    @contextmanager
    def _speaking(self) -> Iterator[None]:
        try:
            yield
        except redis.RedisError as error:
            raise self._failed(error) from error

    def _failed(self, error: redis.RedisError) -> ChangeLogError:
        return ChangeLogError(f"the change log's Redis at {self._where} failed: {error!r}")


_SECTION_KEYS = (
    "lock",
    "done",
    "wake",
    "state",
    "digests",
    "entries",
    "urls",
    "missing",
    "behind",
    "pass",
    "log",
)


_TRIM = 1000  # entries a trim reads and removes in one step: under 1 ms of Redis each (measured)


def _moment(micros: int) -> datetime:
    # A log entry's `a`: microseconds since EPOCH (the Unix epoch, so `.timestamp()` is exact).
    return EPOCH + timedelta(microseconds=micros)


def _start(when: float) -> str:
    # A change's ID is at least its own time (ms): start one ms early, keep those after `when`.
    return str(max(0, math.floor(when * 1000) - 1))


def section_id(scope: str, section: str) -> str:
    """A short, fixed name for a section under a scope (both may hold any character)."""
    return hashlib.sha1(f"{scope}\n{section}".encode(), usedforsecurity=False).hexdigest()[:20]
