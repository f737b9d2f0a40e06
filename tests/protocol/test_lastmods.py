"""Published lastmods are plausible: none later than the clock, none before the web.

A lastmod later than ``Sitemaps(clock=...)`` by more than 10 minutes (a date: than the day
it may already be somewhere, UTC+14), or earlier than 1991, is not published; its URL is,
without it, counted per section and reason and logged once. The index's lastmod is the
newest *published* lastmod of each page; ``strict=True`` refuses instead.
"""

from __future__ import annotations

import logging
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from sitemap_middleware import EntryError, Sitemaps, Url
from sitemap_middleware.sources import PageStart

from ..conftest import BASE, NOW
from ..xsd import lastmods, locs, validate

CLOCK = datetime.fromtimestamp(NOW, UTC)
PAGE = "/sitemap-products-1.xml"


def served(
    make_client, entries: list[Url], **options: object
) -> tuple[Sitemaps, dict[str, str | None], list]:
    """The page's loc -> lastmod as served, and the index's lastmods."""
    sitemaps = Sitemaps(base_url=BASE, clock=lambda: NOW, **options)  # type: ignore[arg-type]
    sitemaps.add_provider("products", lambda: entries)
    client = make_client(sitemaps)
    page = validate(client.get(PAGE).body)
    index = validate(client.get("/sitemap-index.xml").body)
    return sitemaps, dict(zip(locs(page), lastmods(page), strict=True)), lastmods(index)


def counters(sitemaps: Sitemaps) -> dict[str, int]:
    return sitemaps.stats.snapshot().get("products", {})


def test_a_future_or_zero_lastmod_is_not_published_its_url_is_and_the_index_is_not_in_the_future(
    make_client,
):
    yesterday = CLOCK - timedelta(days=1)
    sitemaps, page, index = served(
        make_client,
        [
            Url("/future", lastmod=datetime(2031, 1, 1)),  # five years ahead: would pin the index there
            Url("/true", lastmod=yesterday),
            Url("/zero", lastmod="1970-01-01"),  # the classic zero timestamp
            Url("/plain"),
        ],
    )
    assert page == {
        f"{BASE}/future": None,
        f"{BASE}/true": yesterday.replace(microsecond=0).isoformat(),
        f"{BASE}/zero": None,
        f"{BASE}/plain": None,
    }
    assert index == [yesterday.replace(microsecond=0).isoformat()]  # the newest published one
    assert counters(sitemaps)["lastmod_future"] == 1
    assert counters(sitemaps)["lastmod_implausible"] == 1
    assert not any(name.startswith("skipped:") for name in counters(sitemaps))


@pytest.mark.parametrize(
    ("lastmod", "published"),
    [
        pytest.param(CLOCK + timedelta(minutes=9), True, id="datetime-within-the-skew"),
        pytest.param(CLOCK + timedelta(minutes=11), False, id="datetime-past-the-skew"),
        pytest.param((CLOCK + timedelta(hours=14)).date(), True, id="date-already-begun-somewhere"),
        pytest.param((CLOCK + timedelta(days=2)).date(), False, id="date-begun-nowhere"),
        pytest.param(date(1991, 1, 1), True, id="the-year-of-the-first-web-page"),
        pytest.param(datetime(1990, 12, 31, 23, 59, 59), False, id="the-second-before"),
        pytest.param("2100-01-01T00:00:00+14:00", False, id="a-string-in-the-future"),
        pytest.param(
            (CLOCK + timedelta(hours=2)).astimezone(ZoneInfo("Asia/Tokyo")),
            False,
            id="an-aware-datetime-two-hours-ahead",
        ),
    ],
)
def test_the_edges_of_what_is_believed(make_client, lastmod, published):
    sitemaps, page, _ = served(make_client, [Url("/p", lastmod=lastmod)])
    assert (page[f"{BASE}/p"] is not None) == published
    faults = counters(sitemaps).get("lastmod_future", 0) + counters(sitemaps).get("lastmod_implausible", 0)
    assert faults == (0 if published else 1)


def test_a_lastmod_fault_is_logged_once_per_section_and_reason_not_per_url(make_client, caplog):
    entries = [Url(f"/f/{n}", lastmod=datetime(2031, 1, 1)) for n in range(100)]
    entries += [Url(f"/z/{n}", lastmod=date(1970, 1, 1)) for n in range(50)]
    with caplog.at_level(logging.WARNING, logger="sitemap_middleware"):
        sitemaps, page, _ = served(make_client, entries)
    assert len(page) == 150 and set(page.values()) == {None}
    assert counters(sitemaps)["lastmod_future"] == 100
    assert counters(sitemaps)["lastmod_implausible"] == 50
    reasons = [record.sitemap_reason for record in caplog.records if hasattr(record, "sitemap_reason")]
    assert sorted(reasons) == ["lastmod_future", "lastmod_implausible"]


@pytest.mark.parametrize("path", ["/sitemap-index.xml", PAGE])
def test_strict_raises_on_a_lastmod_that_cannot_be_true(make_client, path):
    sitemaps = Sitemaps(base_url=BASE, clock=lambda: NOW, strict=True)
    sitemaps.add_provider("products", lambda: [Url("/p", lastmod=datetime(2031, 1, 1))])
    with pytest.raises(EntryError, match="lastmod future"):
        make_client(sitemaps).get(path)


def test_a_keyed_page_whose_newest_lastmod_is_in_the_future_gets_none_in_the_index(make_client):
    class Rows:
        def pages(self, page_size: int) -> list[PageStart]:
            return [PageStart(1, datetime(2031, 1, 1, tzinfo=UTC)), PageStart(3, CLOCK - timedelta(hours=1))]

        def entries(self, first: object, limit: int, end: object = None) -> list[Url]:
            start = 1 if first is None else int(first)  # type: ignore[call-overload]
            stop = 5 if end is None else int(end)  # type: ignore[call-overload]
            return [Url(f"/k/{key}") for key in range(start, stop)][:limit]

    sitemaps = Sitemaps(base_url=BASE, clock=lambda: NOW)
    sitemaps.add_provider("products", Rows(), page_size=2)
    index = validate(make_client(sitemaps).get("/sitemap-index.xml").body)
    assert lastmods(index) == [None, (CLOCK - timedelta(hours=1)).replace(microsecond=0).isoformat()]
    assert counters(sitemaps)["lastmod_future"] == 1
