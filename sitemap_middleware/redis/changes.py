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

Redis holds, under ``prefix`` (per section ``<id>``, a hash of its scope and name):
``:sections`` (hash: id -> scope and name), ``:clock`` (the last change's stream ID), and
``:<id>:`` ``state`` (hash), ``digests`` and ``entries`` (hashes: page -> digest, packed
entries), ``urls`` (hash: loc -> page and fingerprint, 8 bytes), ``missing`` (set),
``pass`` (sorted set of the pages of the current pass), ``log`` (a stream: the changes,
with IDs from the shared clock, so all sections' changes merge in recording order),
``lock``, ``done`` and ``wake``. One Redis (a primary): the scripts touch keys they
compute, which Redis Cluster does not allow.
"""

from __future__ import annotations

import hashlib
import heapq
import math
import struct
import time
import uuid
from collections.abc import Collection, Iterable, Iterator
from contextlib import contextmanager, suppress
from datetime import UTC, datetime, timedelta
from typing import Any

import redis

from ..changes.fingerprints import Entries, pack, unpack
from ..changes.ledger import MISSING
from ..changes.model import KINDS, Change, SectionState
from ..config import check_timeout
from ..errors import ChangeLogError, ConfigurationError

__all__ = ["RedisChanges", "RedisLedger"]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_URL = struct.Struct("<II")  # a URL's page and fingerprint
_ARGS = 4000  # arguments per command inside the commit: Lua's unpack() takes ~8,000 at most
_FETCH = 10_000  # fields per HMGET, entries per XRANGE

# KEYS: lock, state, digests, pass, missing. ARGV: token, lock ms, prefetch limit.
# {0, PTTL} when held by another; else {1, state, missing count, digests | nil, pass | nil}.
_CLAIM = """
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return {0, redis.call('PTTL', KEYS[1])}
end
local digests, passed = false, false
if redis.call('HLEN', KEYS[3]) <= tonumber(ARGV[3]) then
  digests = redis.call('HGETALL', KEYS[3])
  passed = redis.call('ZRANGE', KEYS[4], 0, -1)
end
return {1, redis.call('HGETALL', KEYS[2]), redis.call('SCARD', KEYS[5]), digests, passed}
"""

# KEYS: lock. ARGV: token, lock ms. 1 while the lock is this token's (renewed), else 0.
_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
"""

# KEYS: lock, wake. ARGV: token, lock ms. Deletes the lock while it is this token's, and
# wakes one waiter.
_RELEASE = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('RPUSH', KEYS[2], 1)
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return 1
"""

# KEYS: lock, done, clock, wake. ARGV: token, lock ms, then commands, each as its argument
# count and name; 'LOG' appends (kind, loc, at in us) triples to a stream under IDs from
# the shared clock. 1: committed; 2: committed before (a retried call); 0: lock lost.
_COMMIT = """
local token = ARGV[1]
if redis.call('GET', KEYS[1]) ~= token then
  if redis.call('GET', KEYS[2]) == token then return 2 end
  return 0
end
local i, n = 3, #ARGV
while i <= n do
  local count, name = tonumber(ARGV[i]), ARGV[i + 1]
  if name == 'LOG' then
    local clock = redis.call('GET', KEYS[3])
    local ms, seq = -1, 0
    if clock then
      local dash = string.find(clock, '-', 1, true)
      ms, seq = tonumber(string.sub(clock, 1, dash - 1)), tonumber(string.sub(clock, dash + 1))
    end
    local stream = ARGV[i + 2]
    for j = i + 3, i + 1 + count, 3 do
      local at = math.max(0, math.floor(tonumber(ARGV[j + 2]) / 1000))
      if at > ms then ms, seq = at, (at == 0) and 1 or 0 else seq = seq + 1 end
      local id = string.format('%.0f-%.0f', ms, seq)
      redis.call('XADD', stream, id, 'k', ARGV[j], 'l', ARGV[j + 1], 'a', ARGV[j + 2])
    end
    redis.call('SET', KEYS[3], string.format('%.0f-%.0f', ms, seq))
  else
    redis.call(name, unpack(ARGV, i + 2, i + 1 + count))
  end
  i = i + 2 + count
end
redis.call('DEL', KEYS[1], KEYS[4])
redis.call('SET', KEYS[2], token, 'PX', ARGV[2])
redis.call('RPUSH', KEYS[4], 1)
redis.call('PEXPIRE', KEYS[4], ARGV[2])
return 1
"""


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
        self._claim = client.register_script(_CLAIM)
        self._renew = client.register_script(_RENEW)
        self._release = client.register_script(_RELEASE)
        self._commit = client.register_script(_COMMIT)

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
        claim = [keys["lock"], keys["state"], keys["digests"], keys["pass"], keys["missing"]]
        while True:
            reply = self._claim(keys=claim, args=[token, self.lock_ms, self.prefetch_pages])
            if reply[0] == 1:
                return RedisLedger(self, scope, section, ident, keys, token, reply[1:])
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
        return _state(fields) if fields else None

    def since(self, when: float | None, section: str | None, scope: str | None = None) -> list[Change]:
        """The changes recorded after ``when`` (seconds since the epoch), oldest first."""
        with self._speaking():
            named = self.raw.hgetall(self.key("sections"))
            streams: list[list[tuple[tuple[int, int], Change]]] = []
            for ident, name in named.items():
                its_scope, _, its_section = name.decode().partition("\n")
                if (section is None or its_section == section) and (scope is None or its_scope == scope):
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
        # A change's ID is at least its own time (ms): start one ms early, keep those after `when`.
        start = "-" if when is None else str(max(0, math.floor(when * 1000) - 1))
        stream = self.key(ident, "log")
        while True:
            batch = self.raw.xrange(stream, start, "+", count=_FETCH)
            for raw, fields in batch:
                ms, seq = map(int, raw.split(b"-"))
                at = _EPOCH + timedelta(microseconds=int(fields[b"a"]))
                if when is None or at.timestamp() > when:
                    yield (ms, seq), Change(fields[b"l"].decode(), KINDS[int(fields[b"k"])], at, section)
            if len(batch) < _FETCH:
                return
            ms, seq = map(int, batch[-1][0].split(b"-"))
            start = f"{ms}-{seq + 1}"

    @contextmanager
    def _speaking(self) -> Iterator[None]:
        try:
            yield
        except redis.RedisError as error:
            raise self._failed(error) from error

    def _failed(self, error: redis.RedisError) -> ChangeLogError:
        return ChangeLogError(f"the change log's Redis at {self._where} failed: {error!r}")


_SECTION_KEYS = ("lock", "done", "wake", "state", "digests", "entries", "urls", "missing", "pass", "log")


def section_id(scope: str, section: str) -> str:
    """A short, fixed name for a section under a scope (both may hold any character)."""
    return hashlib.sha1(f"{scope}\n{section}".encode(), usedforsecurity=False).hexdigest()[:20]


class RedisLedger:
    """`changes.ledger.Ledger` under a section's lock: reads from Redis (or from what this
    record already wrote), writes kept here until `commit` sends them in one script."""

    def __init__(
        self,
        backend: RedisChanges,
        scope: str,
        section: str,
        ident: str,
        keys: dict[str, str],
        token: str,
        prefetched: list[Any],
    ) -> None:
        self._backend = backend
        self._client = backend.raw
        self._name = f"{scope}\n{section}"
        self._ident = ident
        self.keys = keys
        self.token = token
        self._renewed = time.monotonic()
        fields, missing, digests, passed = prefetched
        self._state = _state(_pairs(fields)) if fields else SectionState()
        self._had_missing = int(missing) > 0
        # None: not prefetched (a section of many pages), asked one at a time.
        self._digests: dict[int, bytes] | None = None
        if digests is not None:
            self._digests = {int(number): digest for number, digest in _pairs(digests).items()}
        self._passed: set[int] | None = None if passed is None else {int(number) for number in passed}
        # What this record wrote (read back before Redis).
        self._pages: dict[int, tuple[bytes, Entries] | None] = {}  # None: dropped
        self._urls: dict[bytes, tuple[int, int] | None] = {}  # None: dropped
        self._missing: dict[bytes, bool] = {}  # loc -> now missing (True) or not (False)
        self._pass_added: set[int] = set()
        self._pass_ended = False
        self._changes: list[Change] = []

    def _fresh(self) -> None:
        """Renew the lock when a third of its time has passed, before the next call to Redis."""
        now = time.monotonic()
        if now - self._renewed < self._backend.lock_ms / 3000:
            return
        if not self._backend._renew(keys=[self.keys["lock"]], args=[self.token, self._backend.lock_ms]):
            raise self._lost()
        self._renewed = now

    def _lost(self) -> ChangeLogError:
        section = self._name.partition("\n")[2]
        return ChangeLogError(
            f"this worker held the change log's lock of section {section!r} past lock_timeout "
            f"({self._backend.lock_ms / 1000:g} s): another worker may have recorded since; nothing written"
        )

    def state(self) -> SectionState:
        return self._state

    def put_state(self, state: SectionState) -> None:
        self._state = state

    def page_digest(self, number: int) -> bytes | None:
        if number in self._pages:
            written = self._pages[number]
            return None if written is None else written[0]
        if self._digests is not None:
            return self._digests.get(number)
        self._fresh()
        digest: bytes | None = self._client.hget(self.keys["digests"], str(number))
        return digest

    def page(self, number: int) -> tuple[bytes, Entries] | None:
        if number in self._pages:
            return self._pages[number]
        self._fresh()
        with self._client.pipeline(transaction=False) as pipe:
            pipe.hget(self.keys["digests"], str(number))
            pipe.hget(self.keys["entries"], str(number))
            digest, blob = pipe.execute()
        return None if digest is None or blob is None else (digest, unpack(blob))

    def put_page(self, number: int, digest: bytes, entries: Entries) -> None:
        self._pages[number] = (digest, dict(entries))

    def pages_after(self, last: int) -> list[int]:
        if self._digests is not None:
            known = set(self._digests)
        else:
            self._fresh()
            known = {int(number) for number in self._client.hkeys(self.keys["digests"])}
        for number, written in self._pages.items():
            if written is None:
                known.discard(number)
            else:
                known.add(number)
        return sorted(number for number in known if number > last)

    def drop_pages(self, numbers: Iterable[int]) -> None:
        for number in numbers:
            self._pages[number] = None

    def find(self, locs: Collection[bytes]) -> dict[bytes, tuple[int, int]]:
        found: dict[bytes, tuple[int, int]] = {}
        asked: list[bytes] = []
        for loc in locs:
            if loc in self._urls:
                written = self._urls[loc]
                if written is not None:
                    found[loc] = written
            else:
                asked.append(loc)
        if asked:
            self._fresh()
            with self._client.pipeline(transaction=False) as pipe:
                for start in range(0, len(asked), _FETCH):
                    pipe.hmget(self.keys["urls"], asked[start : start + _FETCH])
                values = [value for part in pipe.execute() for value in part]
            for loc, value in zip(asked, values, strict=True):
                if value is not None:
                    found[loc] = _URL.unpack(value)
        return found

    def put_urls(self, rows: Iterable[tuple[bytes, int, int]]) -> None:
        for loc, page, fingerprint in rows:
            self._urls[loc] = (page, fingerprint)
            self._missing[loc] = page == MISSING

    def drop_urls(self, locs: Iterable[bytes]) -> None:
        for loc in locs:
            self._urls[loc] = None
            self._missing[loc] = False

    def missing(self) -> list[bytes]:
        recorded: list[bytes] = []
        if self._had_missing:
            self._fresh()
            recorded = [
                loc for loc in self._client.smembers(self.keys["missing"]) if loc not in self._missing
            ]
        return recorded + [loc for loc, now in self._missing.items() if now]

    def pass_page(self, number: int, last: int) -> int:
        self._pass_added.add(number)
        if self._pass_ended:
            return sum(1 for page in self._pass_added if page <= last)
        if self._passed is not None:
            return sum(1 for page in self._passed | self._pass_added if page <= last)
        self._fresh()
        with self._client.pipeline(transaction=False) as pipe:
            pipe.zcount(self.keys["pass"], "-inf", last)
            for page in self._pass_added:
                pipe.zscore(self.keys["pass"], page)
            counted, *scores = pipe.execute()
        added = sum(
            1 for page, score in zip(self._pass_added, scores, strict=True) if score is None and page <= last
        )
        return int(counted) + added

    def end_pass(self) -> None:
        self._pass_ended = True
        self._pass_added.clear()

    def append(self, changes: list[Change]) -> None:
        self._changes += changes

    def release(self) -> None:
        """Give the lock back unused (the record failed): nothing written."""
        self._backend._release(
            keys=[self.keys["lock"], self.keys["wake"]], args=[self.token, self._backend.lock_ms]
        )

    def commit(self) -> None:
        """Send every write in one script that checks the lock first and releases it."""
        ops: list[Any] = []
        keys = self.keys

        def command(name: str, key: str, args: list[Any], step: int = 1) -> None:
            chunk = _ARGS - _ARGS % step
            for start in range(0, len(args), chunk):
                part = args[start : start + chunk]
                ops.extend((len(part) + 1, name, key, *part))

        state = self._state
        command("HSET", self._backend.key("sections"), [self._ident, self._name])
        command(
            "HSET",
            keys["state"],
            [
                *("b", int(state.baselined), "n", state.passes, "p", state.pages, "u", state.urls),
                *("c", "" if state.completed is None else repr(state.completed)),
            ],
        )
        written = {number: page for number, page in self._pages.items() if page is not None}
        dropped = [number for number, page in self._pages.items() if page is None]
        if written:
            command("HSET", keys["digests"], [x for n, (d, _) in written.items() for x in (n, d)], 2)
            command("HSET", keys["entries"], [x for n, (_, e) in written.items() for x in (n, pack(e))], 2)
        if dropped:
            command("HDEL", keys["digests"], dropped)
            command("HDEL", keys["entries"], dropped)
        rows = [x for loc, row in self._urls.items() if row is not None for x in (loc, _URL.pack(*row))]
        if rows:
            command("HSET", keys["urls"], rows, 2)
        gone = [loc for loc, row in self._urls.items() if row is None]
        if gone:
            command("HDEL", keys["urls"], gone)
        now_missing = [loc for loc, missing in self._missing.items() if missing]
        if now_missing:
            command("SADD", keys["missing"], now_missing)
        if self._had_missing:  # else the set holds only what this record adds
            found = [loc for loc, missing in self._missing.items() if not missing]
            if found:
                command("SREM", keys["missing"], found)
        if self._pass_ended:
            ops.extend((1, "DEL", keys["pass"]))
        if self._pass_added:
            command("ZADD", keys["pass"], [x for page in self._pass_added for x in (page, page)], 2)
        if self._changes:
            log = [x for change in self._changes for x in _logged(change)]
            command("LOG", keys["log"], log, 3)
        self._fresh()
        lock_ms = self._backend.lock_ms
        done = self._backend._commit(
            keys=[keys["lock"], keys["done"], self._backend.key("clock"), keys["wake"]],
            args=[self.token, lock_ms, *ops],
        )
        if not done:
            raise self._lost()


def _logged(change: Change) -> tuple[int, bytes, int]:
    return KINDS.index(change.kind), change.loc.encode(), (change.at - _EPOCH) // timedelta(microseconds=1)


def _pairs(flat: list[bytes] | dict[bytes, bytes]) -> dict[bytes, bytes]:
    if isinstance(flat, dict):
        return flat
    return dict(zip(flat[0::2], flat[1::2], strict=True))


def _state(fields: dict[bytes, bytes]) -> SectionState:
    completed = fields.get(b"c", b"")
    return SectionState(
        baselined=fields.get(b"b") == b"1",
        passes=int(fields.get(b"n", 0)),
        pages=int(fields.get(b"p", 0)),
        urls=int(fields.get(b"u", 0)),
        completed=float(completed) if completed else None,
    )
