"""A provider that hangs meets a deadline: a 503 before the page starts, an aborted page after."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator

import pytest

from sitemap_middleware import ConfigurationError, ProviderError, Sitemaps

BASE = "https://shop.example"
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

    def __call__(self) -> Iterator[str]:
        for n in range(self.before):
            yield f"/p/{n}"
        self.release.wait(30)
        yield "/late"


@pytest.fixture
def blocked_asgi(request: pytest.FixtureRequest):
    made: list[Blocked] = []

    def make(before: int):
        from .conftest import SitemapClient

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


@pytest.mark.parametrize("value", [0, -1, "30", True])
def test_provider_timeout_is_checked_at_construction(value):
    with pytest.raises(ConfigurationError, match="provider_timeout"):
        Sitemaps(base_url=BASE, provider_timeout=value)


@pytest.mark.parametrize("threads", [0, -1, 1.5, True])
def test_render_threads_is_checked_at_construction(threads):
    with pytest.raises(ConfigurationError, match="render_threads"):
        Sitemaps(base_url=BASE, render_threads=threads)
