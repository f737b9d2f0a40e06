"""Under ASGI a request's lookup in `RedisStore` is awaited on the event loop.

Once the app's lifespan has started, a cached page and a 304 through Redis take no worker
thread: the lookup goes through a ``redis.asyncio`` client made on that loop, which the
middleware closes after the app's shutdown, before the server hears it is complete.
Without a lifespan the lookup takes a thread, as every other store call does, and nothing
is opened that could outlive its loop.

Each test seeds the page through another worker (its own store, over WSGI), so the store
under test never uses its sync client: the connections Redis lists under its client name
are its asyncio client's.
"""

from __future__ import annotations

import gc
import uuid
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import anyio.to_thread
import pytest
import redis
from starlette.testclient import TestClient
from werkzeug.test import Client as WerkzeugClient

from sitemap_middleware import Sitemaps
from sitemap_middleware.redis import RedisStore

from .. import apps
from ..conftest import Catalogue, Receive, Recorder, build, counter, http_scope, plain_wsgi_app, wait_until
from ..redis_server import RedisServer
from ..servers import Server, uvicorn_serving

pytestmark = pytest.mark.server

PAGE = "/sitemap-products-1.xml"
GZIP = {"Accept-Encoding": "gzip"}


@pytest.fixture
def thread_calls(monkeypatch: pytest.MonkeyPatch) -> list[Callable[..., Any]]:
    """Every function handed to a worker thread through anyio, as the adapter leaves the loop."""
    calls: list[Callable[..., Any]] = []
    run_sync = anyio.to_thread.run_sync

    async def counting(func: Callable[..., Any], *args: Any, **options: Any) -> Any:
        calls.append(func)
        return await run_sync(func, *args, **options)

    monkeypatch.setattr(anyio.to_thread, "run_sync", counting)
    return calls


@pytest.fixture
def name() -> str:
    """The client name of this test's store, as Redis lists its connections."""
    return f"loop-{uuid.uuid4().hex[:12]}"


def seeded(redis_server: RedisServer, name: str, client: redis.Redis) -> Sitemaps:
    """A worker on ``client`` whose page another worker rendered into Redis: its store only
    looks it up."""
    prefix = f"{name}:"
    catalogue = Catalogue(count=3)
    seeder, _ = build(catalogue, cache=RedisStore.from_url(redis_server.url, prefix=prefix))
    assert WerkzeugClient(seeder.wsgi(plain_wsgi_app)).get(PAGE, buffered=True).status_code == 200
    sitemaps, _ = build(catalogue, cache=RedisStore(client, prefix=prefix))
    return sitemaps


@pytest.fixture
def worker(redis_server: RedisServer, name: str) -> Sitemaps:
    client = redis.Redis(host="127.0.0.1", port=redis_server.port, socket_timeout=2.0, client_name=name)
    return seeded(redis_server, name, client)


def connections(server: RedisServer, name: str) -> int:
    return sum(1 for client in server.client().client_list() if client["name"] == name)


def assert_closed(server: RedisServer, name: str) -> None:
    """Redis sees every connection named ``name`` closed (by us: the collector is held off)."""
    gc.disable()
    try:
        wait_until(lambda: connections(server, name) == 0, f"Redis lists no connection of {name}")
    finally:
        gc.enable()


