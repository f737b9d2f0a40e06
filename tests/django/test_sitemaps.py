"""`sitemap_middleware.django.from_sitemap`: Django's own ``Sitemap`` classes, listed as Django lists them.

Each class of `tests.djangosite.sitemaps` is served twice: by Django's own views
(``django.contrib.sitemaps.views.index`` and ``sitemap``, through Django's test client,
with ``RequestSite``) and by us on both adapters. The URLs (compared by path: Django takes
the request's host, we take ``base_url``) and lastmod dates must be the same; ours keep the
time of day that Django's template drops.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import pytest
from django.db import connections
from django.test import Client as DjangoClient
from django.test.utils import CaptureQueriesContext
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lxml import etree

from sitemap_middleware import ConfigurationError, Sitemaps
from sitemap_middleware.django import from_sitemap

from ..conftest import BASE, empty_tables
from ..djangosite.config import configure
from ..xsd import NS, lastmods, locs, validate

configure()

from django.contrib.sitemaps import Sitemap  # noqa: E402  (needs Django configured)

from ..djangosite.models import Article, Product  # noqa: E402
from ..djangosite.sitemaps import SITEMAPS, ArticleSitemap, ProductSitemap, RecentSitemap, StaticSitemap  # noqa: E402

EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
KEYS = [2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233]
UNPUBLISHED = {8, 89}
XHTML = "{http://www.w3.org/1999/xhtml}link"
Listing = set[tuple[str, str | None]]  # (path, lastmod date)


@pytest.fixture
def shop(django_sqlite: None) -> None:
    """Products with gaps in their keys, some unpublished, and articles; in the default database."""
    empty_tables("default")
    Product.objects.bulk_create(
        Product(id=k, slug=f"p{k}", updated_at=updated(k), published=k not in UNPUBLISHED) for k in KEYS
    )
    Article.objects.bulk_create(Article(slug=f"a{n}", updated=date(2026, 2, 1 + n * 3 % 7)) for n in range(7))


def updated(key: int) -> datetime:
    return EPOCH + timedelta(days=(key * 7) % 11, hours=key % 24, minutes=key % 60)


def ours(client: Any, section: str) -> tuple[list[str | None], Listing]:
    """Our index lastmods for ``section``'s pages, and the (path, lastmod date) of every URL."""
    index = validate(client.get("/sitemap-index.xml").body)
    pages = [
        (loc, lastmod)
        for loc, lastmod in zip(locs(index), lastmods(index), strict=True)
        if loc.startswith(f"{BASE}/sitemap-{section}-")
    ]
    listing: Listing = set()
    for loc, _ in pages:
        page = validate(client.get(urlsplit(loc).path).body)
        listing |= {
            (urlsplit(url).path, day and day[:10])
            for url, day in zip(locs(page), lastmods(page), strict=True)
        }
    return [lastmod for _, lastmod in pages], listing


def djangos(section: str) -> tuple[list[str | None], Listing, list[etree._Element]]:
    """Django's index lastmods for ``section``'s pages, (path, lastmod) of every URL, and the URLs."""
    client = DjangoClient()
    index = etree.fromstring(client.get("/django/sitemap.xml").content)
    pages = [
        (el.findtext("sm:loc", namespaces=NS), el.findtext("sm:lastmod", namespaces=NS))
        for el in index.iterfind("sm:sitemap", NS)
    ]
    pages = [
        (loc, lastmod) for loc, lastmod in pages if urlsplit(loc).path == f"/django/sitemap-{section}.xml"
    ]
    listing: Listing = set()
    urls: list[etree._Element] = []
    for loc, _ in pages:
        response = client.get(loc.removeprefix("http://testserver"))
        assert response.status_code == 200
        for url in etree.fromstring(response.content).iterfind("sm:url", NS):
            urls.append(url)
            listing.add(
                (
                    urlsplit(url.findtext("sm:loc", namespaces=NS)).path,
                    url.findtext("sm:lastmod", namespaces=NS),
                )
            )
    return [lastmod for _, lastmod in pages], listing, urls


def serve(**sections: Any) -> Sitemaps:
    sitemaps = Sitemaps(base_url=BASE)
    for name, sitemap in sections.items():
        sitemaps.add_provider(name, from_sitemap(sitemap))
    return sitemaps


@pytest.mark.parametrize("section", list(SITEMAPS))
def test_every_section_lists_the_urls_and_lastmods_of_djangos_own_view(make_client, shop, section):
    _, listing = ours(make_client(serve(**{section: SITEMAPS[section]})), section)
    _, django_listing, _ = djangos(section)
    assert listing
    assert listing == django_listing


