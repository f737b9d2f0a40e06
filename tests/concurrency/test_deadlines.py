"""A provider that hangs meets a deadline: a 503 before the page starts, an aborted page after."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any, overload

import pytest
from werkzeug.test import Client

from sitemap_middleware import ConfigurationError, ProviderError, Sitemaps

from ..conftest import BASE, counter, plain_wsgi_app, wait_until

PAGE = "/sitemap-products-1.xml"
DEADLINE = 0.3


async def hangs_at_once() -> AsyncIterator[str]:
    await asyncio.Event().wait()  # never set: a database that stopped answering
    yield "/never"


async def hangs_mid_page() -> AsyncIterator[str]:
    for n in range(50):
        yield f"/p/{n}"
    await asyncio.Event().wait()
    yield "/never"


def sitemaps_with(provider: object) -> Sitemaps:
    sitemaps = Sitemaps(base_url=BASE, provider_timeout=DEADLINE)
    sitemaps.add_provider("products", provider)  # type: ignore[arg-type]
    return sitemaps


def test_async_provider_hanging_before_its_first_url_gets_503(make_client):
    sitemaps = sitemaps_with(hangs_at_once)
    response = make_client(sitemaps).get(PAGE)
    assert response.status == 503
    assert "Retry-After" in response.headers
    assert sitemaps.stats.snapshot()["products"]["provider_errors"] == 1


def test_async_provider_hanging_mid_page_aborts_the_page(make_client):
    sitemaps = sitemaps_with(hangs_mid_page)
    with pytest.raises(ProviderError):
        make_client(sitemaps).get(PAGE)


def test_index_with_a_hanging_count_gets_503(make_client):
    async def count() -> int:
        await asyncio.Event().wait()
        return 0

    sitemaps = Sitemaps(base_url=BASE, provider_timeout=DEADLINE)
    sitemaps.add_provider("products", lambda: ["/"], count=count)
    assert make_client(sitemaps).get("/sitemap-index.xml").status == 503


class Blocked:
    """A sync provider blocked on an event the test releases at the end (no thread leaks)."""

    def __init__(self, before: int) -> None:
        self.before = before
        self.release = threading.Event()
        self.closed = threading.Event()  # its iterator closed, or run to its end

    def __call__(self) -> Iterator[str]:
        try:
            for n in range(self.before):
                yield f"/p/{n}"
            self.release.wait(30)
            yield "/late"
        finally:
            self.closed.set()


@pytest.fixture
def blocked_asgi(request: pytest.FixtureRequest):
    made: list[Blocked] = []

    def make(before: int):
        from ..conftest import SitemapClient

        provider = Blocked(before)
        made.append(provider)
        return SitemapClient("asgi", sitemaps_with(provider)), provider

    yield make
    for provider in made:
        provider.release.set()


def test_sync_provider_hanging_under_asgi_gets_503(blocked_asgi):
    client, _ = blocked_asgi(0)
    try:
        assert client.get(PAGE).status == 503
    finally:
        client.close()


def test_sync_provider_stalling_mid_page_under_asgi_aborts_and_caches_nothing(blocked_asgi):
    client, provider = blocked_asgi(200)
    try:
        with pytest.raises(ProviderError, match="produced nothing"):
            client.get(PAGE)
        provider.release.set()
        retry = client.get(PAGE)
        assert retry.status == 200
        assert "ETag" not in retry.headers  # rendered again: the aborted page was never stored
    finally:
        client.close()


def test_a_render_given_up_on_is_ended_when_its_thread_returns_and_the_page_renders_afresh(blocked_asgi):
    """The thread of a render cut at the deadline goes on, and once its provider answers it
    makes the page's document: nobody will ever read it, so it must end there, not stay in
    flight for every later request of the page to join and wait on forever."""
    client, provider = blocked_asgi(0)
    try:
        assert client.get(PAGE).status == 503
        provider.release.set()  # the database answers at last: the abandoned thread goes on
        assert provider.closed.wait(5), "the abandoned render's provider was never closed"
        again = client.get(PAGE)
        assert again.status == 200
        assert b"/late</loc>" in again.body
    finally:
        client.close()


# -- WSGI: sync providers are cut only with helper threads -----------------------------------


def wsgi_client(provider: object, **options: Any) -> Client:
    sitemaps = Sitemaps(base_url=BASE, provider_timeout=DEADLINE, **options)
    sitemaps.add_provider("products", provider)  # type: ignore[arg-type]
    return Client(sitemaps.wsgi(plain_wsgi_app, helper_threads=4))


@pytest.fixture
def releasing() -> Iterator[list[Blocked]]:
    """Blocked providers made by a test, released when it ends (no thread outlives it blocked)."""
    made: list[Blocked] = []
    yield made
    for provider in made:
        provider.release.set()


def test_a_render_given_up_on_under_wsgi_helpers_is_ended_when_its_thread_returns(releasing):
    """`test_a_render_given_up_on_is_ended_when_its_thread_returns_and_the_page_renders_afresh`,
    with the render on a WSGI helper thread."""
    provider = Blocked(0)
    releasing.append(provider)
    client = wsgi_client(provider)
    assert client.get(PAGE).status_code == 503
    provider.release.set()
    assert provider.closed.wait(5), "the abandoned render's provider was never closed"
    again = client.get(PAGE)
    assert again.status_code == 200
    assert b"/late</loc>" in again.data


def test_sync_provider_hanging_under_wsgi_with_helper_threads_gets_503(releasing):
    provider = Blocked(0)
    releasing.append(provider)
    started = time.monotonic()
    response = wsgi_client(provider).get(PAGE)
    assert response.status_code == 503
    assert response.headers["Retry-After"]
    assert time.monotonic() - started < 10 * DEADLINE


def test_sync_provider_stalling_mid_page_under_wsgi_with_helper_threads_aborts_and_caches_nothing(releasing):
    provider = Blocked(200)
    releasing.append(provider)
    client = wsgi_client(provider)
    response = client.get(PAGE)
    assert response.status_code == 200  # the first chunk came in time: the page had started
    with pytest.raises(ProviderError, match="produced nothing"):
        response.get_data()
    response.close()  # as a WSGI server does after a body raised
    provider.release.set()
    retry = client.get(PAGE)
    assert retry.status_code == 200
    assert "ETag" not in retry.headers  # rendered again: the aborted page was never stored
    assert retry.get_data().count(b"<url>") == 201


def test_when_every_helper_is_stuck_cold_pages_get_503_and_cached_ones_are_served(releasing):
    stuck = Blocked(0)
    releasing.append(stuck)
    sitemaps = Sitemaps(base_url=BASE, provider_timeout=DEADLINE)
    sitemaps.add_provider("products", stuck)
    sitemaps.add_provider("pages", lambda: ["/", "/about"])
    sitemaps.add_provider("posts", lambda: ["/blog/1"])
    client = Client(sitemaps.wsgi(plain_wsgi_app, helper_threads=1))
    client.get("/sitemap-pages-1.xml").get_data()  # cached before the only helper gets stuck
    assert client.get(PAGE).status_code == 503  # the helper is now stuck in the provider
    started = time.monotonic()
    assert client.get("/sitemap-posts-1.xml").status_code == 503  # no helper became free
    assert time.monotonic() - started < 10 * DEADLINE
    assert client.get("/sitemap-pages-1.xml").status_code == 200  # from the cache, no helper needed
    stuck.release.set()
    assert client.get("/sitemap-posts-1.xml").status_code == 200  # the helper came back


def test_with_one_helper_a_request_for_a_page_in_flight_waits_on_its_own_thread(releasing):
    # One helper thread: had the second request waited on it, the first could not go on.
    provider = Blocked(200)
    releasing.append(provider)
    calls = []
    rendering = threading.Event()

    def products() -> Iterator[str]:
        calls.append(1)
        rendering.set()
        return provider()

    sitemaps = Sitemaps(base_url=BASE, provider_timeout=10)
    sitemaps.add_provider("products", products)
    app = sitemaps.wsgi(plain_wsgi_app, helper_threads=1)
    bodies: dict[str, bytes] = {}

    def fetch(name: str) -> None:
        bodies[name] = Client(app).get(PAGE).get_data()

    leader = threading.Thread(target=fetch, args=("leader",))
    leader.start()
    assert rendering.wait(10)  # the leader's render has begun, its page is in flight
    follower = threading.Thread(target=fetch, args=("follower",))
    follower.start()
    wait_until(lambda: counter(sitemaps, "products", "joined_renders"), "the follower reads the render")
    provider.release.set()
    leader.join(10)
    follower.join(10)
    assert bodies["leader"] == bodies["follower"]
    assert bodies["leader"].count(b"<url>") == 201
    assert calls == [1]  # one render, shared


@pytest.mark.server
def test_hung_sync_provider_behind_a_real_wsgi_server_gets_503_in_time(releasing):
    from ..servers import Server, werkzeug_serving

    provider = Blocked(0)
    releasing.append(provider)
    sitemaps = Sitemaps(base_url=BASE, provider_timeout=DEADLINE)
    sitemaps.add_provider("products", provider)
    with werkzeug_serving(sitemaps.wsgi(plain_wsgi_app, helper_threads=4)) as port:
        started = time.monotonic()
        got = Server(port, "plain").get(PAGE)
        elapsed = time.monotonic() - started
        provider.release.set()  # lets the helper go before the server stops
    assert got.status == 503
    assert got.headers["Retry-After"]
    assert elapsed < 10 * DEADLINE


# -- the deadline is on progress, not on a whole render ---------------------------------------


class SlowPages(Sequence[str]):
    """A catalogue whose every slice (one query per batch) takes two thirds of the deadline."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.queries = 0

    def __len__(self) -> int:
        return self.count

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> list[str]: ...

    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, int):
            return f"/p/{index}"
        time.sleep(2 * DEADLINE / 3)
        self.queries += 1
        return [f"/p/{n}" for n in range(self.count)[index]]


