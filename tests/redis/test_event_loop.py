"""Under ASGI, a Redis that stops answering never stalls the event loop.

A real uvicorn serves a Starlette app behind the middleware, with a `RedisStore` whose
connections pass through a `Partition` that can *stall*: Redis accepts commands and never
answers, as a paused (``kill -STOP``) or overloaded server does, until the client's
``socket_timeout``. While a sitemap request waits on it, the app's own route must answer
at once; the sitemap request then gets its answer without Redis (rendered locally, counted).
With the app's lifespan run, a request's lookup waits on the loop (``redis.asyncio``), and
without it in a worker thread: both leave the loop free.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry
from werkzeug.test import Client as WerkzeugClient

from sitemap_middleware import Sitemaps
from sitemap_middleware.redis import RedisStore

from .. import apps
from ..conftest import WAIT, Catalogue, build, counter, plain_wsgi_app, wait_until
from ..redis_server import Partition, RedisServer
from ..servers import TIMEOUT, Got, Server, uvicorn_serving
from ..xsd import locs, validate

pytestmark = pytest.mark.server

PAGE = "/sitemap-products-1.xml"
SOCKET_TIMEOUT = 2.0  # how long a silent Redis holds one call
# The app's own answer while a sitemap request waits on Redis: at once, not after the timeout.
PROMPT = SOCKET_TIMEOUT / 4


def store_through(partition: Partition, prefix: str, timeout: float = SOCKET_TIMEOUT) -> RedisStore:
    client = redis.Redis(
        host="127.0.0.1",
        port=partition.port,
        socket_timeout=timeout,
        socket_connect_timeout=timeout,
        retry=Retry(NoBackoff(), 0),
    )
    return RedisStore(client, prefix=prefix, retry_interval=0.05)


class Asking:
    """One GET in a thread of its own: ``answered`` once its whole answer is in."""

    def __init__(self, server: Server, path: str) -> None:
        self.path = path
        self.answered = threading.Event()
        self._answers: list[Got] = []
        self._thread = threading.Thread(target=self._ask, args=(server,))
        self._thread.start()

    def _ask(self, server: Server) -> None:
        try:
            self._answers.append(server.get(self.path))
        finally:
            self.answered.set()

    def answer(self) -> Got:
        self._thread.join(TIMEOUT)
        assert self._answers, f"GET {self.path} got no answer"
        return self._answers[0]


def assert_the_app_answers_meanwhile(partition: Partition, server: Server, asking: Asking) -> None:
    """Once ``asking`` waits on a silent Redis, the app's own route answers at once."""
    assert partition.heard.wait(WAIT), f"GET {asking.path} asks Redis"
    started = time.monotonic()
    home = server.get("/")
    took = time.monotonic() - started
    still_waiting = not asking.answered.is_set()
    assert home.status == 200 and home.body == b"starlette home"
    assert took < PROMPT, f"the app's own route took {took:.2f} s while GET {asking.path} waited on Redis"
    assert still_waiting, f"GET {asking.path} was answered before its Redis call could time out"


@pytest.fixture
def partition(redis_server: RedisServer) -> Iterator[Partition]:
    proxy = Partition(redis_server.port)
    yield proxy
    proxy.cut()


@pytest.fixture
def prefix() -> str:
    return f"loop-{uuid.uuid4().hex[:12]}:"


