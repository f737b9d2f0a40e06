"""`sitemap_middleware.sqlalchemy.keyset` on SQLite (a temp file): every bind, read by key, never by OFFSET.

PostgreSQL runs the same source in tests/sqlalchemy/test_postgres.py.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import (
    Boolean,
    Column,
    Date,
    DateTime,
    Engine,
    Integer,
    LargeBinary,
    MetaData,
    Numeric,
    String,
    Table,
    Uuid,
    create_engine,
    event,
    insert,
    select,
)
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker, create_async_engine
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, sessionmaker

from sitemap_middleware import ConfigurationError, Sitemaps, Url
from sitemap_middleware.protocol.render import MAX_URLS
from sitemap_middleware.sources import PagedSource
from sitemap_middleware.sqlalchemy import AsyncKeyset, Keyset, keyset

from ..concurrency.test_disconnect import fetch_then_disconnect
from ..conftest import BASE, plain_asgi_app, plain_wsgi_app
from ..xsd import lastmods, locs, validate

EPOCH = datetime(2026, 1, 1)  # naive, as SQLite gives it back: the index takes it as UTC
ROWS = 30_000
PAGE = 5_000


class Base(DeclarativeBase):
    pass


class Product(Base):
    __tablename__ = "product"

    id: Mapped[int] = mapped_column(primary_key=True)
    slug: Mapped[str] = mapped_column(String(64))
    updated_at: Mapped[datetime] = mapped_column(DateTime)
    published: Mapped[bool] = mapped_column(Boolean)


product = Product.__table__


def catalogue_rows(count: int = ROWS) -> list[dict[str, Any]]:
    """Keys with gaps (odd numbers), lastmods out of key order, every tenth row unpublished."""
    return [
        {
            "id": 2 * n + 1,
            "slug": f"p{2 * n + 1}",
            "updated_at": EPOCH + timedelta(minutes=(n * 7919) % count),
            "published": n % 10 != 3,
        }
        for n in range(count)
    ]


def expected_pages(rows: list[dict[str, Any]], size: int) -> list[list[dict[str, Any]]]:
    """The published rows in key order, cut into pages of ``size``."""
    published = sorted((row for row in rows if row["published"]), key=lambda row: row["id"])
    return [published[i : i + size] for i in range(0, len(published), size)]


def utc(value: datetime) -> str:
    return value.replace(tzinfo=UTC).isoformat()


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("sqlite") / "catalogue.sqlite3"
    engine = create_engine(f"sqlite:///{path}")
    Base.metadata.create_all(engine)
    with engine.begin() as connection:
        connection.execute(insert(product), catalogue_rows())
    engine.dispose()
    return path


@pytest.fixture
def engine(database: Path) -> Iterator[Engine]:
    engine = create_engine(f"sqlite:///{database}")
    yield engine
    engine.dispose()


@pytest.fixture
def async_engine(database: Path) -> Iterator[AsyncEngine]:
    engine = create_async_engine(f"sqlite+aiosqlite:///{database}")
    yield engine
    asyncio.run(engine.dispose())


def products_source(bind: Any, *, lastmod: bool = True) -> Keyset | AsyncKeyset:
    return keyset(
        bind,
        select(product.c.id, product.c.slug, product.c.updated_at).where(product.c.published),
        key=product.c.id,
        entry=lambda row: Url(f"/p/{row.slug}", lastmod=row.updated_at),
        lastmod=product.c.updated_at if lastmod else None,
    )


def check_served(client: Any, pages: list[list[dict[str, Any]]]) -> None:
    """The index lists one file per page with its newest lastmod; each file holds its rows."""
    index = validate(client.get("/sitemap-index.xml").body)
    assert locs(index) == [f"{BASE}/sitemap-products-{n}.xml" for n in range(1, len(pages) + 1)]
    assert lastmods(index) == [utc(max(row["updated_at"] for row in page)) for page in pages]
    for number in (len(pages), 1, 2):  # the last page first: read by key, not reached by walking
        served = locs(validate(client.get(f"/sitemap-products-{number}.xml").body))
        assert served == [f"{BASE}/p/{row['slug']}" for row in pages[number - 1]]
    assert client.get(f"/sitemap-products-{len(pages) + 1}.xml").status == 404


BINDS: dict[str, Callable[[Engine, AsyncEngine], Any]] = {
    "engine": lambda engine, async_engine: engine,
    "sessionmaker": lambda engine, async_engine: sessionmaker(engine),
    "async-engine": lambda engine, async_engine: async_engine,
    "async-sessionmaker": lambda engine, async_engine: async_sessionmaker(async_engine),
}


@pytest.mark.parametrize("bind", list(BINDS), ids=list(BINDS))
def test_keyset_serves_each_page_by_key_with_its_newest_lastmod(make_client, engine, async_engine, bind):
    source = products_source(BINDS[bind](engine, async_engine))
    assert isinstance(source, PagedSource)
    assert isinstance(source, AsyncKeyset) == bind.startswith("async")
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.add_provider("products", source, page_size=PAGE)
    check_served(make_client(sitemaps), expected_pages(catalogue_rows(), PAGE))


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_keyset_of_a_mapped_class_gives_entry_the_objects(make_client, engine, async_engine, asynchronous):
    seen: list[object] = []

    def entry(item: Product) -> Url:
        seen.append(item)
        return Url(f"/p/{item.slug}", lastmod=item.updated_at)

    bind = async_sessionmaker(async_engine) if asynchronous else sessionmaker(engine)
    source = keyset(
        bind,
        select(Product).where(Product.published),
        key=Product.id,
        entry=entry,
        lastmod=Product.updated_at,
    )
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.add_provider("products", source, page_size=PAGE)
    check_served(make_client(sitemaps), expected_pages(catalogue_rows(), PAGE))
    assert seen and all(isinstance(item, Product) for item in seen)


def test_keyset_without_lastmod_lists_no_lastmod(make_client, engine):
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.add_provider("products", products_source(engine, lastmod=False), page_size=PAGE)
    index = validate(make_client(sitemaps).get("/sitemap-index.xml").body)
    assert lastmods(index) == [None] * len(expected_pages(catalogue_rows(), PAGE))


def test_an_empty_keyset_is_not_listed(make_client, engine):
    sitemaps = Sitemaps(base_url=BASE)
    source = keyset(
        engine,
        select(product.c.id, product.c.slug).where(product.c.id < 0),
        key=product.c.id,
        entry=lambda row: f"/p/{row.slug}",
    )
    sitemaps.add_provider("products", source)
    sitemaps.add_provider("pages", lambda: ["/"])
    client = make_client(sitemaps)
    assert locs(validate(client.get("/sitemap-index.xml").body)) == [f"{BASE}/sitemap-pages-1.xml"]
    assert client.get("/sitemap-products-1.xml").status == 404


def recorded_statements(engine: Engine) -> list[tuple[str, Any]]:
    """Every SQL statement ``engine`` sends from now on, with its parameters."""
    statements: list[tuple[str, Any]] = []

    @event.listens_for(engine, "before_cursor_execute")
    def record(connection: Any, cursor: Any, statement: str, parameters: Any, *args: Any) -> None:
        statements.append((statement, parameters))

    return statements


def test_a_page_is_one_seek_by_key_without_offset(make_client, engine):
    pages = expected_pages(catalogue_rows(), PAGE)
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.add_provider("products", products_source(engine), page_size=PAGE)
    client = make_client(sitemaps)
    client.get("/sitemap-index.xml")
    statements = recorded_statements(engine)
    assert client.get("/sitemap-products-5.xml").status == 200
    [(sql, parameters)] = statements  # the plan is not asked again
    assert "product.id >= ? AND product.id < ?" in sql and "ORDER BY product.id" in sql
    # SQLite's dialect always writes an OFFSET after a LIMIT: here it skips no row.
    assert sql.endswith("LIMIT ? OFFSET ?")
    # From the page's first key to the next page's, at most one file's URLs and one more.
    assert tuple(parameters) == (pages[4][0]["id"], pages[5][0]["id"], MAX_URLS + 1, 0)


def test_the_plan_seeks_each_page_start_by_key_and_offsets_only_within_that_seek(make_client, engine):
    statements = recorded_statements(engine)
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.add_provider("products", products_source(engine), page_size=PAGE)
    validate(make_client(sitemaps).get("/sitemap-index.xml").body)
    [(sql, parameters)] = statements
    flat = " ".join(sql.split())
    assert "row_number" not in flat.lower() and flat.startswith("WITH RECURSIVE sitemap_pages")
    # LIMIT ? OFFSET ? three times: the first key (offset 0), the step from a page's first key
    # to the next (LIMIT 1, page_size keys on), and a page's rows for its MAX (offset 0).
    assert flat.count("OFFSET") == 3 and flat.count("product.id >= sitemap_pages.first") == 2
    limits = [value for value in parameters if isinstance(value, int)]
    assert limits == [1, 0, 1, PAGE, PAGE, 0], limits


def test_the_plan_is_one_query(make_client, engine):
    statements = recorded_statements(engine)
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.add_provider("products", products_source(engine), page_size=PAGE)
    validate(make_client(sitemaps).get("/sitemap-index.xml").body)
    assert len(statements) == 1


# -- rows the key cannot place ---------------------------------------------------------------------

coded = Table(
    "coded",
    MetaData(),
    Column("id", Integer, primary_key=True),
    Column("code", Integer, unique=True, nullable=True),  # a unique key that may be NULL
    Column("updated_at", DateTime, index=True),  # indexed: the plan walks it newest first
)
CODED = 1_000
NULL_AT = 500  # the row whose code is NULL: SQLite sorts it first, PostgreSQL last


def stock_codes(engine: Engine) -> None:
    """``CODED`` rows of ``coded``, one of them with a NULL key."""
    with engine.begin() as connection:
        coded.drop(connection, checkfirst=True)
        coded.create(connection)
        rows = [
            {"id": n, "code": None if n == NULL_AT else n, "updated_at": EPOCH + timedelta(minutes=n % 97)}
            for n in range(CODED)
        ]
        connection.execute(insert(coded), rows)


def check_null_keys_left_out(client_for: Callable[[Sitemaps], Any], engine: Engine, lastmod: bool) -> None:
    """The rows with a key are all served, each once, in key order; the NULL one is left out."""
    stock_codes(engine)
    sitemaps = Sitemaps(base_url=BASE)
    source = keyset(
        engine,
        select(coded.c.code),
        key=coded.c.code,
        entry=lambda row: f"/c/{row.code}",
        lastmod=coded.c.updated_at if lastmod else None,
    )
    sitemaps.add_provider("codes", source, page_size=100)
    client = client_for(sitemaps)
    response = client.get("/sitemap-index.xml")
    assert response.status == 200  # the section is listed: the only one, so a 404 says it was dropped
    assert locs(validate(response.body)) == [f"{BASE}/sitemap-codes-{n}.xml" for n in range(1, 11)]
    served = [loc for n in range(1, 11) for loc in locs(validate(client.get(f"/sitemap-codes-{n}.xml").body))]
    assert served == [f"{BASE}/c/{n}" for n in range(CODED) if n != NULL_AT]  # 999 URLs


@pytest.mark.parametrize("lastmod", [False, True], ids=["no-lastmod", "indexed-lastmod"])
def test_rows_whose_key_is_null_are_left_out_and_every_other_row_served(make_client, tmp_path, lastmod):
    engine = create_engine(f"sqlite:///{tmp_path / 'codes.sqlite3'}")
    check_null_keys_left_out(make_client, engine, lastmod)
    engine.dispose()


# -- connections are released on every way out ---------------------------------------------------


def checked_out(engine: Engine) -> Callable[[], int]:
    """How many of ``engine``'s pooled connections are in use at the moment."""
    count = 0

    def checkout(*args: Any) -> None:
        nonlocal count
        count += 1

    def checkin(*args: Any) -> None:
        nonlocal count
        count -= 1

    event.listen(engine, "checkout", checkout)
    event.listen(engine, "checkin", checkin)
    return lambda: count


