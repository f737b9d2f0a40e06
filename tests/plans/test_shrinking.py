"""No sudden shrink is published: a section that loses most of its URLs at once keeps its last pages.

End to end on both adapters: a section of 1,000 URLs whose provider suddenly yields 10 keeps
being served as it was (the same index, the same pages), counted ``shrink_refused`` and logged
once, until ``sitemaps.accept_shrink(section)`` or the section grows back; a drop within the
bound (``max_shrink``) is published at once; with a change log, nothing is recorded meanwhile.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sitemap_middleware import ConfigurationError, Sitemaps
from sitemap_middleware.changes import ChangeLog

from ..conftest import Catalogue, SitemapClient, build, counter
from ..xsd import locs, parse

MakeClient = Callable[..., SitemapClient]
PAGES = ["/sitemap-index.xml", *(f"/sitemap-products-{n}.xml" for n in range(1, 11))]


def shop(count: int = 1_000, **options: Any) -> tuple[Sitemaps, Catalogue]:
    return build(Catalogue(count), page_size=100, **options)


def served(client: SitemapClient, paths: list[str] = PAGES) -> dict[str, tuple[int, bytes]]:
    answers = {}
    for path in paths:
        response = client.get(path)
        answers[path] = (response.status, response.body)
    return answers


def shrink_to(catalogue: Catalogue, count: int) -> None:
    catalogue.paths = catalogue.paths[:count]


def test_a_sudden_shrink_keeps_serving_the_last_published_index_and_pages(
    make_client: MakeClient, caplog: pytest.LogCaptureFixture
) -> None:
    sitemaps, catalogue = shop()
    client = make_client(sitemaps)
    before = served(client)
    assert {status for status, _ in before.values()} == {200}
    shrink_to(catalogue, 10)
    sitemaps.invalidate("products")
    with caplog.at_level(logging.WARNING, logger="sitemap_middleware"):
        assert served(client) == before
        assert served(client) == before  # a second round: still the same, logged once
    assert counter(sitemaps, "products", "shrink_refused") == 1
    refusals = [r.getMessage() for r in caplog.records if "shrank" in r.getMessage()]
    assert len(refusals) == 1
    assert "1,000" in refusals[0] and "10 " in refusals[0]


def test_accept_shrink_publishes_the_shrunken_section(make_client: MakeClient) -> None:
    sitemaps, catalogue = shop()
    client = make_client(sitemaps)
    served(client)
    shrink_to(catalogue, 10)
    sitemaps.invalidate("products")
    assert len(locs(parse(client.get("/sitemap-index.xml").body))) == 10
    sitemaps.accept_shrink("products")
    assert len(locs(parse(client.get("/sitemap-index.xml").body))) == 1
    assert len(locs(parse(client.get("/sitemap-products-1.xml").body))) == 10
    assert client.get("/sitemap-products-2.xml").status == 404


def test_growing_back_clears_a_refusal(make_client: MakeClient) -> None:
    sitemaps, catalogue = shop()
    client = make_client(sitemaps)
    served(client)
    everything = list(catalogue.paths)
    shrink_to(catalogue, 10)
    sitemaps.invalidate("products")
    client.get("/sitemap-index.xml")
    catalogue.paths = [*everything[:-100], "/p/new"]  # 901 URLs: grown back, and changed
    sitemaps.invalidate("products")
    assert len(locs(parse(client.get("/sitemap-index.xml").body))) == 10
    assert f"{'https://shop.example'}/p/new" in locs(parse(client.get("/sitemap-products-10.xml").body))
    # Cleared: the next sudden shrink is a refusal of its own.
    shrink_to(catalogue, 5)
    sitemaps.invalidate("products")
    assert len(locs(parse(client.get("/sitemap-index.xml").body))) == 10
    assert counter(sitemaps, "products", "shrink_refused") == 2


@pytest.mark.parametrize(
    ("max_shrink", "left", "pages"),
    [
        pytest.param(None, 0, 0, id="off-drop-to-nothing"),
        pytest.param(None, 1, 1, id="off"),
        pytest.param(0.9, 100, 1, id="default-at-the-bound"),
        pytest.param(0.5, 500, 5, id="half-at-the-bound"),
        pytest.param(0.5, 499, 10, id="half-past-the-bound"),
    ],
)
def test_a_drop_within_the_bound_is_published_at_once(
    make_client: MakeClient, max_shrink: float | None, left: int, pages: int
) -> None:
    sitemaps, catalogue = shop(max_shrink=max_shrink)
    client = make_client(sitemaps)
    served(client)
    shrink_to(catalogue, left)
    sitemaps.invalidate("products")
    index = client.get("/sitemap-index.xml")
    listed = len(locs(parse(index.body))) if index.status == 200 else 0
    assert listed == pages
    refused = pages == 10
    assert counter(sitemaps, "products", "shrink_refused") == int(refused)


def test_the_default_refuses_a_section_that_drops_to_nothing(make_client: MakeClient) -> None:
    sitemaps, catalogue = shop()
    client = make_client(sitemaps)
    before = served(client)
    shrink_to(catalogue, 0)
    sitemaps.invalidate()
    assert served(client, PAGES[:1]) == {PAGES[0]: before[PAGES[0]]}
    assert counter(sitemaps, "products", "shrink_refused") == 1


def test_a_refused_page_nobody_kept_is_a_503_never_the_shrunken_page(make_client: MakeClient) -> None:
    sitemaps, catalogue = shop(cache=None)  # nothing is stored: no page is kept
    client = make_client(sitemaps)
    index = client.get("/sitemap-index.xml").body
    shrink_to(catalogue, 10)
    assert client.get("/sitemap-index.xml").body == index  # made from the last published plan
    assert client.get("/sitemap-products-1.xml").status == 503
    assert client.get("/sitemap-products-2.xml").status == 503


def test_with_a_change_log_a_refused_pass_records_no_removals(
    make_client: MakeClient, tmp_path: Path
) -> None:
    log = ChangeLog.sqlite(tmp_path / "changes.sqlite3")
    sitemaps, catalogue = shop(changes=log)
    client = make_client(sitemaps)
    sitemaps.refresh()
    shrink_to(catalogue, 10)
    sitemaps.refresh()  # every page answered from the last published ones
    served(client)
    assert log.since() == []
    assert counter(sitemaps, "products", "changes_removed") == 0
    assert counter(sitemaps, "products", "shrink_refused") == 1


def test_a_fresh_process_knows_the_last_published_size_from_the_change_log(
    make_client: MakeClient, tmp_path: Path
) -> None:
    path = tmp_path / "changes.sqlite3"
    first, catalogue = shop(changes=ChangeLog.sqlite(path))
    first.refresh()
    shrink_to(catalogue, 10)
    fresh, _ = build(catalogue, page_size=100, changes=ChangeLog.sqlite(path))
    client = make_client(fresh)
    # Nothing of the last published section is kept here: 503, never the shrunken one.
    assert client.get("/sitemap-index.xml").status == 503
    assert client.get("/sitemap-products-1.xml").status == 503
    assert counter(fresh, "products", "shrink_refused") == 1
    fresh.accept_shrink("products")
    assert len(locs(parse(client.get("/sitemap-products-1.xml").body))) == 10


@given(st.one_of(st.floats(allow_nan=True), st.integers(), st.booleans(), st.text(max_size=3)))
def test_max_shrink_outside_zero_to_one_is_a_configuration_error(value: object) -> None:
    valid = isinstance(value, int | float) and not isinstance(value, bool) and 0 < value <= 1
    if valid:
        assert Sitemaps(base_url="https://shop.example", max_shrink=value)  # type: ignore[arg-type]
    else:
        with pytest.raises(ConfigurationError):
            Sitemaps(base_url="https://shop.example", max_shrink=value)  # type: ignore[arg-type]


def test_accept_shrink_of_an_unknown_section_is_a_configuration_error() -> None:
    sitemaps, _ = shop()
    with pytest.raises(ConfigurationError):
        sitemaps.accept_shrink("nope")
