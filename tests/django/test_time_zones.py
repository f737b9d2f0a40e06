"""`sitemap_middleware.django` under ``USE_TZ = False``: Django's naive datetimes are local time.

With ``USE_TZ = False`` Django reads datetimes as naive values in ``TIME_ZONE``; the core
takes a naive lastmod as UTC, so the integration makes every datetime it reads from Django
aware in that zone first: a product updated at 14:00 in Berlin in summer was updated at
12:00 UTC, in its page and in the index. With ``USE_TZ = True`` nothing changes.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from django.db import connections
from django.test.utils import override_settings

from sitemap_middleware import Sitemaps, Url
from sitemap_middleware.django import from_sitemap, keyset

from ..conftest import BASE, empty_tables
from ..djangosite.config import configure
from ..xsd import lastmods, locs, validate

configure()

from django.contrib.sitemaps import Sitemap  # noqa: E402  (needs Django configured)

from ..djangosite.models import Article, IndexedStamped, Product  # noqa: E402

SUMMER = pytest.param(datetime(2024, 5, 1, 14, 0), "2024-05-01T12:00:00+00:00", id="summer-utc+2")
WINTER = pytest.param(datetime(2024, 1, 15, 14, 0), "2024-01-15T13:00:00+00:00", id="winter-utc+1")


@pytest.fixture
def berlin() -> Any:
    """A project with ``USE_TZ = False`` in Berlin: Django reads and writes naive local times."""
    with override_settings(USE_TZ=False, TIME_ZONE="Europe/Berlin"):
        yield


def served(client: Any, section: str) -> tuple[list[str | None], list[str | None]]:
    """The index lastmods of ``section``'s pages, and the lastmods of every URL on them, in order."""
    index = validate(client.get("/sitemap-index.xml").body)
    pages = [
        (loc, day)
        for loc, day in zip(locs(index), lastmods(index), strict=True)
        if loc.startswith(f"{BASE}/sitemap-{section}-")
    ]
    urls = [day for loc, _ in pages for day in lastmods(validate(client.get(loc.removeprefix(BASE)).body))]
    return [day for _, day in pages], urls


def add_product(alias: str, key: int, updated_at: datetime) -> None:
    Product.objects.using(alias).create(id=key, slug=f"p{key}", updated_at=updated_at)


class ProductSitemap(Sitemap):  # type: ignore[type-arg]
    """Products of one database by key, each lastmod from a method, as Django sites write it."""

    def __init__(self, alias: str) -> None:
        self.alias = alias

    def items(self) -> Any:
        return Product.objects.using(self.alias).order_by("pk")

    def lastmod(self, item: Product) -> datetime:
        return item.updated_at

    def location(self, item: Product) -> str:
        return item.get_absolute_url()


class IteratedSitemap(ProductSitemap):
    """The same products as a list: iterated, each page's newest read off its items."""

    def items(self) -> Any:
        try:
            return list(super().items())
        finally:  # as Django would at the end of a request: a worker thread's connection goes
            connections[self.alias].close_if_unusable_or_obsolete()


SOURCES = {
    "keyset": lambda alias: keyset(Product.objects.using(alias)),
    "keyset-entry": lambda alias: keyset(
        Product.objects.using(alias), entry=lambda p: Url(p.get_absolute_url(), lastmod=p.updated_at)
    ),
    "keyset-row": lambda alias: keyset(
        Product.objects.using(alias), entry=lambda p: (p.get_absolute_url(), p.updated_at)
    ),
    "keyset-mapping": lambda alias: keyset(
        Product.objects.using(alias), entry=lambda p: {"loc": p.get_absolute_url(), "lastmod": p.updated_at}
    ),
    "from_sitemap": lambda alias: from_sitemap(ProductSitemap(alias)),
    "from_sitemap-field": lambda alias: from_sitemap(ProductSitemap(alias), lastmod="updated_at"),
    "from_sitemap-iterated": lambda alias: from_sitemap(IteratedSitemap(alias)),
}


