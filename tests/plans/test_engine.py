"""Sections to documents, as served: page splitting by count and bytes, the index and its lastmods."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from datetime import UTC, date, datetime, timedelta, timezone

import pytest

from sitemap_middleware import Sitemaps, Url

from ..conftest import BASE, SitemapClient
from ..xsd import lastmods, locs, validate

MAX_BYTES = 52_428_800  # sitemaps.org: 50 MiB uncompressed per file

MakeClient = Callable[..., SitemapClient]


def index_locs(client: SitemapClient) -> list[str]:
    response = client.get("/sitemap-index.xml")
    assert response.status == 200
    return locs(validate(response.body))


def page_locs(client: SitemapClient, path: str) -> list[str]:
    response = client.get(path)
    assert response.status == 200
    return locs(validate(response.body))


def crawl(client: SitemapClient) -> list[list[str]]:
    """Every page the index lists, in order, as its locs; each document XSD-validated."""
    return [page_locs(client, loc.removeprefix(BASE)) for loc in index_locs(client)]


def instant(lastmod: str) -> datetime:
    """A W3C Datetime lastmod as an aware datetime; a date is its midnight in UTC."""
    if len(lastmod) == 10:
        day = date.fromisoformat(lastmod)
        return datetime(day.year, day.month, day.day, tzinfo=UTC)
    return datetime.fromisoformat(lastmod)


# -- splitting -------------------------------------------------------------------------------------


def test_120003_urls_make_three_pages_holding_exactly_the_providers_urls(make_client: MakeClient) -> None:
    expected = [f"{BASE}/p/{n}" for n in range(120_003)]
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.provider("products", page_size=50_000)(lambda: (f"/p/{n}" for n in range(120_003)))
    client = make_client(sitemaps)

    assert index_locs(client) == [f"{BASE}/sitemap-products-{n}.xml" for n in (1, 2, 3)]
    pages = crawl(client)
    assert [len(page) for page in pages] == [50_000, 50_000, 20_003]
    union = [loc for page in pages for loc in page]
    assert len(union) == len(set(union))
    assert set(union) == set(expected)


def test_pages_continue_where_the_previous_page_ended(make_client: MakeClient) -> None:
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.provider("pages", page_size=3)(lambda: [f"/p/{n}" for n in range(8)])
    pages = crawl(make_client(sitemaps))
    assert pages == [[f"{BASE}/p/{n}" for n in chunk] for chunk in ([0, 1, 2], [3, 4, 5], [6, 7])]


def test_invalid_entries_do_not_shorten_pages(make_client: MakeClient) -> None:
    bad = ["https://evil.example/", Url("/x", priority=5), 42, ""]
    raw: list[object] = []
    for n in range(10):
        raw += [f"/p/{n}", bad[n % len(bad)]]
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.provider("pages", page_size=3)(lambda: raw)
    pages = crawl(make_client(sitemaps))
    assert [len(page) for page in pages] == [3, 3, 3, 1]
    assert [loc for page in pages for loc in page] == [f"{BASE}/p/{n}" for n in range(10)]


def test_invalid_entries_after_the_last_full_page_make_no_extra_page(make_client: MakeClient) -> None:
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.provider("pages", page_size=2)(lambda: ["/p/0", "/p/1", "/p/2", "/p/3", 42, "ftp://x.example/"])
    client = make_client(sitemaps)
    assert index_locs(client) == [f"{BASE}/sitemap-pages-1.xml", f"{BASE}/sitemap-pages-2.xml"]
    assert client.get("/sitemap-pages-3.xml").status == 404


def test_section_page_size_overrides_the_default(make_client: MakeClient) -> None:
    sitemaps = Sitemaps(base_url=BASE, page_size=4)
    sitemaps.provider("pages")(lambda: [f"/p/{n}" for n in range(5)])
    sitemaps.provider("posts", page_size=2)(lambda: [f"/b/{n}" for n in range(5)])
    assert index_locs(make_client(sitemaps)) == [
        f"{BASE}/sitemap-pages-1.xml",
        f"{BASE}/sitemap-pages-2.xml",
        f"{BASE}/sitemap-posts-1.xml",
        f"{BASE}/sitemap-posts-2.xml",
        f"{BASE}/sitemap-posts-3.xml",
    ]


def test_pages_are_cut_before_50_mib(make_client: MakeClient) -> None:
    # ~2,050-byte <url> elements: about 25,500 fit in 50 MiB, far below the 50,000 count limit.
    expected = {f"{BASE}/p/{n:05d}/" + "x" * 2000 for n in range(25_600)}
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.provider("big")(lambda: sorted(loc.removeprefix(BASE) for loc in expected))
    client = make_client(sitemaps)

    paths = [loc.removeprefix(BASE) for loc in index_locs(client)]
    assert paths == ["/sitemap-big-1.xml", "/sitemap-big-2.xml"]
    seen: list[str] = []
    bodies = [client.get(path).body for path in paths]
    # Cut as late as possible: the first page has no room left for one more entry.
    assert MAX_BYTES - 2_100 < len(bodies[0]) <= MAX_BYTES
    for body in bodies:
        assert len(body) <= MAX_BYTES
        seen += locs(validate(body))
    assert len(seen) == len(expected)
    assert set(seen) == expected


# -- provider shapes -------------------------------------------------------------------------------

SHAPE_URLS = [f"/p/{n}" for n in range(7)]


def _generator() -> Iterator[str]:
    yield from SHAPE_URLS


async def _async_generator() -> AsyncIterator[str]:
    for url in SHAPE_URLS:
        yield url


async def _coroutine_of_list() -> list[str]:
    return list(SHAPE_URLS)


async def _coroutine_of_async_generator() -> AsyncIterator[str]:
    return _async_generator()


@pytest.mark.parametrize(
    "provider",
    [
        pytest.param(lambda: list(SHAPE_URLS), id="list"),
        pytest.param(lambda: tuple(SHAPE_URLS), id="tuple"),
        pytest.param(lambda: iter(SHAPE_URLS), id="iterator"),
        pytest.param(_generator, id="generator"),
        pytest.param(_async_generator, id="async-generator"),
        pytest.param(_coroutine_of_list, id="coroutine-of-list"),
        pytest.param(_coroutine_of_async_generator, id="coroutine-of-async-generator"),
    ],
)
def test_every_provider_shape_serves_the_same_pages(
    make_client: MakeClient, provider: Callable[[], object]
) -> None:
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.add_provider("pages", provider, page_size=3)  # type: ignore[arg-type]
    pages = crawl(make_client(sitemaps))
    assert pages == [[f"{BASE}{url}" for url in SHAPE_URLS[n : n + 3]] for n in (0, 3, 6)]


# -- the index -------------------------------------------------------------------------------------

MINUS_5 = timezone(timedelta(hours=-5))


def dated_sitemaps() -> Sitemaps:
    """Four pages of two: newest lastmods 04:00Z (written as 23:00-05:00), none, a date, a date."""
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.provider("news", page_size=2)(
        lambda: [
            Url("/n/1", lastmod=datetime(2024, 1, 2, 3, 0, tzinfo=UTC)),
            Url("/n/2", lastmod=datetime(2024, 1, 1, 23, 0, tzinfo=MINUS_5)),
            Url("/n/3"),
            "/n/4",
            Url("/n/5", lastmod="2024-02-01T00:00:00Z"),
            Url("/n/6", lastmod=date(2024, 3, 1)),
            Url("/n/7", lastmod=date(2020, 1, 1)),
            Url("https://evil.example/", lastmod=date(2030, 1, 1)),  # skipped: its lastmod is not the page's
            Url("/n/8"),
        ]
    )
    return sitemaps


def test_index_lastmod_is_the_newest_lastmod_of_each_page(make_client: MakeClient) -> None:
    response = make_client(dated_sitemaps()).get("/sitemap-index.xml")
    assert lastmods(validate(response.body)) == [
        "2024-01-02T04:00:00+00:00",
        None,
        "2024-03-01",
        "2020-01-01",
    ]


def test_index_lastmod_agrees_with_the_lastmods_in_each_page(make_client: MakeClient) -> None:
    client = make_client(dated_sitemaps())
    index = validate(client.get("/sitemap-index.xml").body)
    for loc, listed in zip(locs(index), lastmods(index), strict=True):
        page = [m for m in lastmods(validate(client.get(loc.removeprefix(BASE)).body)) if m is not None]
        if not page:
            assert listed is None
        else:
            assert listed is not None
            assert instant(listed) == max(map(instant, page))


def test_index_lastmod_is_omitted_when_no_url_of_the_page_has_one(make_client: MakeClient) -> None:
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.provider("pages")(lambda: ["/", Url("/about")])
    response = make_client(sitemaps).get("/sitemap-index.xml")
    assert lastmods(validate(response.body)) == [None]


def test_index_lists_sections_in_registration_order(make_client: MakeClient) -> None:
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.provider("zebra")(lambda: ["/z"])
    sitemaps.provider("alpha")(lambda: ["/a"])
    assert index_locs(make_client(sitemaps)) == [f"{BASE}/sitemap-zebra-1.xml", f"{BASE}/sitemap-alpha-1.xml"]


def test_empty_section_is_not_listed_in_the_index(make_client: MakeClient) -> None:
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.provider("empty")(list)
    sitemaps.provider("pages")(lambda: ["/"])
    assert index_locs(make_client(sitemaps)) == [f"{BASE}/sitemap-pages-1.xml"]


def test_section_of_only_invalid_entries_is_not_listed_in_the_index(make_client: MakeClient) -> None:
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.provider("junk")(lambda: ["https://evil.example/", 42])
    sitemaps.provider("pages")(lambda: ["/"])
    assert index_locs(make_client(sitemaps)) == [f"{BASE}/sitemap-pages-1.xml"]


def test_empty_section_has_no_first_page(make_client: MakeClient) -> None:
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.provider("empty")(list)
    assert make_client(sitemaps).get("/sitemap-empty-1.xml").status == 404


@pytest.mark.parametrize(
    "providers",
    [
        pytest.param({"a": list, "b": tuple}, id="empty-sections"),
        pytest.param({"a": lambda: ["https://evil.example/"]}, id="only-invalid-entries"),
        pytest.param({}, id="no-sections"),
    ],
)
def test_index_is_404_when_no_section_has_a_url(
    make_client: MakeClient, providers: dict[str, Callable[[], object]]
) -> None:
    sitemaps = Sitemaps(base_url=BASE)
    for name, provider in providers.items():
        sitemaps.add_provider(name, provider)  # type: ignore[arg-type]
    client = make_client(sitemaps)
    assert client.get("/sitemap-index.xml").status == 404
    assert client.get("/sitemap.xml").status == 404
