"""`RedisStore`: the `CacheStore` a fleet of workers shares (documents, plans, generations).

See the package's docstring (`sitemap_middleware.redis`) for what it guarantees.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import redis
from cachetools import LRUCache
from redis.backoff import NoBackoff
from redis.retry import Retry

from ..caching.stores import Document
from ..config import check_timeout
from ..errors import ConfigurationError
from ..stats import Stats
from .flights import RedisFlights
from .link import Away, Exchange, Link, fresh
from .scripts import Keys, Template, token

if TYPE_CHECKING:
    from ..concurrency.loop_clients import LoopClients

__all__ = ["RedisStore"]

# Bytes charged per document on top of its body, as `MemoryStore` does.
_ENTRY_OVERHEAD = 512


class RedisStore:
    """A `CacheStore` in Redis, shared by every worker and machine that uses the same ``prefix``.

    Example::

        store = RedisStore.from_url("redis://127.0.0.1:6379/0", max_bytes=512 * 1024 * 1024)
        sitemaps = Sitemaps(base_url="https://shop.example", cache=store)

    - ``client``: a ``redis.Redis`` (not decoding responses). Give it a ``socket_timeout``:
      a request waits that long at most when Redis stops answering.
    - ``prefix``: of every key this store writes; one per app sharing a Redis.
    - ``max_bytes``: total bytes of stored bodies (plus a small per-document overhead) in
      Redis; past it the oldest documents go first.
    - ``ttl``: seconds a document is kept (Redis expires it) before it is rendered again.
    - ``lock_timeout``: seconds a render's lock outlives its worker: a worker that dies
      mid-render holds its page this long at most.
    - ``local_bytes``: bodies this process keeps of what it served, so a repeat (a 304,
      a gzip page) fetches only the validators from Redis when the body is unchanged.
    - ``retry_interval``: seconds between two attempts to reach Redis once it went away.
    - ``request_budget``: seconds one request may wait on Redis in all (lookups, lock
      claims, writes); past it, the request answers without Redis, as during an outage.
      By default the client's ``socket_timeout`` (1 s from `from_url`; 1 s if it has none):
      a slow Redis costs a request about what one call that times out would.

    ``invalidate()`` is heard by every worker once it returns, or raises
    `InvalidationError`: it is always a round trip to Redis, and nothing is deferred.

    ``stats`` counts what happened between this process and Redis (section ``""``):
    ``redis_fallbacks`` (renders done alone, without Redis: it was away, the request had
    spent its budget, or an invalidation Redis refused covers the document), ``redis_slow``
    (requests that spent their ``request_budget`` and went on without Redis),
    ``redis_outages``, ``redis_recoveries``, ``redis_errors`` and ``redis_new_instances``.

    Under ASGI a request's lookup is awaited on the event loop through a ``redis.asyncio``
    client with ``client``'s settings (`mirror`), one per event loop, made on first use and
    closed at the app's lifespan shutdown (without a lifespan, and for a Sentinel or custom
    pool, in a worker thread); every other call is made where blocking is allowed.
    """

    # `get` awaited on an event loop (`steps.Call.on_loop`); None where the client has no
    # asyncio twin.
    aget: Callable[[str, LoopClients], Awaitable[Document | None]] | None

    def __init__(
        self,
        client: redis.Redis,
        *,
        prefix: str = "sitemap:",
        max_bytes: int = 256 * 1024 * 1024,
        ttl: float = 600.0,
        lock_timeout: float = 10.0,
        local_bytes: int = 32 * 1024 * 1024,
        retry_interval: float = 1.0,
        request_budget: float | None = None,
    ) -> None:
        if client.connection_pool.connection_kwargs.get("decode_responses"):
            raise ConfigurationError(
                "RedisStore needs a client with decode_responses=False: bodies are bytes"
            )
        if not isinstance(prefix, str) or not prefix:
            raise ConfigurationError(f"prefix must be a non-empty string, not {prefix!r}")
        for name, value in (("max_bytes", max_bytes), ("local_bytes", local_bytes)):
            if isinstance(value, bool) or not isinstance(value, int) or value < (name == "max_bytes"):
                raise ConfigurationError(f"{name} must be an int of bytes, not {value!r}")
        self.max_bytes = max_bytes
        self.ttl = check_timeout("ttl", ttl)
        lock_timeout = check_timeout("lock_timeout", lock_timeout)
        if request_budget is None:
            # A slow Redis costs a request about what one call that times out would.
            request_budget = client.connection_pool.connection_kwargs.get("socket_timeout") or 1.0
        self.request_budget = check_timeout("request_budget", request_budget)
        self.stats = Stats()
        self._keys = Keys(prefix)
        self._link = Link(
            client,
            self._keys,
            retry_interval=check_timeout("retry_interval", retry_interval),
            budget=self.request_budget,
            ttl=self.ttl,
            stats=self.stats,
        )
        self.flights = RedisFlights(self._link, lock_timeout)
        # Every call is a round trip: the ASGI adapter makes them in worker threads, or
        # awaits a lookup on the loop.
        self.blocking = True
        self.aget = None if self._link.mirror is None else self._get_on_loop
        self._ttl_ms = max(1, round(self.ttl * 1000))
        # Bodies this process served, by key: only ever returned once Redis vouched for them.
        self._local: LRUCache[str, Document] | None = (
            LRUCache(maxsize=local_bytes, getsizeof=_charge) if local_bytes else None
        )
        self._local_lock = threading.Lock()

    @classmethod
    def from_url(cls, url: str, **options: Any) -> RedisStore:
        """A store on a new client for ``url`` that fails fast when Redis is away (1 s
        timeouts, one immediate retry); ``options`` are the store's."""
        client = redis.Redis.from_url(
            url, socket_timeout=1.0, socket_connect_timeout=1.0, retry=Retry(NoBackoff(), 1)
        )
        return cls(client, **options)

    # -- CacheStore ------------------------------------------------------------------------------

    def generation(self, section: str) -> str:
        # No round trip: each script resolves the token against Redis's generations.
        return token(section, self._link.seen.get(section, "?"))

    def invalidate(self, section: str | None = None) -> None:
        """Heard by every worker once it returns; `InvalidationError` when Redis cannot be reached."""
        self._link.invalidate("" if section is None else section, fresh())

    def get(self, key: str) -> Document | None:
        return self._link.run(self._getting(key))

    async def _get_on_loop(self, key: str, clients: LoopClients) -> Document | None:
        return await self._link.run_on_loop(self._getting(key), clients)

    def _getting(self, key: str) -> Exchange[Document | None]:
        template = Template.parse(key)
        held = self._held(key)
        link = self._link
        try:
            reply = yield from link.exchange(
                "get",
                [self._keys.generations],
                [
                    self._keys.prefix,
                    fresh(),
                    held.etag if held else "",
                    str(held.last_modified) if held else "",
                    *template.args(),
                ],
            )
        except Away:
            return None
        values = link.learn(template.sections, reply[0])
        if len(reply) == 1 or link.unheard(template.sections):
            return None
        if len(reply) == 4 and held is not None:
            return held  # Redis holds the very bytes this process has
        etag, last_modified, size, body = reply[1:]
        document = Document(body, etag.decode(), int(last_modified), int(size))
        self._hold(template.render(values), document)
        return document

    def set(self, key: str, document: Document) -> None:
        charge = _charge(document)
        if charge > self.max_bytes:
            return  # larger than the whole budget: served, never stored
        template = Template.parse(key)
        link = self._link
        if link.unheard(template.sections):
            return  # Redis missed an invalidation of it: nothing rendered since goes there
        # A leader stores what it rendered under the generations it claimed with; any
        # other writer under those its key was built with. Either way, none moved since.
        rendered_under = self.flights.claimed(key) or template.values
        try:
            reply = link.script(
                "set",
                [self._keys.generations, self._keys.order, self._keys.sizes],
                [
                    self._keys.prefix,
                    fresh(),
                    self._ttl_ms,
                    self.max_bytes,
                    charge,
                    document.etag,
                    document.last_modified,
                    document.size,
                    document.body,
                    " ".join(rendered_under),
                    *template.args(),
                ],
            )
        except Away:
            return
        values = link.learn(template.sections, reply[0])
        if reply[1]:
            self._hold(template.render(values), document)

    @property
    def current_bytes(self) -> int:
        """Bytes the documents in Redis are charged for (never above ``max_bytes``)."""
        try:
            total = self._link.call(lambda: self._link.client.hget(self._keys.sizes, ""))
        except Away:
            return 0
        return int(total or 0)

    # -- bodies kept here ------------------------------------------------------------------------

    def _held(self, key: str) -> Document | None:
        if self._local is None:
            return None
        current = Template.parse(key)
        name = current.render(current.values)
        with self._local_lock:
            return self._local.get(name)

    def _hold(self, name: str, document: Document) -> None:
        # Only documents with validators: a plan ("" ETag) could not be told from another.
        if self._local is not None and document.etag and _charge(document) <= self._local.maxsize:
            with self._local_lock:
                self._local[name] = document


def _charge(document: Document) -> int:
    return len(document.body) + _ENTRY_OVERHEAD