@contextmanager
def no_resource_warnings() -> Iterator[None]:
    """Fails if anything (a client's socket) is collected unclosed meanwhile, or right after."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
        gc.collect()
    leaks = [str(warning.message) for warning in caught if issubclass(warning.category, ResourceWarning)]
    assert leaks == []


@pytest.mark.parametrize(
    ("lifespan", "threads"),
    [
        pytest.param("auto", 0, id="lifespan-lookups-on-the-loop"),
        pytest.param("off", 2, id="no-lifespan-lookups-in-threads"),
    ],
)
def test_a_cached_page_and_a_304_through_redis(
    worker: Sitemaps, thread_calls: list[Callable[..., Any]], lifespan: str, threads: int
) -> None:
    with (
        no_resource_warnings(),
        uvicorn_serving(worker.asgi(apps.starlette_app()), lifespan=lifespan) as port,
    ):
        server = Server(port, "starlette")
        thread_calls.clear()
        page = server.get(PAGE, GZIP)
        assert page.status == 200
        again = server.get(PAGE, {**GZIP, "If-None-Match": page.headers["ETag"]})
        assert again.status == 304
        assert len(thread_calls) == threads
    assert counter(worker, "products", "cache_hits") == 1
    assert counter(worker, "products", "not_modified") == 1


def test_uvicorns_shutdown_closes_the_redis_connections_made_on_its_loop(
    worker: Sitemaps, redis_server: RedisServer, name: str
) -> None:
    with no_resource_warnings():
        with uvicorn_serving(worker.asgi(apps.starlette_app())) as port:
            Server(port, "starlette").fetch(PAGE)
            assert connections(redis_server, name) >= 1  # the loop's asyncio client
        assert_closed(redis_server, name)


def test_a_test_client_running_the_lifespan_closes_what_its_loop_opened(
    worker: Sitemaps, redis_server: RedisServer, name: str, thread_calls: list[Callable[..., Any]]
) -> None:
    with no_resource_warnings():
        with TestClient(worker.asgi(apps.starlette_app())) as client:
            thread_calls.clear()
            assert client.get(PAGE).status_code == 200
            assert thread_calls == []
            assert connections(redis_server, name) >= 1
        assert_closed(redis_server, name)


def test_a_test_client_without_the_lifespan_looks_up_in_a_thread_and_leaves_nothing_open(
    worker: Sitemaps, redis_server: RedisServer, name: str, thread_calls: list[Callable[..., Any]]
) -> None:
    with no_resource_warnings():
        client = TestClient(worker.asgi(apps.starlette_app()))  # each request on a loop of its own
        assert client.get(PAGE).status_code == 200
        assert client.get(PAGE).status_code == 200
        assert len(thread_calls) == 2
    assert counter(worker, "products", "cache_hits") == 2


def test_a_pool_it_cannot_copy_for_asyncio_looks_up_in_a_thread(
    redis_server: RedisServer, name: str, thread_calls: list[Callable[..., Any]]
) -> None:
    pool = redis.BlockingConnectionPool(host="127.0.0.1", port=redis_server.port, client_name=name)
    worker = seeded(redis_server, name, redis.Redis(connection_pool=pool))
    with no_resource_warnings(), TestClient(worker.asgi(apps.starlette_app())) as client:
        thread_calls.clear()
        assert client.get(PAGE).status_code == 200
        assert len(thread_calls) == 1
    assert counter(worker, "products", "cache_hits") == 1


def test_the_clients_are_closed_before_the_server_hears_the_shutdown_is_complete(
    worker: Sitemaps, redis_server: RedisServer, name: str
) -> None:
    app = worker.asgi(apps.starlette_app())
    heard: list[str] = []

    async def serve() -> None:
        to_app, from_server = anyio.create_memory_object_stream[dict[str, Any]](2)
        started = anyio.Event()

        async def send(message: dict[str, Any]) -> None:
            heard.append(message["type"])
            if message["type"] == "lifespan.startup.complete":
                started.set()
            elif message["type"] == "lifespan.shutdown.complete":
                assert_closed(redis_server, name)

        scope = {"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}
        async with anyio.create_task_group() as lifespan, to_app, from_server:
            lifespan.start_soon(app, scope, from_server.receive, send)
            await to_app.send({"type": "lifespan.startup"})
            await started.wait()
            request = Recorder()
            await app(http_scope(PAGE), Receive(), request)
            assert request.status == 200
            assert connections(redis_server, name) >= 1
            await to_app.send({"type": "lifespan.shutdown"})

    with no_resource_warnings():
        anyio.run(serve)
    assert heard == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
