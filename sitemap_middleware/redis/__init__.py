"""A cache shared by every worker and machine: documents, plans and generations in Redis.

    pip install "sitemap-middleware[redis]"

    from sitemap_middleware.redis import RedisStore

    sitemaps = Sitemaps(base_url="https://shop.example", cache=RedisStore.from_url("redis://127.0.0.1:6379/0"))
    # or RedisStore(redis.Redis(...), prefix="shop:", max_bytes=..., ttl=...)

What a fleet gets from it:

- One copy of each page in Redis (its gzip body and validators), so every worker answers
  with the same bytes, ETag and Last-Modified, and a 304 from any worker for any other's.
- ``invalidate()`` on any worker is seen by every worker at its next request: each
  request's one round trip to Redis reads the document under the generations Redis holds
  then (`scripts`), never a copy of them.
- One render of a cold page across the fleet (`flights.RedisFlights`): a lock with a
  timeout, renewed while its leader makes progress, taken over when it stalls or dies.
  The leader streams to its own client while the store fills; the others get the stored bytes.
- Redis going away fails no request: each worker renders its requests itself, logs it
  once and counts it (`RedisStore.stats`), and uses Redis again once it answers
  (`link.Link`). A Redis that comes back as a new instance (restarted, failed over)
  serves nothing stored before.
- A slow Redis costs a request ``request_budget`` seconds at most (and the call under
  way): past it, the request answers without Redis, as during an outage (counted
  ``redis_slow``). Time waiting on Redis is never charged to a provider's deadline.
- ``invalidate()`` always makes its round trip: heard by the fleet once it returns, or
  `InvalidationError` (nothing is deferred into a process that may die). A worker whose
  invalidation was refused answers those sections without Redis until one reaches it.
- A slow or silent Redis never stalls an event loop: the store declares its calls
  ``blocking``, so the ASGI adapter makes them in worker threads (`steps.Call`), except a
  request's lookup (a cached page, a 304), which it awaits on the loop through a
  ``redis.asyncio`` client with the same settings (`mirror`), one per event loop, closed
  at the app's lifespan shutdown (`concurrency.loop_clients`; without a lifespan, in a
  thread). What no request waits on (releasing, watching and renewing locks) runs on one
  background thread (`flights.RedisFlights`). Each call waits ``socket_timeout`` at most.
- Memory: each document once in Redis, expiring after ``ttl``, and at most ``max_bytes``
  of them (oldest first), whatever Redis's own ``maxmemory`` says; a small per-process
  copy of recently served bodies (``local_bytes``) spares refetching unchanged ones.

One Redis (a primary, with Sentinel if you like): the scripts touch keys they compute,
which Redis Cluster does not allow.
"""

from __future__ import annotations

try:
    import redis as _redis  # noqa: F401
except ImportError as error:  # pragma: no cover - the extra is not installed
    raise ImportError(
        "sitemap_middleware.redis needs the redis client: pip install 'sitemap-middleware[redis]'"
    ) from error

from .store import RedisStore

__all__ = ["RedisStore"]