WSGI_ENVIRON = {
    "REQUEST_METHOD": "GET",
    "PATH_INFO": "/sitemap-products-1.xml",
    "SCRIPT_NAME": "",
    "SERVER_NAME": "shop.example",
    "SERVER_PORT": "443",
    "wsgi.url_scheme": "https",
}


class Counted:
    """An ``entry`` that counts the rows it was given."""

    def __init__(self) -> None:
        self.rows = 0

    def __call__(self, row: Any) -> Url:
        self.rows += 1
        return Url(f"/p/{row.slug}")


def big_page_source(bind: Any, entry: Counted) -> Keyset | AsyncKeyset:
    return keyset(bind, select(product.c.id, product.c.slug), key=product.c.id, entry=entry)


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_wsgi_close_mid_page_returns_the_connection(engine, async_engine, asynchronous):
    in_use = checked_out(async_engine.sync_engine if asynchronous else engine)
    entry = Counted()
    sitemaps = Sitemaps(base_url=BASE, cache=None)
    source = big_page_source(async_engine if asynchronous else engine, entry)
    sitemaps.add_provider("products", source, page_size=ROWS)
    app = sitemaps.wsgi(plain_wsgi_app)
    body = app(dict(WSGI_ENVIRON), lambda status, headers, exc_info=None: None)
    next(iter(body))
    assert in_use() == 1  # the page is being read
    body.close()  # what a WSGI server does when the client goes away
    assert entry.rows < ROWS
    assert in_use() == 0


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_asgi_disconnect_mid_page_returns_the_connection(engine, async_engine, asynchronous):
    in_use = checked_out(async_engine.sync_engine if asynchronous else engine)
    entry = Counted()
    sitemaps = Sitemaps(base_url=BASE, cache=None)
    source = big_page_source(async_engine if asynchronous else engine, entry)
    sitemaps.add_provider("products", source, page_size=ROWS)
    sent = asyncio.run(fetch_then_disconnect(sitemaps.asgi(plain_asgi_app), "/sitemap-products-1.xml"))
    assert sent[0]["status"] == 200
    assert entry.rows < ROWS
    assert in_use() == 0


