"""``settings.SITEMAPS_CONCURRENCY``: the adapters' options, for the middleware in ``MIDDLEWARE``.

A project that serves the sitemaps from Django's ``MIDDLEWARE`` builds no adapter itself,
so the options `sitemaps.wsgi(...)` and `sitemaps.asgi(...)` take are read from settings:
``helper_threads`` by a sync stack, ``render_threads``, ``max_renders`` and ``send_timeout``
by an async one. Each test runs Django's own handlers in-process (its test clients).
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest
from django.test import AsyncClient, Client
from django.test.utils import override_settings

from sitemap_middleware import ConfigurationError, Sitemaps
from sitemap_middleware.django import SitemapMiddleware

from ..conftest import BASE
from ..djangosite.config import configure

configure()

MIDDLEWARE = ["sitemap_middleware.django.SitemapMiddleware"]


def hung(release: threading.Event, entered: threading.Event | None = None) -> Any:
    """A sync provider that waits for ``release`` before its one URL (``entered`` once called)."""

    def provider() -> list[str]:
        if entered is not None:
            entered.set()
        release.wait(10)
        return ["/a"]

    return provider


def test_helper_threads_let_the_provider_deadline_cut_a_hung_sync_provider() -> None:
    release = threading.Event()
    sitemaps = Sitemaps(base_url=BASE, provider_timeout=0.5)
    sitemaps.add_provider("hung", hung(release))
    try:
        with override_settings(
            SITEMAPS=sitemaps, MIDDLEWARE=MIDDLEWARE, SITEMAPS_CONCURRENCY={"helper_threads": 1}
        ):
            started = time.monotonic()
            response = Client().get("/sitemap-hung-1.xml", HTTP_HOST="shop.example")
            took = time.monotonic() - started
    finally:
        release.set()
    assert response.status_code == 503
    assert took < 5, f"the hung provider held the request {took:.1f} s: helper_threads was not applied"


def test_max_renders_makes_a_second_cold_page_wait_for_the_first() -> None:
    release, entered = threading.Event(), threading.Event()
    sitemaps = Sitemaps(base_url=BASE, provider_timeout=5)
    sitemaps.add_provider("slow", hung(release, entered))
    sitemaps.add_provider("quick", lambda: ["/b"])

    async def both() -> float:
        client = AsyncClient()
        slow = asyncio.ensure_future(client.get("/sitemap-slow-1.xml", HTTP_HOST="shop.example"))
        while not entered.is_set():  # its provider runs: the slow page holds the one render slot
            await asyncio.sleep(0.01)
        threading.Timer(1.0, release.set).start()
        started = time.monotonic()
        quick = await client.get("/sitemap-quick-1.xml", HTTP_HOST="shop.example")
        took = time.monotonic() - started
        assert quick.status_code == 200 and (await slow).status_code == 200
        return took

    with override_settings(SITEMAPS=sitemaps, MIDDLEWARE=MIDDLEWARE, SITEMAPS_CONCURRENCY={"max_renders": 1}):
        took = asyncio.run(both())
    assert took >= 0.8, f"the second page answered in {took:.2f} s: max_renders was not applied"


@pytest.mark.parametrize(
    ("concurrency", "message"),
    [
        pytest.param({"helper_thread": 1}, "helper_thread", id="unknown-option"),
        pytest.param({"helper_threads": "2"}, "helper_threads", id="sync-option-of-the-wrong-type"),
        pytest.param([("helper_threads", 1)], "a dict", id="not-a-dict"),
    ],
)
def test_a_misconfigured_concurrency_setting_is_refused_when_django_builds_its_chain(
    concurrency: object, message: str
) -> None:
    with (
        override_settings(SITEMAPS=Sitemaps(base_url=BASE), SITEMAPS_CONCURRENCY=concurrency),
        pytest.raises(ConfigurationError, match=message),
    ):
        SitemapMiddleware(lambda request: None)


def test_an_async_stacks_options_are_checked_by_its_adapter() -> None:
    async def get_response(request: Any) -> None:
        return None

    with (
        override_settings(SITEMAPS=Sitemaps(base_url=BASE), SITEMAPS_CONCURRENCY={"max_renders": 0}),
        pytest.raises(ConfigurationError, match="max_renders"),
    ):
        SitemapMiddleware(get_response)