@pytest.mark.parametrize("section", ["products", "by-slug", "recent", "static", "generic"])
def test_the_index_has_djangos_pages_and_each_pages_newest_lastmod(make_client, shop, section):
    page_lastmods, _ = ours(make_client(serve(**{section: SITEMAPS[section]})), section)
    django_lastmods, _, _ = djangos(section)
    assert len(page_lastmods) == len(django_lastmods)
    # Django gives every page the section's newest; ours is each page's own, the newest of them the same.
    newest = {datetime.fromisoformat(d) for d in django_lastmods if d}
    assert {max((datetime.fromisoformat(d) for d in page_lastmods if d), default=None)} == (newest or {None})


def test_lastmods_keep_the_time_of_day(make_client, shop):
    client = make_client(serve(products=ProductSitemap))
    page = validate(client.get("/sitemap-products-1.xml").body)
    assert lastmods(page) == [updated(k).isoformat() for k in (2, 3, 5, 13)]


def test_i18n_lists_each_item_in_each_language_at_its_prefixed_location(make_client, shop):
    client = make_client(serve(articles=ArticleSitemap))
    _, listing = ours(client, "articles")
    assert {path for path, _ in listing} == {f"/{lang}/a/a{n}/" for n in range(7) for lang in ("en", "fr")}


def groups(urls: list[etree._Element]) -> set[tuple[str, frozenset[tuple[str, str]]]]:
    """Each URL's path and its hreflang group, as (hreflang, path) pairs."""
    return {
        (
            urlsplit(url.findtext("sm:loc", namespaces=NS)).path,
            frozenset((link.get("hreflang"), urlsplit(link.get("href")).path) for link in url.iter(XHTML)),
        )
        for url in urls
    }


def test_i18n_alternates_are_the_hreflang_groups_of_djangos_own_view(make_client, shop):
    client = make_client(serve(articles=ArticleSitemap))
    index = validate(client.get("/sitemap-index.xml").body)
    ours_urls = [url for loc in locs(index) for url in validate(client.get(urlsplit(loc).path).body)]
    _, _, django_urls = djangos("articles")
    assert groups(ours_urls) == groups(django_urls)
    assert any(("x-default", "/a/a0/") in group for _, group in groups(ours_urls))


def test_limit_is_the_most_urls_on_a_page_and_a_smaller_page_size_wins(make_client, shop):
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.add_provider("products", from_sitemap(ProductSitemap))  # limit = 4
    sitemaps.add_provider("small", from_sitemap(ProductSitemap), page_size=2)
    sitemaps.add_provider("iterated", from_sitemap(RecentSitemap), page_size=2)  # positions
    sitemaps.add_provider("articles", from_sitemap(ArticleSitemap))  # limit 5, two languages: 2 items a page
    client = make_client(sitemaps)

    def sizes(section: str) -> list[int]:
        index = locs(validate(client.get("/sitemap-index.xml").body))
        pages = [loc for loc in index if loc.startswith(f"{BASE}/sitemap-{section}-")]
        return [len(locs(validate(client.get(urlsplit(loc).path).body))) for loc in pages]

    assert sizes("products") == [4, 4, 1]
    assert sizes("small") == [2, 2, 2, 2, 1]
    assert sizes("iterated") == [2, 2, 2, 2, 2, 1]  # every product, unpublished too
    assert sizes("articles") == [4, 4, 4, 2]


@pytest.mark.parametrize(
    ("section", "read"),
    [
        pytest.param("products", "seek", id="ordered-by-pk"),
        pytest.param("by-slug", "seek", id="ordered-by-a-unique-field-descending"),
        pytest.param("articles", "seek", id="i18n-ordered-by-uuid-pk"),
        pytest.param("recent", "offset", id="ordered-by-a-field-that-is-not-unique"),
        pytest.param("chosen", "all", id="languages-chosen-per-item"),  # Django's paginator reads all too
    ],
)
def test_a_queryset_ordered_by_a_unique_key_is_read_by_key_else_like_djangos_paginator(shop, section, read):
    source = from_sitemap(SITEMAPS[section])
    second = source.pages(4)[1]
    with CaptureQueriesContext(connections["default"]) as queries:
        assert list(source.entries(second.first, 4))
    kinds = set()
    for query in queries.captured_queries:
        sql = query["sql"].upper()
        kinds.add("offset" if "OFFSET" in sql else "seek" if "LIMIT" in sql and ">" in sql else "all")
    assert kinds == {read}


def test_a_named_lastmod_field_plans_in_one_query_instead_of_calling_lastmod_on_every_item(shop):
    with CaptureQueriesContext(connections["default"]) as named:
        planned = from_sitemap(ProductSitemap, lastmod="updated_at", chunk_size=2).pages(4)
    with CaptureQueriesContext(connections["default"]) as called:
        measured = from_sitemap(ProductSitemap, chunk_size=2).pages(4)
    assert len(named) == 1
    assert len(called) == 5  # 9 rows read two at a time
    assert [(p.first, p.lastmod) for p in planned] == [
        (p.first, datetime.fromisoformat(p.lastmod)) for p in measured
    ]