def test_an_entry_that_raises_mid_page_returns_the_connection(engine):
    in_use = checked_out(engine)

    def entry(row: Any) -> Url:
        if row.id > 2_001:
            raise RuntimeError("boom")
        return Url(f"/p/{row.slug}")

    sitemaps = Sitemaps(base_url=BASE, cache=None)
    sitemaps.add_provider("products", keyset(engine, select(product), key=product.c.id, entry=entry))
    app = sitemaps.wsgi(plain_wsgi_app)
    body = app(dict(WSGI_ENVIRON), lambda status, headers, exc_info=None: None)
    with pytest.raises(Exception, match="boom"):
        b"".join(body)
    body.close()
    assert in_use() == 0


# -- keys -----------------------------------------------------------------------------------------

KEYS: dict[str, tuple[Any, Callable[[int], Any]]] = {
    "str": (String(16), lambda n: f"k{n:05d}"),
    "uuid": (Uuid(), lambda n: uuid.UUID(int=n * 7_777_777_777)),
    "datetime": (DateTime(), lambda n: EPOCH + timedelta(seconds=n * 61.5)),
    "date": (Date(), lambda n: date(2000, 1, 1) + timedelta(days=n)),
    "decimal": (Numeric(12, 3), lambda n: Decimal(n) / 8),
}