@pytest.mark.parametrize("adapter", ["asgi", "wsgi-helpers"])
def test_a_long_plan_that_keeps_progressing_is_never_cut(adapter):
    # 3,000 URLs come in 8 slices (1, 4, 16, 64, 256, 1024, 1024, 611): 1.6 s in all, far
    # past the deadline, but no slice takes longer than the deadline.
    catalogue = SlowPages(3000)
    sitemaps = Sitemaps(base_url=BASE, provider_timeout=DEADLINE)
    sitemaps.add_provider("products", lambda: catalogue, page_size=1000)
    if adapter == "asgi":
        from ..conftest import SitemapClient

        client = SitemapClient("asgi", sitemaps)
        try:
            index = client.get("/sitemap-index.xml")
        finally:
            client.close()
        status, body = index.status, index.body
    else:
        response = Client(sitemaps.wsgi(plain_wsgi_app, helper_threads=4)).get("/sitemap-index.xml")
        status, body = response.status_code, response.get_data()
    assert status == 200
    assert body.count(b"<sitemap>") == 3
    assert catalogue.queries == 8
    assert "provider_errors" not in sitemaps.stats.snapshot().get("", {})


@pytest.mark.parametrize("adapter", ["asgi", "wsgi-helpers"])
def test_a_page_streaming_longer_than_the_deadline_is_whole_while_every_chunk_is_in_time(adapter):
    # One page of 3,000 URLs in 8 slices, each two thirds of the deadline: every chunk's
    # call into a thread is in time, the page as a whole takes 1.6 s. Under ASGI the chunks
    # share one deadline keeper (`ThreadCalls`): it must renew per chunk, never per page.
    catalogue = SlowPages(3000)
    sitemaps = Sitemaps(base_url=BASE, provider_timeout=DEADLINE, cache=None)
    sitemaps.add_provider("products", lambda: catalogue)
    if adapter == "asgi":
        from ..conftest import SitemapClient

        client = SitemapClient("asgi", sitemaps)
        try:
            page = client.get(PAGE)
        finally:
            client.close()
        status, body = page.status, page.body
    else:
        response = Client(sitemaps.wsgi(plain_wsgi_app, helper_threads=4)).get(PAGE)
        status, body = response.status_code, response.get_data()
    assert status == 200
    assert body.count(b"<url>") == 3000
    assert catalogue.queries == 8


