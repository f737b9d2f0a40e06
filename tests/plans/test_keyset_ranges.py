"""A keyset page is its whole key range, so rows inserted or deleted after the plan lose no URL.

The plan says where each page starts; page n is read from its first key up to page n+1's
(page 1: from below its first key; the last page: from its first key on), never cut at
``page_size``, so a row inserted inside (or below, or past) the planned ranges shows on its
page at once, and on that page only. A range that grew past what one file holds is served
up to the file's limits and its section planned again at the next request. Deleted rows
never make a range wrong: a page whose rows are all gone is a 404 (logged and counted as
``empty_pages``), and the other pages keep their ranges, so a crawl that started from an
index finds every row that still exists. Both keysets (and ``from_sitemap`` over a QuerySet
ordered by its key), SQLite and PostgreSQL, both adapters.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from django.contrib.sitemaps import Sitemap
from sqlalchemy import Column, Integer, MetaData, Table, create_engine, delete, insert, select

from sitemap_middleware import Sitemaps
from sitemap_middleware.django import from_sitemap
from sitemap_middleware.django import keyset as django_keyset
from sitemap_middleware.sqlalchemy import keyset as sqlalchemy_keyset

from ..conftest import BASE, counter
from ..djangosite.config import configure
from ..postgres_server import create_database
from ..xsd import locs, validate

configure()

from ..djangosite.models import Stamped  # noqa: E402  (needs Django configured)

PLANNED = [10, 20, 30, 40, 50, 60, 70, 80, 90, 100]  # pages of 4: from 10, 50 and 90
PAGE = 4
PADDING = "x" * 150  # a URL of about 200 bytes: four fit in a file of 1,024 bytes, five do not

Entry = Callable[[int], str]


def path(key: int) -> str:
    return f"/s/{key:04d}/{PADDING}"


@dataclass
class Rows:
    """One provider over one database: its source, and a way to add rows behind its back."""

    source: Callable[[], Any]
    insert: Callable[[list[int]], None]
    delete: Callable[[list[int]], None]


ranged = Table("ranged", MetaData(), Column("id", Integer, primary_key=True, autoincrement=False))


def sqlalchemy_rows(engine: Any) -> Rows:
    ranged.metadata.create_all(engine)
    with engine.begin() as connection:
        connection.execute(delete(ranged))

    def add(keys: list[int]) -> None:
        with engine.begin() as connection:
            connection.execute(insert(ranged), [{"id": key} for key in keys])

    def remove(keys: list[int]) -> None:
        with engine.begin() as connection:
            connection.execute(delete(ranged).where(ranged.c.id.in_(keys)))

    def source() -> Any:
        return sqlalchemy_keyset(engine, select(ranged.c.id), key=ranged.c.id, entry=lambda row: path(row.id))

    return Rows(source, add, remove)


class StampedSitemap(Sitemap):  # type: ignore[type-arg]
    """A Django ``Sitemap`` over a QuerySet ordered by its key: `from_sitemap` pages it by key."""

    def __init__(self, alias: str) -> None:
        self.alias = alias

    def items(self) -> Any:
        return Stamped.objects.using(self.alias).order_by("pk")

    def location(self, item: Stamped) -> str:
        return path(item.pk)


@pytest.fixture(scope="module")
def postgres_ranged(postgres_url: str) -> str:
    return create_database(postgres_url, "ranged")


@pytest.fixture(
    params=[
        "sqlalchemy-sqlite",
        "sqlalchemy-postgresql",
        "django-sqlite",
        "django-postgresql",
        "from_sitemap-sqlite",
    ]
)
def rows(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[Rows]:
    provider, database = request.param.split("-")
    if provider == "sqlalchemy":
        url = f"sqlite:///{tmp_path / 'ranged.sqlite3'}"
        if database == "postgresql":
            url = request.getfixturevalue("postgres_ranged")
        engine = create_engine(url)
        yield sqlalchemy_rows(engine)
        engine.dispose()
        return
    alias = request.getfixturevalue("database_" + database)

    def add(keys: list[int]) -> None:
        Stamped.objects.using(alias).bulk_create(Stamped(id=key) for key in keys)

    def remove(keys: list[int]) -> None:
        Stamped.objects.using(alias).filter(id__in=keys).delete()

    def source() -> Any:
        if provider == "from_sitemap":
            return from_sitemap(StampedSitemap(alias))
        return django_keyset(Stamped.objects.using(alias), entry=lambda row: path(row.pk), lastmod=None)

    yield Rows(source, add, remove)


@pytest.fixture
def database_sqlite(django_sqlite: None) -> str:
    from ..conftest import empty_tables

    empty_tables("default")
    return "default"


@pytest.fixture
def database_postgresql(django_postgres: None) -> str:
    from ..conftest import empty_tables

    empty_tables("postgres")
    return "postgres"


def served(client: Any, pages: int) -> list[list[str]]:
    return [locs(validate(client.get(f"/sitemap-s-{n}.xml").body)) for n in range(1, pages + 1)]


def listed(keys: list[int]) -> list[str]:
    return [BASE + path(key) for key in sorted(keys)]


def planned_client(make_client: Any, rows: Rows, **options: Any) -> tuple[Sitemaps, Any]:
    rows.insert(PLANNED)
    sitemaps = Sitemaps(base_url=BASE, **options)
    sitemaps.add_provider("s", rows.source(), page_size=PAGE)
    client = make_client(sitemaps)
    assert len(locs(validate(client.get("/sitemap-index.xml").body))) == 3  # the plan, stored
    return sitemaps, client


def test_a_row_inserted_inside_a_planned_range_shows_on_its_page_once(make_client, rows):
    sitemaps, client = planned_client(make_client, rows)
    rows.insert([45])  # inside page 1's range (10 to 50), no invalidation
    pages = served(client, 3)
    assert pages == [listed([10, 20, 30, 40, 45]), listed([50, 60, 70, 80]), listed([90, 100])]
    # Within a file's limits the page grows; the plan stands until the section changes.
    assert len(locs(validate(client.get("/sitemap-index.xml").body))) == 3
    assert counter(sitemaps, "s", "count_mismatch") == 0


def test_rows_added_past_the_last_key_show_on_the_last_page(make_client, rows):
    _, client = planned_client(make_client, rows)
    rows.insert([101, 102, 103, 104, 105])  # the last page: 7 rows now, past page_size
    pages = served(client, 3)
    assert pages[2] == listed([90, 100, 101, 102, 103, 104, 105])
    assert [loc for page in pages for loc in page] == listed([*PLANNED, 101, 102, 103, 104, 105])


def test_a_range_grown_past_a_file_is_served_within_it_and_its_section_planned_again(make_client, rows):
    sitemaps, client = planned_client(make_client, rows, max_page_bytes=1024)
    rows.insert([45])  # page 1's range: five URLs, and a file holds four
    first = validate(client.get("/sitemap-s-1.xml").body)
    assert locs(first) == listed([10, 20, 30, 40])  # a valid file, within max_page_bytes
    assert counter(sitemaps, "s", "count_mismatch") == 1  # the plan was dropped
    index = locs(validate(client.get("/sitemap-index.xml").body))
    assert len(index) == 3  # eleven rows: pages of 4, 4 and 3, planned again
    pages = served(client, 3)
    assert [loc for page in pages for loc in page] == listed([*PLANNED, 45])  # each row once
    assert [len(page) for page in pages] == [4, 4, 3]


def test_a_row_inserted_below_the_first_planned_key_shows_on_page_1_at_once(make_client, rows):
    sitemaps, client = planned_client(make_client, rows)
    rows.insert([5])  # below page 1's first key (10), no invalidation
    pages = served(client, 3)
    assert pages == [listed([5, 10, 20, 30, 40]), listed([50, 60, 70, 80]), listed([90, 100])]
    assert counter(sitemaps, "s", "count_mismatch") == 0  # the plan stands


CRAWLED = [10 * n for n in range(1, 36)]  # 35 rows: pages of 10, 10, 10 and 5


def test_a_crawl_from_an_index_finds_every_row_left_after_deletions(make_client, rows, caplog):
    rows.insert(CRAWLED)
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.add_provider("s", rows.source(), page_size=10)
    client = make_client(sitemaps)
    index = locs(validate(client.get("/sitemap-index.xml").body))
    assert len(index) == 4
    gone = CRAWLED[10:20]  # every row of page 2
    rows.delete(gone)
    with caplog.at_level(logging.WARNING, logger="sitemap_middleware"):
        answers = [client.get(loc.removeprefix(BASE)) for loc in index]
    assert [answer.status for answer in answers] == [200, 404, 200, 200]  # page 2 has no URL to list
    found = [loc for answer in answers if answer.status == 200 for loc in locs(validate(answer.body))]
    assert found == listed([key for key in CRAWLED if key not in gone])  # each row left, once
    assert counter(sitemaps, "s", "empty_pages") == 1
    assert counter(sitemaps, "s", "count_mismatch") == 0
    assert [r.getMessage() for r in caplog.records if "no URL" in r.getMessage()] == [
        "sitemap section 's': the page from key 110 lists no URL now (its rows deleted since the plan?): "
        "a 404; the other pages keep their ranges"
    ]
    # Deletions never make a range wrong: the plan stands until its TTL, invalidate() or a version.
    assert locs(validate(client.get("/sitemap-index.xml").body)) == index
    assert [client.get(loc.removeprefix(BASE)).status for loc in index] == [200, 404, 200, 200]