@pytest.mark.parametrize(
    "lifespan",
    [pytest.param("auto", id="lookup-on-the-loop"), pytest.param("off", id="lookup-in-a-thread")],
)
def test_a_cold_page_waiting_on_a_silent_redis_leaves_the_app_answering(
    partition: Partition, prefix: str, lifespan: str
) -> None:
    catalogue = Catalogue(count=3)
    store = store_through(partition, prefix)
    sitemaps, _ = build(catalogue, cache=store)
    with uvicorn_serving(sitemaps.asgi(apps.starlette_app()), lifespan=lifespan) as port:
        server = Server(port, "starlette")
        partition.stall()  # from the first command on
        asking = Asking(server, PAGE)
        assert_the_app_answers_meanwhile(partition, server, asking)
        page = asking.answer()
        assert page.status == 200
        assert locs(validate(page.body)) == [f"https://shop.example/p/{n}" for n in range(3)]
        counts = store.stats.snapshot()[""]
        assert counts["redis_outages"] == 1 and counts["redis_fallbacks"] >= 1
        partition.unstall()
        wait_until(lambda: store.stats.snapshot()[""].get("redis_recoveries"), "Redis is used again")
        server.fetch(PAGE)
        calls = catalogue.calls
        assert server.fetch(PAGE) == page.body
        assert catalogue.calls == calls  # stored in Redis again, and served from it


def test_shutting_down_while_a_lookup_waits_on_a_silent_redis_waits_its_timeout_at_most(
    partition: Partition, prefix: str
) -> None:
    timeout = SOCKET_TIMEOUT / 2  # the request ends well within uvicorn's graceful 2 s
    store = store_through(partition, prefix, timeout)
    sitemaps, _ = build(Catalogue(count=3), cache=store)
    with uvicorn_serving(sitemaps.asgi(apps.starlette_app())) as port:
        partition.stall()
        asking = Asking(Server(port, "starlette"), PAGE)
        assert partition.heard.wait(WAIT), f"GET {PAGE} asks Redis"
        stopping = time.monotonic()
    took = time.monotonic() - stopping
    assert took < timeout + PROMPT, f"uvicorn took {took:.2f} s to stop"
    assert asking.answer().status == 200  # rendered without Redis
    assert store.stats.snapshot()[""]["redis_outages"] == 1


def test_robots_txt_waiting_on_a_silent_redis_leaves_the_app_answering(
    partition: Partition, prefix: str
) -> None:
    sitemaps, _ = build(Catalogue(count=3), cache=store_through(partition, prefix))
    with uvicorn_serving(sitemaps.asgi(apps.starlette_app())) as port:
        server = Server(port, "starlette")
        partition.stall()
        asking = Asking(server, "/robots.txt")
        assert_the_app_answers_meanwhile(partition, server, asking)
        robots = asking.answer()
        assert robots.status == 200
        assert b"Sitemap: https://shop.example/sitemap-index.xml" in robots.body


def test_following_another_workers_render_on_a_silent_redis_leaves_the_app_answering(
    partition: Partition, prefix: str, redis_server: RedisServer
) -> None:
    release = threading.Event()
    rendering = threading.Event()

    def held() -> Iterator[str]:
        rendering.set()
        assert release.wait(WAIT)
        yield from ("/a", "/b")

    def worker(store: RedisStore, provider: Callable[[], Iterator[str]]) -> Sitemaps:
        sitemaps = Sitemaps(base_url="https://shop.example", cache=store)
        sitemaps.add_provider("products", provider)
        return sitemaps

    # The other worker reaches Redis directly; this one through the partition.
    other = worker(RedisStore.from_url(redis_server.url, prefix=prefix), held)
    here = worker(store_through(partition, prefix), lambda: iter(("/a", "/b")))
    leading = threading.Thread(target=lambda: WerkzeugClient(other.wsgi(plain_wsgi_app)).get(PAGE))
    leading.start()
    try:
        assert rendering.wait(WAIT)
        with uvicorn_serving(here.asgi(apps.starlette_app())) as port:
            server = Server(port, "starlette")
            server.fetch("/")
            following = Asking(server, PAGE)
            wait_until(lambda: counter(here, "products", "flight_waits") == 1, "this worker follows")
            partition.stall()  # its next look at the other worker's lock goes unanswered
            assert_the_app_answers_meanwhile(partition, server, following)
            page = following.answer()
            assert page.status == 200  # rendered here, without Redis
            assert locs(validate(page.body)) == ["https://shop.example/a", "https://shop.example/b"]
    finally:
        release.set()
        leading.join(TIMEOUT)
