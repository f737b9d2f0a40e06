"""This process's link to Redis: its calls, what it last saw there, and what it does without it.

What this process says to Redis is written once, as *exchanges*: sans-I/O generators
that yield commands and are sent their replies (`script`, and what the store builds on
it), so the same exchange runs on the sync client (`Link.run`, where blocking is allowed)
and on an asyncio one, awaited on the event loop (`Link.run_on_loop`, the lookups of
`RedisStore.aget`): one code path for what is asked, how replies are read, and what an
outage does.

Redis going away (a refused or timed-out connection, a replica that became read-only)
never reaches a request: the exchange raises `Away`, and the caller does without Redis
(renders the page itself, stores nothing). The first such error is logged and counted as
an outage; from then on exchanges are refused at once, without touching the network,
while one prober thread retries every ``retry_interval`` seconds::

    def getting(key) -> Exchange[bytes | None]:
        try:
            reply = yield from link.exchange("get", [keys.generations], args)
        except Away:
            return None                           # answer without Redis
        ...
    link.run(getting(key))                        # or: await link.run_on_loop(getting(key), clients)

A Redis that answers, but slowly, is no outage, yet it must not hold a request either:
each exchange is charged to the request it is made for (`caching.store_time`), and once
a request has spent ``budget`` seconds on Redis its further exchanges raise `Away` at
once, as during an outage (counted ``redis_slow`` once per request, logged once a
minute at most). Whatever a request waits on Redis is never its provider's time: calls
run `deadlines.off_the_clock`.

An invalidation always makes its round trip, even while Redis seems away (it is a probe
too), and either Redis has heard it when `Link.invalidate` returns, or it raises
`InvalidationError`: nothing is kept to be sent later by a process that may die first.
Until an invalidation of those sections reaches Redis (from anyone, seen as their
generation moving) or ``ttl`` passes (every document from before has expired by then),
this process does without Redis for them (`Link.unheard`), so it never serves what it
meant to drop. A Redis that comes back as a *new instance* (a restart, a failover) is
found by its missing scripts: the first process to meet it starts a new epoch before
anyone reads from it (`scripts.ADOPT`).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
import time
import uuid
from collections.abc import Callable, Generator, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

import redis
from redis.exceptions import NoScriptError, ReadOnlyError, RedisError

from ..caching import store_time
from ..concurrency.deadlines import off_the_clock
from ..concurrency.steps import run_async, run_blocking
from ..errors import InvalidationError
from ..stats import Stats, logger
from .mirror import mirror
from .scripts import ADOPT, SCRIPTS, Keys

if TYPE_CHECKING:
    from ..concurrency.loop_clients import LoopClients

__all__ = ["Away", "Command", "Exchange", "Link", "command", "fresh"]

T = TypeVar("T")

# One command, given a client: its reply from a sync client, an awaitable of it from an asyncio one.
Command = Callable[[Any], Any]
# A conversation with Redis: yields commands, is sent their replies, returns what it read.
Exchange = Generator[Command, Any, T]

# Errors that mean Redis is gone for now; any other error fails one call only.
_OUTAGES = (redis.ConnectionError, redis.TimeoutError, ReadOnlyError)
# Seconds between two log lines about calls failing for another reason than an outage.
_COMPLAIN_EVERY = 60.0


class Away(Exception):
    """Redis cannot be used for this call: do without it."""


def fresh() -> str:
    """A new random generation value (never one seen before, so never mistaken for one)."""
    return uuid.uuid4().hex[:16]


def command(*args: Any) -> Command:
    """``args`` as one Redis command (``"HGET", key, field``), for either kind of client."""
    return partial(_execute, args)


def _execute(args: tuple[Any, ...], client: Any) -> Any:
    return client.execute_command(*args)


def _apply(client: Any, step: Command) -> Any:
    return step(client)


class Link:
    """One client, the scripts it runs, its health, and the generations it last saw."""

    def __init__(
        self,
        client: redis.Redis,
        keys: Keys,
        *,
        retry_interval: float,
        budget: float,
        ttl: float,
        stats: Stats,
    ) -> None:
        self.client = client
        # Makes this client's asyncio twin, one per event loop (`run_on_loop`); None: cannot.
        self.mirror = mirror(client)
        self._send = partial(_apply, client)
        self.keys = keys
        self.stats = stats
        self._retry_interval = retry_interval
        self.budget = budget  # seconds a request may wait on Redis in all
        self._ttl = ttl
        # The scripts carry the prefix: a new instance is adopted once per prefix (see ADOPT).
        self._sources = {
            name: f"-- sitemap-middleware {keys.prefix!r}\n{body}" for name, body in SCRIPTS.items()
        }
        self._shas = {name: _sha1(source) for name, source in self._sources.items()}
        self._lock = threading.Lock()
        self._down = False
        # Invalidations Redis refused, by field ('' for everything): what was seen of the
        # field's generation before (None: nothing), and until when it holds (`unheard`).
        self._unheard: dict[str, tuple[str | None, float]] = {}
        self._prober: threading.Thread | None = None
        self._prober_pid = 0
        self._complained = 0.0
        self._complained_slow = 0.0
        # section -> "<epoch>.<generation>" as last seen here; keys are built from it.
        self.seen: dict[str, str] = {}
        self._epoch: str | None = None  # as last seen here

    def learn(self, sections: Sequence[str], values: Sequence[bytes]) -> tuple[str, ...]:
        """Remember the generations a script reported; returns them as text."""
        texts = tuple(value.decode() for value in values)
        seen = self.seen
        for section, text in zip(sections, texts, strict=True):
            seen[section] = text
        if texts:
            self._epoch = texts[0].partition(".")[0]
        return texts

    def unheard(self, sections: Sequence[str]) -> bool:
        """Whether an invalidation Redis refused covers one of ``sections`` still: this
        process then does without Redis for them (it would serve what it meant to drop)."""
        if not self._unheard:
            return False
        now = time.monotonic()
        with self._lock:
            for field, (before, until) in list(self._unheard.items()):
                if now >= until or (before is not None and before != self._generation(field)):
                    del self._unheard[field]  # expired since, or someone's invalidation reached Redis
            return "" in self._unheard or any(section in self._unheard for section in sections)

    def _generation(self, field: str) -> str | None:
        """A field's generation as last seen here: a section's, or ('') the epoch."""
        return self.seen.get(field) if field else self._epoch

    # -- calls ---------------------------------------------------------------------------------

    def run(self, exchange: Exchange[T]) -> T:
        """``exchange`` on the sync client, on this thread (never on a provider's clock)."""
        with off_the_clock():
            return run_blocking(exchange, self._send)

    async def run_on_loop(self, exchange: Exchange[T], clients: LoopClients) -> T:
        """``exchange`` on this event loop's asyncio client (made on first use; ``clients``
        closes it). Only where `mirror` is set."""
        assert self.mirror is not None
        client = clients.get(self, self.mirror)
        return await run_async(exchange, partial(_apply, client))

    def exchange(self, name: str, keys: Sequence[str], args: Sequence[str | bytes | int]) -> Exchange[Any]:
        """One of `scripts.SCRIPTS`; `Away` when Redis is gone (now, or for the last few moments)."""
        return self._guarded(self._eval(name, keys, args))

    def script(self, name: str, keys: Sequence[str], args: Sequence[str | bytes | int]) -> Any:
        """`exchange` on this thread."""
        return self.run(self.exchange(name, keys, args))

    def call(self, call: Callable[[], T]) -> T:
        """``call()`` (a pipeline on `client`) on this thread, or `Away` as `script` says."""
        return self.run(self._guarded(_calling(call)))

    def invalidate(self, field: str, value: str) -> None:
        """Set a generation in Redis: heard by the whole fleet once this returns, else
        `InvalidationError`. Always a round trip, even while Redis seems away: a probe too.
        """
        try:
            self.run(self._eval("invalidate", [self.keys.generations], [fresh(), field, value], timed=False))
        except RedisError as error:
            if isinstance(error, _OUTAGES):
                self._lost(error)
            else:
                self._failed(error)
            self._refused(field)
            what = f"invalidate({field!r})" if field else "invalidate()"
            raise InvalidationError(
                f"Redis did not hear {what} ({error}): the other workers serve what they hold until "
                f"it is made again or their documents expire (ttl={self._ttl:g} s)"
            ) from error
        with self._lock:
            if field:
                self._unheard.pop(field, None)
            else:
                self._unheard.clear()
        self._back()

    def _refused(self, field: str) -> None:
        with self._lock:
            held = self._unheard.get(field)
            before = held[0] if held is not None else self._generation(field)
            self._unheard[field] = (before, time.monotonic() + self._ttl)

    def out_of_time(self, tab: store_time.Tab | None = None) -> bool:
        """Whether the request this call is for (``tab``, by default the current one) has
        spent its budget on Redis: then counted ``redis_slow``, once per request, and it
        goes on without Redis."""
        tab = tab or store_time.current()
        if tab is None or tab.waited() < self.budget:
            return False
        if not tab.refused:
            tab.refused = True
            self.stats.count("", "redis_slow")
            now = time.monotonic()
            if now - self._complained_slow > _COMPLAIN_EVERY:
                self._complained_slow = now
                logger.warning(
                    "sitemap cache: Redis is slow: a request waited %.2f s on it, past its "
                    "request_budget of %g s; such requests are answered without Redis",
                    tab.waited(),
                    self.budget,
                )
        return True

    def _guarded(self, exchange: Exchange[T]) -> Exchange[T]:
        """``exchange``, with what an outage, a failed call or a spent budget does (`Away`)."""
        if self._down:
            self._probe_soon()
            raise Away
        tab = store_time.current()
        if self.out_of_time(tab):
            raise Away
        try:
            with contextlib.nullcontext() if tab is None else tab.waiting():
                return (yield from exchange)
        except _OUTAGES as error:
            self._lost(error)
            raise Away from error
        except RedisError as error:
            self._failed(error)
            raise Away from error

    def _eval(
        self, name: str, keys: Sequence[str], args: Sequence[str | bytes | int], *, timed: bool = True
    ) -> Exchange[Any]:
        """One script: a round trip, or a few when Redis lacks the scripts (`_adopt`), between
        which a request out of time stops (`Away`) unless ``timed`` is off (an invalidation)."""
        evalsha = command("EVALSHA", self._shas[name], len(keys), *keys, *args)
        try:
            return (yield evalsha)
        except NoScriptError:
            yield from self._adopt(timed)
            self._in_time(timed)
            return (yield evalsha)

    def _adopt(self, timed: bool) -> Exchange[None]:
        """A Redis without our scripts: a new instance, unless another process adopted it first."""
        self._in_time(timed)
        try:
            info = yield command("INFO", "server")
            run_id = str(info.get("run_id") or "")
        except RedisError:
            run_id = ""
        run_id = run_id or f"unknown-{fresh()}"  # INFO refused: treat it as new every time
        self._in_time(timed)
        if (yield command("EVAL", ADOPT, 1, self.keys.generations, run_id, fresh())):
            self.stats.count("", "redis_new_instances")
            logger.warning(
                "sitemap cache: Redis %s is a new instance (restart or failover): "
                "documents stored before it are no longer served",
                run_id,
            )
        self._in_time(timed)
        yield partial(_pipelined, [("SCRIPT LOAD", source) for source in self._sources.values()])

    def _in_time(self, timed: bool) -> None:
        if timed and self.out_of_time():
            raise Away

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
        if not self._down:
            return True  # an invalidation reached Redis meanwhile
        try:
            self.client.ping()
        except RedisError:
            return False
        self._back()
        return True

    def _back(self) -> None:
        """Redis answered: used again from the next call on."""
        with self._lock:
            was_down, self._down = self._down, False
        if was_down:
            self.stats.count("", "redis_recoveries")
            logger.info("sitemap cache: Redis is back; documents are shared again")


def _pipelined(commands: list[tuple[Any, ...]], client: Any) -> Any:
    """``commands`` in one round trip, on either kind of client (an awaitable from an asyncio one)."""
    pipe = client.pipeline(transaction=False)
    for args in commands:
        pipe.execute_command(*args)
    return pipe.execute()


def _calling(call: Callable[[], T]) -> Exchange[T]:
    reply: T = yield lambda _client: call()
    return reply


def _sha1(source: str) -> str:
    return hashlib.sha1(source.encode()).hexdigest()
