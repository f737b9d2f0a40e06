"""Measuring a section (where its pages start) has bounds a steady stream of entries cannot outrun.

A section without a count is iterated to find its pages. A provider that never ends (a
bug in a user's generator) must not be iterated forever: measuring stops once the section
needs more files than an index can list, or once ``measure_timeout`` has passed.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator

import pytest

from sitemap_middleware import ProviderError, Sitemaps
from sitemap_middleware.engine import Engine
from sitemap_middleware.errors import EntryError, MeasureLimitError
from sitemap_middleware.plans.measured import Measured
from sitemap_middleware.protocol.uris import Site
from sitemap_middleware.providers import LoopRunner, Provider, Section

from ..conftest import BASE, SitemapClient
from ..xsd import locs, validate

MAX_SITEMAPS = 50_000  # Google: at most 50,000 sitemaps in one index, and indexes do not nest

MakeClient = Callable[..., SitemapClient]


class Forever:
    """A provider whose generator never ends, counting what it yielded and noting its close.

    ``ceiling`` only keeps a test finite on code without the bound: it is far past it.
    """

    def __init__(self, ceiling: int = 10 * MAX_SITEMAPS, tick: Callable[[], None] = lambda: None) -> None:
        self.ceiling = ceiling
        self.tick = tick
        self.pulled = 0
        self.closed = threading.Event()

    def __call__(self) -> Iterator[str]:
        try:
            for n in range(self.ceiling):
                self.tick()
                yield f"/p/{n}"
                self.pulled += 1
        finally:
            self.closed.set()


def forever_sitemaps(provider: Forever) -> Sitemaps:
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.add_provider("products", provider, page_size=1)
    return sitemaps


def test_index_of_a_provider_that_never_ends_is_a_503_and_the_provider_is_closed(
    make_client: MakeClient,
) -> None:
    provider = Forever()
    sitemaps = forever_sitemaps(provider)
    response = make_client(sitemaps).get("/sitemap-index.xml")
    assert response.status == 503
    assert "Retry-After" in response.headers
    assert sitemaps.stats.snapshot()[""]["provider_errors"] == 1  # "": the index
    assert provider.closed.is_set()
    # 50,001 one-URL files are one more than an index may list: measuring stops right there.
    assert provider.pulled <= MAX_SITEMAPS + 1024  # plus at most one batch read ahead


def test_a_page_past_the_index_limit_of_a_provider_that_never_ends_is_a_503(make_client: MakeClient) -> None:
    provider = Forever()
    response = make_client(forever_sitemaps(provider)).get("/sitemap-products-60000.xml")
    assert response.status == 503
    assert provider.closed.is_set()
    assert provider.pulled <= MAX_SITEMAPS + 1024


def test_measuring_past_the_index_limit_logs_which_bound_and_what_to_do(
    make_client: MakeClient, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="sitemap_middleware"):
        make_client(forever_sitemaps(Forever())).get("/sitemap-index.xml")
    messages = [record.getMessage() for record in caplog.records]
    assert any("more than 50,000 files" in message and "page_size" in message for message in messages)


def test_a_section_of_exactly_50000_files_is_measured_and_listed(make_client: MakeClient) -> None:
    # Followed by invalid entries: they make no file, so they do not count against the limit.
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.add_provider(
        "products", lambda: [f"/p/{n}" for n in range(MAX_SITEMAPS)] + [42, 43], page_size=1
    )
    index = locs(validate(make_client(sitemaps).get("/sitemap-index.xml").body))
    assert len(index) == MAX_SITEMAPS


# -- the deadline --------------------------------------------------------------------------------


class Clock:
    """A fake monotonic clock, advanced by the provider: time passes only as entries come."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def advance(self) -> None:
        self.now += 1.0


def engine_with(clock: Clock, measure_timeout: float | None) -> Engine:
    def on_skip(section: str, error: EntryError, raw: object) -> None:
        raise AssertionError(f"no entry is skipped here: {error}")

    return Engine(Site.parse(BASE), on_skip=on_skip, measure_timeout=measure_timeout, timer=clock)


def test_measuring_stops_at_its_deadline_while_the_provider_still_progresses() -> None:
    clock = Clock()
    provider = Forever(tick=clock.advance)  # one entry per second, steadily
    section = Section("products", Provider.wrap("products", provider), page_size=50_000)
    with pytest.raises(MeasureLimitError, match="measure_timeout=30 s") as raised:
        Measured().plan(engine_with(clock, measure_timeout=30), section, LoopRunner())
    assert isinstance(raised.value, ProviderError)  # the service answers it with a 503
    assert provider.closed.is_set()
    assert provider.pulled < 30 + 1024  # checked at least once per batch


def test_measuring_within_its_deadline_is_not_cut() -> None:
    clock = Clock()
    provider = Forever(ceiling=25, tick=clock.advance)
    section = Section("products", Provider.wrap("products", provider), page_size=10)
    plan = Measured().plan(engine_with(clock, measure_timeout=30), section, LoopRunner())
    assert [plan.start(n) for n in range(1, plan.pages + 1)] == [0, 10, 20]
