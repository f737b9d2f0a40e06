"""`sitemap_middleware.sqlalchemy.keyset` on a real PostgreSQL server (`postgres_url`), sync and async.

The server is started for the session (tests/postgres_server.py); one that cannot start
fails these tests. The driver is psycopg 3: ``postgresql+psycopg`` is sync under
``create_engine`` and async under ``create_async_engine``; asyncpg is run too, unpooled.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import Column, DateTime, Engine, Integer, MetaData, Table, Uuid, create_engine, insert, select
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker, create_async_engine
from sqlalchemy.pool import NullPool

from sitemap_middleware import Sitemaps
from sitemap_middleware.protocol.render import MAX_URLS
from sitemap_middleware.sqlalchemy import keyset

from ..concurrency.test_disconnect import fetch_then_disconnect
from ..conftest import BASE, plain_asgi_app
from ..postgres_server import create_database
from ..xsd import locs, validate
from .test_keyset import (
    PAGE,
    ROWS,
    Base,
    Counted,
    big_page_source,
    catalogue_rows,
    check_null_keys_left_out,
    check_served,
    checked_out,
    expected_pages,
    product,
    products_source,
    recorded_statements,
)


@pytest.fixture(scope="module")
def database(postgres_url: str) -> str:
    """The catalogue in a database of its own; its URL for the psycopg driver."""
    url = create_database(postgres_url, "catalogue")
    engine = create_engine(url)
    Base.metadata.create_all(engine)
    with engine.begin() as connection:
        connection.execute(insert(product), catalogue_rows())
        connection.exec_driver_sql("ANALYZE product")
    engine.dispose()
    return url


@pytest.fixture
def engine(database: str) -> Iterator[Engine]:
    engine = create_engine(database)
    yield engine
    engine.dispose()


@pytest.fixture
def async_engine(database: str) -> Iterator[AsyncEngine]:
    engine = create_async_engine(database)
    yield engine
    asyncio.run(engine.dispose())


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_keyset_on_postgres_serves_each_page_by_key_with_its_newest_lastmod(
    make_client, engine, async_engine, asynchronous
):
    sitemaps = Sitemaps(base_url=BASE)
    bind = async_sessionmaker(async_engine) if asynchronous else engine
    sitemaps.add_provider("products", products_source(bind), page_size=PAGE)
    check_served(make_client(sitemaps), expected_pages(catalogue_rows(), PAGE))


def test_asyncpg_without_a_pool_serves_under_any_event_loop(make_client, database):
    # asyncpg ties a connection to the loop that opened it; each WSGI request (and each
    # request of the test client) runs on a loop of its own: NullPool is what the docs advise.
    engine = create_async_engine(database.replace("+psycopg", "+asyncpg"), poolclass=NullPool)
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.add_provider("products", products_source(engine), page_size=PAGE)
    check_served(make_client(sitemaps), expected_pages(catalogue_rows(), PAGE))
    asyncio.run(engine.dispose())


@pytest.mark.parametrize("number", [1, 4, 6])
def test_the_sql_for_page_n_seeks_by_key_and_skips_no_row_with_offset(make_client, engine, number):
    pages = expected_pages(catalogue_rows(), PAGE)
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.add_provider("products", products_source(engine), page_size=PAGE)
    client = make_client(sitemaps)
    client.get("/sitemap-index.xml")  # the plan, so that the page asks for nothing else
    statements = recorded_statements(engine)
    assert client.get(f"/sitemap-products-{number}.xml").status == 200
    [(sql, parameters)] = statements
    flat = " ".join(sql.split())
    seek = re.search(r"product\.id >= %\((\w+)\)s", flat)  # from the page's first key (page 1: below it)
    assert (seek and parameters[seek.group(1)]) == (pages[number - 1][0]["id"] if number > 1 else None)
    end = re.search(r"product\.id < %\((\w+)\)s", flat)  # to the next page's (none: the last)
    assert (end and parameters[end.group(1)]) == (pages[number][0]["id"] if number < len(pages) else None)
    limit = re.search(r"ORDER BY product\.id LIMIT %\((\w+)\)s", flat)
    assert limit is not None, flat
    assert parameters[limit.group(1)] == MAX_URLS + 1  # one file's URLs, and one to see a range outgrow it
    assert "OFFSET" not in flat.upper()


def test_the_plan_on_postgres_seeks_each_page_start_by_key_and_offsets_only_within_that_seek(engine):
    statements = recorded_statements(engine)
    products_source(engine).pages(PAGE)
    [(sql, parameters)] = statements
    flat = " ".join(sql.split())
    assert "row_number" not in flat.lower() and flat.startswith("WITH RECURSIVE sitemap_pages")
    [offset] = re.findall(r"LIMIT %\((\w+)\)s(?:::INTEGER)? OFFSET %\((\w+)\)s", flat)  # the step
    assert (parameters[offset[0]], parameters[offset[1]]) == (1, PAGE)
    assert flat.count("OFFSET") == 1 and flat.count("product.id >= sitemap_pages.first") == 2


@pytest.mark.parametrize("lastmod", [False, True], ids=["no-lastmod", "indexed-lastmod"])
def test_rows_whose_key_is_null_are_left_out_where_nulls_sort_last(make_client, engine, lastmod):
    check_null_keys_left_out(make_client, engine, lastmod)


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_asgi_disconnect_mid_page_closes_the_cursor_and_returns_the_connection(
    engine, async_engine, asynchronous
):
    in_use = checked_out(async_engine.sync_engine if asynchronous else engine)
    entry = Counted()
    sitemaps = Sitemaps(base_url=BASE, cache=None)
    sitemaps.add_provider(
        "products", big_page_source(async_engine if asynchronous else engine, entry), page_size=ROWS
    )
    sent = asyncio.run(fetch_then_disconnect(sitemaps.asgi(plain_asgi_app), "/sitemap-products-1.xml"))
    assert sent[0]["status"] == 200
    assert entry.rows < ROWS
    assert in_use() == 0


NATIVE_KEYS: dict[str, tuple[Any, Callable[[int], Any]]] = {
    "uuid": (Uuid(), lambda n: uuid.UUID(int=(n * 0x9E3779B97F4A7C15) % 2**128)),
    "timestamptz": (DateTime(timezone=True), lambda n: datetime(2026, 1, 1, tzinfo=UTC) + timedelta(n / 7)),
}


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("kind", list(NATIVE_KEYS), ids=list(NATIVE_KEYS))
def test_native_uuid_and_timestamptz_keys_page_exactly(make_client, engine, async_engine, kind, asynchronous):
    column_type, make = NATIVE_KEYS[kind]
    key = Column("key", column_type, primary_key=True)
    table = Table(f"item_{kind}", MetaData(), key, Column("n", Integer))
    with engine.begin() as connection:
        table.metadata.create_all(connection, checkfirst=True)
        if connection.execute(select(table).limit(1)).first() is None:
            connection.execute(insert(table), [{"key": make(n), "n": n} for n in range(100)])
    order = [n for _, n in sorted((make(n), n) for n in range(100))]  # uuid: PostgreSQL's byte order
    sitemaps = Sitemaps(base_url=BASE)
    source = keyset(
        async_engine if asynchronous else engine, select(table), key=table.c.key, entry=lambda r: f"/i/{r.n}"
    )
    sitemaps.add_provider("items", source, page_size=7)
    client = make_client(sitemaps)
    assert len(locs(validate(client.get("/sitemap-index.xml").body))) == 15
    served = [loc for n in range(1, 16) for loc in locs(validate(client.get(f"/sitemap-items-{n}.xml").body))]
    assert served == [f"{BASE}/i/{n}" for n in order]
