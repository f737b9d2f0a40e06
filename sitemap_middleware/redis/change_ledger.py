"""`RedisLedger`: one record of a section in the Redis change log (`changes`), under its lock.

Reads go to Redis (batched: one ``HMGET`` per 10,000 locs, in one pipeline) or to what this
record already wrote; writes are kept here and sent by `RedisLedger.commit` in one script
(`change_scripts.COMMIT`) that applies them only while the lock is this record's.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from ..changes.fingerprints import Entries, pack, unpack
from ..changes.ledger import BEHIND, MISSING
from ..changes.model import KINDS, Change, SectionState
from ..errors import ChangeLogError

__all__ = ["EPOCH", "FETCH", "PAGE", "RedisLedger", "Session", "read_state"]

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
FETCH = 10_000  # fields per HMGET, entries per XRANGE
_URL = struct.Struct("<II")  # a URL's page and fingerprint
PAGE = len(KINDS)  # the kind of a log entry that says a page's bytes changed (`PageChange`)
_ARGS = 4000  # arguments per command inside the commit: Lua's unpack() takes ~8,000 at most


@dataclass(frozen=True, slots=True)
class Session:
    """What every record of one log shares: the client, the lock's timeout, the scripts."""

    client: Any  # a redis.Redis, its replies read as Redis sends them (bytes)
    lock_ms: int
    renew: Any  # redis-py Scripts (`change_scripts`)
    release: Any
    commit: Any
    sections: str  # the keys every section shares
    clock: str


class RedisLedger:
    """`changes.ledger.Ledger` under a section's lock: reads from Redis (or from what this
    record already wrote), writes kept here until `commit` sends them in one script."""

    def __init__(
        self,
        session: Session,
        scope: str,
        section: str,
        ident: str,
        keys: dict[str, str],
        token: str,
        prefetched: list[Any],
    ) -> None:
        self._session = session
        self._client = session.client
        self._name = f"{scope}\n{section}"
        self._ident = ident
        self.keys = keys
        self.token = token
        self._renewed = time.monotonic()
        fields, missing, digests, passed, behind = prefetched
        self._state = read_state(_pairs(fields)) if fields else SectionState()
        self._had = {"missing": int(missing) > 0, "behind": int(behind) > 0}
        # None: not prefetched (a section of many pages), asked one at a time.
        self._digests: dict[int, bytes] | None = None
        if digests is not None:
            self._digests = {int(number): digest for number, digest in _pairs(digests).items()}
        self._passed: set[int] | None = None if passed is None else {int(number) for number in passed}
        # What this record wrote (read back before Redis).
        self._pages: dict[int, tuple[bytes, Entries] | None] = {}  # None: dropped
        self._urls: dict[bytes, tuple[int, int] | None] = {}  # None: dropped
        # loc -> now on page MISSING (True) or not (False); the same for page BEHIND.
        self._marked: dict[str, dict[bytes, bool]] = {"missing": {}, "behind": {}}
        self._pass_added: set[int] = set()
        self._pass_ended = False
        # The log entries: (kind, loc, at in us, lastmod or page number), in order.
        self._log: list[tuple[int, bytes, int, bytes]] = []

    def _fresh(self) -> None:
        """Renew the lock when a third of its time has passed, before the next call to Redis."""
        now = time.monotonic()
        if now - self._renewed < self._session.lock_ms / 3000:
            return
        if not self._session.renew(keys=[self.keys["lock"]], args=[self.token, self._session.lock_ms]):
            raise self._lost()
        self._renewed = now

    def _lost(self) -> ChangeLogError:
        section = self._name.partition("\n")[2]
        return ChangeLogError(
            f"this worker held the change log's lock of section {section!r} past lock_timeout "
            f"({self._session.lock_ms / 1000:g} s): another worker may have recorded since; nothing written"
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
                for start in range(0, len(asked), FETCH):
                    pipe.hmget(self.keys["urls"], asked[start : start + FETCH])
                values = [value for part in pipe.execute() for value in part]
            for loc, value in zip(asked, values, strict=True):
                if value is not None:
                    found[loc] = _URL.unpack(value)
        return found

    def put_urls(self, rows: Iterable[tuple[bytes, int, int]]) -> None:
        missing, behind = self._marked["missing"], self._marked["behind"]
        for loc, page, fingerprint in rows:
            self._urls[loc] = (page, fingerprint)
            missing[loc] = page == MISSING
            behind[loc] = page == BEHIND

    def drop_urls(self, locs: Iterable[bytes]) -> None:
        missing, behind = self._marked["missing"], self._marked["behind"]
        for loc in locs:
            self._urls[loc] = None
            missing[loc] = behind[loc] = False

    def missing(self) -> list[bytes]:
        return self._on("missing")

    def behind(self) -> list[bytes]:
        return self._on("behind")

    def _on(self, mark: str) -> list[bytes]:
        """The URLs in set ``mark`` (``missing``, ``behind``): recorded, then written here."""
        marked = self._marked[mark]
        recorded: list[bytes] = []
        if self._had[mark]:
            self._fresh()
            recorded = [loc for loc in self._client.smembers(self.keys[mark]) if loc not in marked]
        return recorded + [loc for loc, now in marked.items() if now]

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
        for change in changes:
            lastmod = (change.lastmod or "").encode()
            self._log.append((KINDS.index(change.kind), change.loc.encode(), _micros(change.at), lastmod))

    def append_page(self, number: int, at: datetime) -> None:
        self._log.append((PAGE, b"", _micros(at), str(number).encode()))

    def release(self) -> None:
        """Give the lock back unused (the record failed): nothing written."""
        self._session.release(
            keys=[self.keys["lock"], self.keys["wake"]], args=[self.token, self._session.lock_ms]
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
        command("HSET", self._session.sections, [self._ident, self._name])
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
        for mark, marked in self._marked.items():
            now_marked = [loc for loc, now in marked.items() if now]
            if now_marked:
                command("SADD", keys[mark], now_marked)
            if self._had[mark]:  # else the set holds only what this record adds
                unmarked = [loc for loc, now in marked.items() if not now]
                if unmarked:
                    command("SREM", keys[mark], unmarked)
        if self._pass_ended:
            ops.extend((1, "DEL", keys["pass"]))
        if self._pass_added:
            command("ZADD", keys["pass"], [x for page in self._pass_added for x in (page, page)], 2)
        if self._log:
            command("LOG", keys["log"], [x for entry in self._log for x in entry], 4)
        self._fresh()
        lock_ms = self._session.lock_ms
        done = self._session.commit(
            keys=[keys["lock"], keys["done"], self._session.clock, keys["wake"]],
            args=[self.token, lock_ms, *ops],
        )
        if not done:
            raise self._lost()


def _micros(at: datetime) -> int:
    return (at - EPOCH) // timedelta(microseconds=1)


def _pairs(flat: list[bytes] | dict[bytes, bytes]) -> dict[bytes, bytes]:
    if isinstance(flat, dict):
        return flat
    return dict(zip(flat[0::2], flat[1::2], strict=True))


def read_state(fields: dict[bytes, bytes]) -> SectionState:
    completed = fields.get(b"c", b"")
    return SectionState(
        baselined=fields.get(b"b") == b"1",
        passes=int(fields.get(b"n", 0)),
        pages=int(fields.get(b"p", 0)),
        urls=int(fields.get(b"u", 0)),
        completed=float(completed) if completed else None,
    )