@pytest.mark.parametrize("kind", list(KEYS), ids=list(KEYS))
def test_keys_of_other_types_page_exactly(make_client, tmp_path, kind):
    column_type, make = KEYS[kind]
    table = Table("item", MetaData(), Column("key", column_type, primary_key=True), Column("n", Integer))
    engine = create_engine(f"sqlite:///{tmp_path / 'keys.sqlite3'}")
    table.metadata.create_all(engine)
    with engine.begin() as connection:
        connection.execute(insert(table), [{"key": make(n), "n": n} for n in range(100)])
    sitemaps = Sitemaps(base_url=BASE)
    source = keyset(engine, select(table), key=table.c.key, entry=lambda row: f"/i/{row.n}")
    sitemaps.add_provider("items", source, page_size=7)
    client = make_client(sitemaps)
    assert len(locs(validate(client.get("/sitemap-index.xml").body))) == 15
    served = [locs(validate(client.get(f"/sitemap-items-{n}.xml").body)) for n in range(1, 16)]
    assert served[-1] == [f"{BASE}/i/{n}" for n in range(98, 100)]
    assert [loc for page in served for loc in page] == [f"{BASE}/i/{n}" for n in range(100)]
    engine.dispose()


@pytest.mark.parametrize(
    "column_type",
    [pytest.param(Boolean(), id="bool"), pytest.param(LargeBinary(), id="bytes")],
)
def test_a_key_of_a_type_that_cannot_be_stored_is_refused_at_registration(engine, column_type):
    table = Table("odd", MetaData(), Column("key", column_type, primary_key=True))
    with pytest.raises(ConfigurationError, match="key"):
        keyset(engine, select(table), key=table.c.key, entry=str)


