"""An asyncio client with a sync client's connection settings, for lookups on the event loop.

`RedisStore` takes one ``redis.Redis``; under ASGI its request lookups are awaited on the
event loop through a ``redis.asyncio`` client made per loop from the same settings (where,
which database, credentials, TLS, timeouts), so a silent Redis holds a lookup for the
same ``socket_timeout`` as a sync call::

    make = mirror(client)          # None for a pool it cannot copy (Sentinel, a custom class)
    aclient = make()               # a new redis.asyncio.Redis; ``await aclient.aclose()``

It never retries a call: a retry would double the wait on a silent Redis, and a
connection Redis dropped meanwhile is replaced before use (the pool checks it).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import redis
import redis.asyncio
import redis.asyncio.connection
import redis.connection
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

__all__ = ["mirror"]

# The async twin of each connection class it can copy.
_CLASSES: dict[type[Any], type[redis.asyncio.connection.AbstractConnection]] = {
    redis.connection.Connection: redis.asyncio.connection.Connection,
    redis.connection.UnixDomainSocketConnection: redis.asyncio.connection.UnixDomainSocketConnection,
    redis.connection.SSLConnection: redis.asyncio.connection.SSLConnection,
}
# The settings both kinds of connection share; the rest (a sync retry, sync hooks) stay behind.
_SETTINGS = (
    "host",
    "port",
    "path",
    "db",
    "username",
    "password",
    "credential_provider",
    "socket_timeout",
    "socket_connect_timeout",
    "socket_keepalive",
    "socket_keepalive_options",
    "socket_type",
    "socket_read_size",
    "client_name",
    "driver_info",
    "protocol",
    "encoding",
    "encoding_errors",
    "health_check_interval",
    "ssl_keyfile",
    "ssl_certfile",
    "ssl_cert_reqs",
    "ssl_include_verify_flags",
    "ssl_exclude_verify_flags",
    "ssl_ca_certs",
    "ssl_ca_data",
    "ssl_ca_path",
    "ssl_check_hostname",
    "ssl_min_version",
    "ssl_ciphers",
    "ssl_password",
)


def mirror(client: redis.Redis) -> Callable[[], redis.asyncio.Redis] | None:
    """What makes asyncio clients like ``client``, or ``None`` when its pool cannot be copied."""
    pool = client.connection_pool
    connection_class = _CLASSES.get(pool.connection_class) if type(pool) is redis.ConnectionPool else None
    if connection_class is None:
        return None
    settings = {name: value for name, value in pool.connection_kwargs.items() if name in _SETTINGS}
    return partial(_client, connection_class, pool.max_connections, settings)


def _client(
    connection_class: type[redis.asyncio.connection.AbstractConnection],
    max_connections: int,
    settings: dict[str, Any],
) -> redis.asyncio.Redis:
    pool = redis.asyncio.ConnectionPool(
        connection_class=connection_class,
        max_connections=max_connections,
        retry=Retry(NoBackoff(), 0),
        **settings,
    )
    return redis.asyncio.Redis.from_pool(pool)  # closing the client closes its pool
