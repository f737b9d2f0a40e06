"""A keyset's pages are ranges of a unique key: a key that repeats is refused, never planned forever.

Where the schema says the key is not unique, the SQLAlchemy keyset refuses it when it is
registered (as the Django keyset refuses a field that is not unique). Where the schema
cannot tell, as with a join that repeats each row once per related row, the plan stops at
the first page whose next first key did not move past its own (more rows share one key than
a page holds), and the index is a 503 whose logged reason names the key and how many rows
share it: never a query that runs on forever. Both providers, SQLite and PostgreSQL, both
adapters.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import (
    Column,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    UniqueConstraint,
    create_engine,
    insert,
    select,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from sitemap_middleware import ConfigurationError, ProviderError, Sitemaps
from sitemap_middleware.django import keyset as django_keyset
from sitemap_middleware.sqlalchemy import keyset as sqlalchemy_keyset

from ..conftest import BASE, counter
from ..djangosite.config import configure
from ..postgres_server import create_database

configure()

from ..djangosite.models import Product, Review  # noqa: E402  (needs Django configured)

LISTINGS = [1, 2, 3]
REVIEWS = 25  # per listing: a join through them repeats each key 25 times, more than a PAGE
PAGE = 10

listing = Table("listing", MetaData(), Column("id", Integer, primary_key=True))
review = Table(
    "review",
    listing.metadata,
    Column("id", Integer, primary_key=True),
    Column("listing_id", Integer, ForeignKey("listing.id")),
)


def sqlalchemy_repeating(engine: Any) -> Any:
    """A keyset by the listing's primary key over a join that repeats it once per review."""
    with engine.begin() as connection:
        listing.metadata.drop_all(connection)
        listing.metadata.create_all(connection)
        connection.execute(insert(listing), [{"id": key} for key in LISTINGS])
        rows = [{"listing_id": key} for key in LISTINGS for _ in range(REVIEWS)]
        connection.execute(insert(review), rows)
    statement = select(listing.c.id).join(review, review.c.listing_id == listing.c.id)
    return sqlalchemy_keyset(engine, statement, key=listing.c.id, entry=lambda row: f"/l/{row.id}")


def django_repeating(alias: str) -> Any:
    """A keyset by the product's primary key over a filter across a relation, without
    ``distinct()``: each product once per matching review."""
    products = Product.objects.using(alias)
    for key in LISTINGS:
        product = products.create(id=key, slug=f"p{key}", updated_at="2026-01-01T00:00:00Z")
        Review.objects.using(alias).bulk_create(Review(product=product) for _ in range(REVIEWS))
    return django_keyset(products.filter(review__stars=5), entry=lambda p: f"/l/{p.pk}", lastmod=None)


@pytest.fixture(scope="module")
def postgres_uniqueness(postgres_url: str) -> str:
    return create_database(postgres_url, "uniqueness")


