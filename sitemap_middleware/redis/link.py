"""This process's link to Redis: its calls, what it last saw there, and what it does without it.

Every call goes through `Link.run` (or `Link.script`). Redis going away (a refused or
timed-out connection, a replica that became read-only) never reaches a request: the call
raises `Away`, and the caller does without Redis (renders the page itself, stores
nothing). The first such error is logged and counted as an outage; from then on calls
are refused at once, without touching the network, while one prober thread retries every
``retry_interval`` seconds::

    try:
        reply = link.script("get", [keys.generations], args)
    except Away:
        ...                                   # answer without Redis

An invalidation Redis could not hear is kept (`Link.invalidate`) and pushed by the prober
before anything else: until then this process keeps doing without Redis, so it never
serves a document its own invalidation dropped. A Redis that comes back as a *new
instance* (a restart, a failover) is found by its missing scripts: the first process to
meet it starts a new epoch before anyone reads from it (`scripts.ADOPT`).
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import redis
from redis.exceptions import NoScriptError, ReadOnlyError, RedisError

from ..stats import Stats, logger
from .scripts import ADOPT, SCRIPTS, Keys

__all__ = ["Away", "Link", "fresh"]

T = TypeVar("T")

# Errors that mean Redis is gone for now; any other error fails one call only.
_OUTAGES = (redis.ConnectionError, redis.TimeoutError, ReadOnlyError)
# Seconds between two log lines about calls failing for another reason than an outage.
_COMPLAIN_EVERY = 60.0


class Away(Exception):
    """Redis cannot be used for this call: do without it."""


def fresh() -> str:
    """A new random generation value (never one seen before, so never mistaken for one)."""
    return uuid.uuid4().hex[:16]


class Link:
    """One client, the scripts it runs, its health, and the generations it last saw."""

    def __init__(self, client: redis.Redis, keys: Keys, *, retry_interval: float, stats: Stats) -> None:
        self.client = client
        self.keys = keys
        self.stats = stats
        self._retry_interval = retry_interval
        # The scripts carry the prefix: a new instance is adopted once per prefix (see ADOPT).
        self._sources = {
            name: f"-- sitemap-middleware {keys.prefix!r}\n{body}" for name, body in SCRIPTS.items()
        }
        self._shas = {name: _sha1(source) for name, source in self._sources.items()}
        self._lock = threading.Lock()
        self._down = False
        self._pending: dict[str, str] = {}  # invalidations Redis has not heard: field -> value
        self._prober: threading.Thread | None = None
        self._prober_pid = 0
        self._complained = 0.0
        # section -> "<epoch>.<generation>" as last seen here; keys are built from it.
        self.seen: dict[str, str] = {}

    def learn(self, sections: Sequence[str], values: Sequence[bytes]) -> tuple[str, ...]:
        """Remember the generations a script reported; returns them as text."""
        texts = tuple(value.decode() for value in values)
        seen = self.seen
        for section, text in zip(sections, texts, strict=True):
            seen[section] = text
        return texts

    # -- calls ---------------------------------------------------------------------------------

    def run(self, call: Callable[[], T]) -> T:
        """``call()``, or `Away` when Redis is gone (now, or for the last few moments)."""
        if self._down:
            self._probe_soon()
            raise Away
        try:
            return call()
        except _OUTAGES as error:
            self._lost(error)
            raise Away from error
        except RedisError as error:
            self._failed(error)
            raise Away from error

    def script(self, name: str, keys: Sequence[str], args: Sequence[str | bytes | int]) -> Any:
        return self.run(lambda: self._eval(name, keys, args))

    def invalidate(self, field: str, value: str) -> None:
        """Set a generation in Redis, or keep it for when Redis is back (and do without it until then)."""
        try:
            self.script("invalidate", [self.keys.generations], [fresh(), field, value])
        except Away:
            with self._lock:
                self._pending[field] = value
                self._down = True
            self._probe_soon()

    def _eval(self, name: str, keys: Sequence[str], args: Sequence[str | bytes | int]) -> Any:
        try:
            return self.client.evalsha(self._shas[name], len(keys), *keys, *args)
        except NoScriptError:
            self._adopt()
            return self.client.evalsha(self._shas[name], len(keys), *keys, *args)

    def _adopt(self) -> None:
        """A Redis without our scripts: a new instance, unless another process adopted it first."""
        try:
            run_id = str(self.client.info("server").get("run_id") or "")
        except RedisError:
            run_id = ""
        run_id = run_id or f"unknown-{fresh()}"  # INFO refused: treat it as new every time
        if self.client.eval(ADOPT, 1, self.keys.generations, run_id, fresh()):
            self.stats.count("", "redis_new_instances")
            logger.warning(
                "sitemap cache: Redis %s is a new instance (restart or failover): "
                "documents stored before it are no longer served",
                run_id,
            )
        for source in self._sources.values():
            self.client.script_load(source)

    # -- health ----------------------------------------------------------------------------

    def _lost(self, error: RedisError) -> None:
        self.stats.count("", "redis_errors")
        with self._lock:
            first, self._down = not self._down, True
        if first:
            self.stats.count("", "redis_outages")
            logger.warning("sitemap cache: Redis unavailable (%s); rendering locally until it is back", error)
        self._probe_soon()

    def _failed(self, error: RedisError) -> None:
        self.stats.count("", "redis_errors")
        now = time.monotonic()
        if now - self._complained > _COMPLAIN_EVERY:
            self._complained = now
            logger.warning("sitemap cache: a Redis call failed (%s); answered without Redis", error)

    def _probe_soon(self) -> None:
        """Make sure one thread in this process retries Redis (a forked worker starts its own)."""
        with self._lock:
            pid = os.getpid()
            if self._prober is not None and self._prober_pid == pid and self._prober.is_alive():
                return
            self._prober = threading.Thread(target=self._probe, name="sitemap-redis-probe", daemon=True)
            self._prober_pid = pid
            self._prober.start()

    def _probe(self) -> None:
        time.sleep(self._retry_interval)
        while not self._recovered():
            time.sleep(self._retry_interval)

    def _recovered(self) -> bool:
        with self._lock:
            if not self._down:
                return True
            pending = dict(self._pending)
        try:
            if pending:
                pairs = [item for field_value in pending.items() for item in field_value]
                self._eval("invalidate", [self.keys.generations], [fresh(), *pairs])
            else:
                self.client.ping()
        except RedisError:
            return False
        with self._lock:
            for field, value in pending.items():
                if self._pending.get(field) == value:
                    del self._pending[field]
            if self._pending:
                return False  # another invalidation came meanwhile: push it first
            self._down = False
        self.stats.count("", "redis_recoveries")
        logger.info("sitemap cache: Redis is back; documents are shared again")
        return True


def _sha1(source: str) -> str:
    return hashlib.sha1(source.encode()).hexdigest()