class ConstantSitemap(Sitemap):
    lastmod = datetime(2026, 3, 1, 12, 30, tzinfo=UTC)
    changefreq = ""
    priority = "0.3"

    def items(self) -> list[str]:
        return ["about", "contact"]

    def location(self, item: str) -> str:
        return f"/{item}/"


def test_attributes_are_read_as_django_reads_them(make_client, django_sqlite):
    client = make_client(serve(pages=ConstantSitemap(), static=StaticSitemap()))
    index = validate(client.get("/sitemap-index.xml").body)
    assert lastmods(index) == ["2026-03-01T12:30:00+00:00", None]
    page = validate(client.get("/sitemap-pages-1.xml").body)
    assert [url.findtext("sm:priority", namespaces=NS) for url in page] == ["0.3", "0.3"]
    assert page.find("sm:url/sm:changefreq", NS) is None  # "" is no changefreq, as in Django's template


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    keys=st.sets(st.integers(1, 500), max_size=25),
    hidden=st.sets(st.integers(1, 500)),
    limit=st.integers(1, 6),
    page_size=st.integers(1, 8),
)
def test_any_catalogue_lists_what_django_lists_in_pages_no_larger_than_limit(
    django_sqlite, keys, hidden, limit, page_size
):
    empty_tables("default")
    Product.objects.bulk_create(
        Product(id=k, slug=f"p{k}", updated_at=updated(k), published=k not in hidden) for k in keys
    )
    sitemap = type("Limited", (ProductSitemap,), {"limit": limit})()
    source = from_sitemap(sitemap)
    pages = [list(source.entries(page.first, page_size)) for page in source.pages(page_size)]
    assert all(0 < len(page) <= min(limit, page_size) for page in pages)
    listed = [(url.loc, url.lastmod) for page in pages for url in page]
    site = type("Site", (), {"domain": "shop.example"})()
    django_listed = [
        (url["location"].removeprefix("https://shop.example"), url["lastmod"])
        for number in sitemap.paginator.page_range
        for url in sitemap.get_urls(page=number, site=site, protocol="https")
    ]
    assert listed == django_listed  # ordered by pk, as Django's pages are: the same order


class StampedSitemap(Sitemap):  # a QuerySet with one lastmod for every item: no row is read to plan
    lastmod = datetime(2026, 4, 1, 8, 0, tzinfo=UTC)
    i18n = True  # in every language of settings.LANGUAGES

    def items(self) -> Any:
        return Product.objects.filter(published=True).order_by("pk")


def test_a_lastmod_attribute_and_settings_languages_are_used_without_reading_rows(make_client, shop):
    with CaptureQueriesContext(connections["default"]) as planned:
        pages = from_sitemap(StampedSitemap).pages(6)  # two items a page: three languages each
    assert len(planned) == 1
    assert [page.lastmod for page in pages] == [StampedSitemap.lastmod] * 5
    _, listing = ours(make_client(serve(stamped=StampedSitemap)), "stamped")
    published = [k for k in KEYS if k not in UNPUBLISHED]
    assert listing == {(f"/p/p{k}/", "2026-04-01") for k in published}  # not prefixed: not in i18n_patterns
    assert len(list(from_sitemap(StampedSitemap).entries(pages[0].first, 6))) == 6


class ShuffledSitemap(ProductSitemap):  # ordered by something that is not a column: iterated
    def items(self) -> Any:
        return Product.objects.filter(published=True).order_by("?")


def test_an_ordering_that_is_not_a_unique_column_is_iterated(shop):
    source = from_sitemap(ShuffledSitemap)
    assert [page.first for page in source.pages(4)] == [0, 4, 8]  # positions, not keys


def test_a_page_too_small_for_an_items_languages_is_a_503(make_client, shop):
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.add_provider("articles", from_sitemap(ArticleSitemap), page_size=1)  # two languages an item
    assert make_client(sitemaps).get("/sitemap-index.xml").status == 503


@pytest.mark.parametrize(
    ("build", "message"),
    [
        pytest.param(lambda: from_sitemap(object()), "django Sitemap", id="not-a-sitemap"),  # type: ignore[arg-type]
        pytest.param(lambda: from_sitemap(ProductSitemap, chunk_size=0), "chunk_size", id="chunk-size"),
        pytest.param(
            lambda: from_sitemap(type("NoLimit", (ProductSitemap,), {"limit": 0})), "limit", id="limit"
        ),
    ],
)
def test_a_misconfigured_from_sitemap_is_refused_at_construction(django_sqlite, build, message):
    with pytest.raises(ConfigurationError, match=message):
        build()