@pytest.mark.parametrize("source", list(SOURCES))
@pytest.mark.parametrize(("local", "utc"), [SUMMER, WINTER])
def test_a_local_lastmod_is_published_as_its_utc_instant(make_client, database, berlin, source, local, utc):
    add_product(database, 1, local - timedelta(days=3))
    add_product(database, 2, local)
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.add_provider("products", SOURCES[source](database), page_size=1)
    index, urls = served(make_client(sitemaps), "products")
    earlier = (datetime.fromisoformat(utc) - timedelta(days=3)).isoformat()
    assert urls == [earlier, utc]
    assert index == [earlier, utc]  # each page's newest, planned in the database or read off its items


def test_the_newest_first_walk_and_its_max_fallback_publish_utc_instants(make_client, database, berlin):
    # Lastmods rising with the key: the walk over the lastmod's index finds the last three pages
    # of 100 rows and stops at its limit (2 * 100 + 16 * 4 rows); the first page gets its MAX.
    start = datetime(2024, 5, 1, 14, 0)
    IndexedStamped.objects.using(database).bulk_create(
        IndexedStamped(id=key, updated_at=start + timedelta(minutes=key)) for key in range(1, 401)
    )
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.add_provider("stamped", keyset(IndexedStamped.objects.using(database)), page_size=100)
    index = validate(make_client(sitemaps).get("/sitemap-index.xml").body)
    newest = [
        datetime(2024, 5, 1, 12, 0, tzinfo=UTC) + timedelta(minutes=key) for key in (100, 200, 300, 400)
    ]
    assert lastmods(index) == [moment.isoformat() for moment in newest]


@pytest.mark.parametrize(
    ("local", "utc"),
    [
        # The clocks went back at 03:00: 02:30 was lived twice. The first, in summer time.
        pytest.param(datetime(2024, 10, 27, 2, 30), "2024-10-27T00:30:00+00:00", id="ambiguous"),
        # The clocks went forward at 02:00: no 02:30. Read with the offset before the gap.
        pytest.param(datetime(2024, 3, 31, 2, 30), "2024-03-31T01:30:00+00:00", id="non-existent"),
    ],
)
def test_a_local_time_the_clock_change_makes_ambiguous_or_skips_is_published_not_refused(
    make_client, django_sqlite, berlin, local, utc
):
    # SQLite keeps the local time as written; PostgreSQL would resolve it on writing, its own way.
    empty_tables("default")
    add_product("default", 1, local)
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.add_provider("products", keyset(Product.objects.all()))
    sitemaps.add_provider("sitemap", from_sitemap(ProductSitemap("default")))
    client = make_client(sitemaps)
    assert served(client, "products") == ([utc], [utc])
    assert served(client, "sitemap") == ([utc], [utc])


def test_a_date_lastmod_stays_a_date(make_client, database, berlin):
    Article.objects.using(database).create(slug="a1", updated=date(2024, 5, 1))
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.add_provider("articles", keyset(Article.objects.using(database), lastmod="updated"))
    assert served(make_client(sitemaps), "articles") == (["2024-05-01"], ["2024-05-01"])


@pytest.mark.parametrize("source", list(SOURCES))
def test_with_use_tz_the_output_is_unchanged(make_client, database, source):
    with override_settings(USE_TZ=True, TIME_ZONE="Europe/Berlin"):
        add_product(database, 1, datetime(2024, 5, 1, 12, 0, tzinfo=UTC))
        sitemaps = Sitemaps(base_url=BASE)
        sitemaps.add_provider("products", SOURCES[source](database))
        # A naive lastmod a provider makes up itself is still taken as UTC: the documented rule.
        sitemaps.add_provider("made-up", lambda: [Url("/made-up", lastmod=datetime(2024, 5, 1, 12, 0))])
        client = make_client(sitemaps)
        assert served(client, "products") == (["2024-05-01T12:00:00+00:00"], ["2024-05-01T12:00:00+00:00"])
        assert served(client, "made-up")[1] == ["2024-05-01T12:00:00+00:00"]