@pytest.fixture(params=["sqlalchemy-sqlite", "sqlalchemy-postgresql", "django-sqlite", "django-postgresql"])
def repeating(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[Any]:
    """A source whose key is unique in its table but repeated by its statement's join."""
    provider, database = request.param.split("-")
    if provider == "django":
        yield django_repeating(request.getfixturevalue("database_" + database))
        return
    url = f"sqlite:///{tmp_path / 'uniqueness.sqlite3'}"
    if database == "postgresql":
        url = request.getfixturevalue("postgres_uniqueness")
    engine = create_engine(url)
    yield sqlalchemy_repeating(engine)
    engine.dispose()


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


def test_a_key_repeated_past_a_page_is_a_503_naming_it_never_an_endless_plan(make_client, repeating, caplog):
    sitemaps = Sitemaps(base_url=BASE, provider_timeout=10)
    sitemaps.add_provider("listings", repeating, page_size=PAGE)
    with caplog.at_level(logging.ERROR, logger="sitemap_middleware"):
        response = make_client(sitemaps).get("/sitemap-index.xml")
    assert response.status == 503
    assert counter(sitemaps, "", "provider_errors") == 1
    reasons = [record.getMessage() for record in caplog.records]
    assert any(f"key 1 is not unique: {REVIEWS} rows share it" in reason for reason in reasons), reasons


def planned_starts(keys: list[int], page_size: int) -> tuple[list[int], int | None]:
    """The plan's first keys over the sorted ``keys`` (repeats included), and the key it
    sticks at (``None``: it ends): each page from its key's first row, the next page's first
    key ``page_size`` rows on."""
    starts = [keys[0]] if keys else []
    while starts:
        following = keys.index(starts[-1]) + page_size
        if following >= len(keys):
            return starts, None
        if keys[following] == starts[-1]:
            return starts, starts[-1]
        starts.append(keys[following])
    return starts, None


@settings(max_examples=60, deadline=None)
@given(
    repeats=st.dictionaries(st.integers(1, 60), st.integers(1, 4), max_size=12),
    page_size=st.integers(1, 5),
)
def test_repeated_keys_are_either_each_served_once_or_reported_never_planned_forever(repeats, page_size):
    engine = create_engine("sqlite://")
    statement = select(listing.c.id).join(review, review.c.listing_id == listing.c.id)
    source = sqlalchemy_keyset(engine, statement, key=listing.c.id, entry=lambda row: row.id)
    with engine.begin() as connection:
        listing.metadata.create_all(connection)
        if repeats:
            connection.execute(insert(listing), [{"id": key} for key in repeats])
            rows = [{"listing_id": key} for key, times in repeats.items() for _ in range(times)]
            connection.execute(insert(review), rows)
    keys = sorted(key for key, times in repeats.items() for _ in range(times))
    starts, stuck = planned_starts(keys, page_size)
    if stuck is not None:
        with pytest.raises(ProviderError, match=f"key {stuck} is not unique: {repeats[stuck]} rows share it"):
            source.pages(page_size)
    else:
        assert [page.first for page in source.pages(page_size)] == starts
        ends = [*starts[1:], None] if starts else []
        served = [
            list(source.entries(None if n == 0 else first, 50_001, end))
            for n, (first, end) in enumerate(zip(starts, ends, strict=True))
        ]
        assert [key for page in served for key in page] == keys  # every row, on one page
    engine.dispose()


# -- what the schema says -------------------------------------------------------------------------


class Base(DeclarativeBase):
    pass


class Shop(Base):
    __tablename__ = "shop"

    id: Mapped[int] = mapped_column(primary_key=True)
    code: Mapped[str] = mapped_column(String(8), unique=True)
    city: Mapped[str] = mapped_column(String(8))


def table(*items: Any) -> Table:
    return Table("t", MetaData(), *items)


NOT_UNIQUE = {
    "plain-column": lambda: table(Column("id", Integer, primary_key=True), Column("k", Integer)).c.k,
    "part-of-a-composite-primary-key": lambda: (
        table(Column("k", Integer), Column("n", Integer), PrimaryKeyConstraint("k", "n")).c.k
    ),
    "part-of-a-composite-unique-constraint": lambda: (
        table(
            Column("id", Integer, primary_key=True),
            Column("k", Integer),
            Column("n", Integer),
            UniqueConstraint("k", "n"),
        ).c.k
    ),
    "an-index-that-is-not-unique": lambda: (
        table(Column("id", Integer, primary_key=True), Column("k", Integer), Index("t_k", "k")).c.k
    ),
    "a-partial-unique-index": lambda: (
        table(
            Column("id", Integer, primary_key=True),
            Column("k", Integer),
            Index("t_k", "k", unique=True, sqlite_where=Column("k") > 0, postgresql_where=Column("k") > 0),
        ).c.k
    ),
    "a-mapped-attribute": lambda: Shop.city,
}

UNIQUE = {
    "primary-key": lambda: table(Column("k", Integer, primary_key=True)).c.k,
    "unique-column": lambda: (
        table(Column("id", Integer, primary_key=True), Column("k", Integer, unique=True)).c.k
    ),
    "unique-constraint": lambda: (
        table(Column("id", Integer, primary_key=True), Column("k", Integer), UniqueConstraint("k")).c.k
    ),
    "unique-index": lambda: (
        table(
            Column("id", Integer, primary_key=True), Column("k", Integer), Index("t_k", "k", unique=True)
        ).c.k
    ),
    "mapped-primary-key": lambda: Shop.id,
    "mapped-unique-column": lambda: Shop.code,
    "a-label-the-schema-cannot-tell": lambda: table(Column("id", Integer, primary_key=True)).c.id.label("k"),
}


@pytest.mark.parametrize("key", list(NOT_UNIQUE.values()), ids=list(NOT_UNIQUE))
def test_a_key_the_schema_says_is_not_unique_is_refused_at_registration(key):
    column = key()
    with pytest.raises(ConfigurationError, match="not unique"):
        sqlalchemy_keyset(create_engine("sqlite://"), select(column), key=column, entry=str)


@pytest.mark.parametrize("key", list(UNIQUE.values()), ids=list(UNIQUE))
def test_a_key_the_schema_says_is_unique_or_cannot_tell_is_accepted(key):
    column = key()
    sqlalchemy_keyset(create_engine("sqlite://"), select(column), key=column, entry=str)
