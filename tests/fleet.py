"""One worker of a test fleet: a real server process whose sitemaps share a `RedisStore`.

``python -m tests.fleet asgi|wsgi`` serves on a free port of 127.0.0.1 (uvicorn, or werkzeug's
threaded server) and prints it. Everything else comes from the environment and one directory
the test shares with every worker:

- ``FLEET_REDIS``: the Redis URL; ``FLEET_DIR``: the shared directory.
- ``FLEET_STORE``, ``FLEET_SITEMAPS``: options of the `RedisStore` and of `Sitemaps` (JSON).
- ``<section>.txt``: the section's locs, one a line (three of them until it exists).
- ``<section>.renders``: a line appended by every call of the section's provider, in any
  worker: renders are counted across processes.
- ``<section>.hold``: while it exists, the section's provider waits before its first URL.

The app's own paths: ``/stats`` (this worker's counters, JSON) and ``/invalidate?section=``
(a save hook: 200 once the fleet has heard it, 503 when the store refused it).
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import anyio.to_thread

from sitemap_middleware import InvalidationError, Sitemaps
from sitemap_middleware.redis import RedisStore

SECTIONS = ("cold", "shared", "fresh", "outage", "takeover")
BASE = "https://fleet.example"
HOLD_LIMIT = 10.0  # seconds a held provider waits before it gives up


def provider(directory: Path, section: str) -> Callable[[], Iterator[str]]:
    def locs() -> Iterator[str]:
        with (directory / f"{section}.renders").open("a") as log:
            log.write(f"{os.getpid()}\n")
        deadline = time.monotonic() + HOLD_LIMIT
        while (directory / f"{section}.hold").exists() and time.monotonic() < deadline:
            time.sleep(0.005)
        data = directory / f"{section}.txt"
        lines = data.read_text().split() if data.exists() else [f"/{section}/{n}" for n in range(3)]
        yield from lines

    return locs


def build() -> tuple[Sitemaps, RedisStore]:
    directory = Path(os.environ["FLEET_DIR"])
    options = {"lock_timeout": 1.0, "retry_interval": 0.2, **json.loads(os.environ.get("FLEET_STORE", "{}"))}
    store = RedisStore.from_url(os.environ["FLEET_REDIS"], **options)
    sitemaps = Sitemaps(base_url=BASE, cache=store, **json.loads(os.environ.get("FLEET_SITEMAPS", "{}")))
    for section in SECTIONS:
        sitemaps.add_provider(section, provider(directory, section))
    return sitemaps, store


def own_answer(sitemaps: Sitemaps, store: RedisStore, path: str, query: str) -> tuple[int, bytes]:
    """The wrapped app: counters, and `invalidate` (a save hook would call it)."""
    if path == "/stats":
        body = {"pid": os.getpid(), "sitemaps": sitemaps.stats.snapshot(), "store": store.stats.snapshot()}
        return 200, json.dumps(body).encode()
    if path == "/invalidate":
        section = parse_qs(query).get("section", [None])[0]
        try:
            sitemaps.invalidate(section)
        except InvalidationError as error:
            return 503, f"refused: {error}\n".encode()
        return 200, b"invalidated\n"
    return 404, b"not found\n"


def asgi_app() -> Any:
    sitemaps, store = build()

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":  # as a framework answers it: lookups then run on the loop
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        # In a thread: invalidating is a round trip to Redis, never made on the event loop.
        status, body = await anyio.to_thread.run_sync(
            own_answer, sitemaps, store, scope["path"], scope["query_string"].decode()
        )
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return sitemaps.asgi(app)


def wsgi_app() -> Any:
    sitemaps, store = build()

    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        status, body = own_answer(sitemaps, store, environ["PATH_INFO"], environ.get("QUERY_STRING", ""))
        start_response(f"{status} X", [("Content-Type", "application/json")])
        return [body]

    return sitemaps.wsgi(app)


def main(adapter: str) -> None:
    if adapter == "asgi":
        import uvicorn

        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        config = uvicorn.Config(asgi_app(), log_config=None, access_log=False, lifespan="on", ws="none")
        print(sock.getsockname()[1], flush=True)
        uvicorn.Server(config).run(sockets=[sock])
    else:
        from werkzeug.serving import WSGIRequestHandler, make_server

        class Quiet(WSGIRequestHandler):
            def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
                pass

        server = make_server("127.0.0.1", 0, wsgi_app(), threaded=True, request_handler=Quiet)
        print(server.server_port, flush=True)
        server.serve_forever(poll_interval=0.05)


if __name__ == "__main__":
    main(sys.argv[1])