@pytest.mark.parametrize("helpers", [False, True])
def test_providers_run_on_the_request_thread_unless_helper_threads_are_on(helpers):
    ran_on: list[str] = []

    def provider() -> Iterator[str]:
        try:
            ran_on.append(threading.current_thread().name)
            yield "/p/1"
        finally:
            ran_on.append(threading.current_thread().name)  # closing runs where iterating ran

    sitemaps = Sitemaps(base_url=BASE, cache=None)
    sitemaps.add_provider("products", provider)
    response = Client(sitemaps.wsgi(plain_wsgi_app, helper_threads=4 if helpers else 0)).get(PAGE)
    assert response.get_data().count(b"<url>") == 1
    response.close()
    expected = "sitemap-helper" if helpers else threading.current_thread().name
    assert ran_on == [expected, expected]


@pytest.mark.parametrize("value", [0, -1, "30", True])
def test_provider_timeout_is_checked_at_construction(value):
    with pytest.raises(ConfigurationError, match="provider_timeout"):
        Sitemaps(base_url=BASE, provider_timeout=value)


@pytest.mark.parametrize(
    ("adapter", "option"),
    [
        pytest.param("asgi", "render_threads", id="asgi-render_threads"),
        pytest.param("asgi", "max_renders", id="asgi-max_renders"),
        pytest.param("asgi", "send_timeout", id="asgi-send_timeout"),
        pytest.param("wsgi", "helper_threads", id="wsgi-helper_threads"),
    ],
)
@pytest.mark.parametrize("value", [-1, 1.5, True, "4"])
def test_adapter_limits_are_checked_when_the_adapter_is_built(adapter, option, value):
    sitemaps = Sitemaps(base_url=BASE)
    if option == "send_timeout" and value == 1.5:
        value = 0  # 1.5 s is a valid timeout
    with pytest.raises(ConfigurationError, match=option):
        getattr(sitemaps, adapter)(plain_wsgi_app, **{option: value})