@pytest.mark.parametrize(
    "arguments",
    [
        pytest.param({"bind": "sqlite://"}, id="bind-a-string"),
        pytest.param({"statement": select(product).limit(10)}, id="statement-with-limit"),
        pytest.param({"statement": select(product).offset(10)}, id="statement-with-offset"),
        pytest.param({"statement": product.select().subquery()}, id="not-a-select"),
        pytest.param({"key": "id"}, id="key-a-string"),
        pytest.param({"lastmod": "updated_at"}, id="lastmod-a-string"),
        pytest.param({"entry": None}, id="entry-not-callable"),
    ],
)
def test_misconfiguration_is_refused_at_registration(engine, arguments):
    given: dict[str, Any] = {
        "bind": engine,
        "statement": select(product),
        "key": product.c.id,
        "entry": str,
        **arguments,
    }
    with pytest.raises(ConfigurationError):
        keyset(given.pop("bind"), given.pop("statement"), **given)


def test_the_module_does_not_shadow_the_sqlalchemy_package():
    import sqlalchemy

    import sitemap_middleware.sqlalchemy as ours

    assert sqlalchemy.__name__ == "sqlalchemy" and hasattr(sqlalchemy, "create_engine")
    assert ours.__name__ == "sitemap_middleware.sqlalchemy"


# SQLAlchemy 2.1 no longer installs greenlet, without which sqlalchemy.ext.asyncio cannot be
# imported: a sync keyset must work without it (None in sys.modules makes an import fail).
WITHOUT_GREENLET = """
import sys
sys.modules["greenlet"] = None
from sqlalchemy import Column, Integer, MetaData, Table, create_engine, insert, select
from werkzeug.test import Client
from sitemap_middleware import Sitemaps
from sitemap_middleware.sqlalchemy import keyset

item = Table("item", MetaData(), Column("id", Integer, primary_key=True))
engine = create_engine("sqlite://")
item.metadata.create_all(engine)
with engine.begin() as connection:
    connection.execute(insert(item), [{"id": n} for n in range(3)])
sitemaps = Sitemaps(base_url="https://shop.example")
sitemaps.add_provider("items", keyset(engine, select(item), key=item.c.id, entry=lambda row: f"/i/{row.id}"))
response = Client(sitemaps.wsgi(lambda environ, start_response: [])).get("/sitemap-items-1.xml")
try:
    import sqlalchemy.ext.asyncio
except ImportError:
    print("no asyncio", file=sys.stderr)
sys.stdout.write(f"{response.status_code}\\n{response.get_data(as_text=True)}")
"""


def test_a_sync_keyset_needs_no_greenlet():
    done = subprocess.run(
        [sys.executable, "-W", "error", "-c", WITHOUT_GREENLET],
        cwd=Path(__file__).resolve().parents[2],  # this checkout's package
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip() == "no asyncio"  # the environment is SQLAlchemy 2.1's without greenlet
    status, body = done.stdout.split("\n", 1)
    assert status == "200"
    assert locs(validate(body.encode())) == [f"{BASE}/i/{n}" for n in range(3)]
