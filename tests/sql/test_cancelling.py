"""A query abandoned past its deadline is cancelled on the database, not left running.

When a keyset's statement outlives ``provider_timeout``, the request gets its 503 and the
work running the statement is abandoned (a thread Python cannot stop, or a cancelled task
whose connection SQLAlchemy terminates while the server runs on): the statement is then
cancelled where it runs (SQLite's ``interrupt()``, a PostgreSQL cancel), so it ends within
moments rather than in hours, holding a thread, a connection and memory meanwhile.

Checked on the database itself: PostgreSQL's ``pg_stat_activity`` lists no active statement
of ours, and SQLite's file is no longer read-locked by one (a write lock can be taken); for
sync drivers also from the driver: every statement sent has ended, the last with the
database's own "interrupted" or "canceling statement". Both keysets (the SQLAlchemy one
over sync and async engines), SQLite and PostgreSQL, behind real servers that keep the
deadline: uvicorn, and werkzeug with helper threads.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.db.backends.signals import connection_created
from sqlalchemy import Column, Integer, MetaData, Table, create_engine, event, insert, select, text
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from sitemap_middleware import Sitemaps
from sitemap_middleware.django import keyset as django_keyset
from sitemap_middleware.sqlalchemy import keyset as sqlalchemy_keyset

from ..conftest import BASE, counter, empty_tables, wait_until
from ..djangosite.config import configure
from ..postgres_server import create_database

configure()

from ..djangosite.models import Product  # noqa: E402  (needs Django configured)

DEADLINE = 0.3
# A condition each database takes hours (SQLite: a trillion steps) or 30 s to decide.
SLOW = {
    "sqlite": "(WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000000000000) "
    "SELECT count(*) FROM n) > 0",
    "postgresql": "(SELECT true FROM pg_sleep(30))",
}
ENDED_HOW = ("interrupted", "canceling statement due to user request")  # SQLite's, PostgreSQL's
PG_SLEEPING = (
    "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' "
    "AND position('pg_sleep(30)' in query) > 0 AND pid <> pg_backend_pid()"
)


class Statements:
    """The statements a sync driver runs now, and the errors those that ended raised."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.sent = 0
        self.running = 0
        self.errors: list[str] = []

    def started(self) -> None:
        with self._lock:
            self.sent += 1
            self.running += 1

    def ended(self, error: BaseException | None = None) -> None:
        with self._lock:
            self.running -= 1
            if error is not None:
                self.errors.append(str(error))

    def all_ended(self) -> bool:
        with self._lock:
            return self.sent > 0 and self.running == 0


@dataclass
class Slow:
    """A keyset whose plan runs for hours, how many of its statements the database runs
    now, and (sync drivers) what the driver saw."""

    source: Any
    running: Callable[[], int]
    statements: Statements | None


def sqlite_reading(path: str) -> Callable[[], int]:
    """1 while a statement reads the SQLite file ``path`` (its SHARED lock refuses a write lock)."""

    def running() -> int:
        connection = sqlite3.connect(path, timeout=0, isolation_level=None)
        try:
            assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "delete"  # readers lock
            connection.execute("BEGIN EXCLUSIVE")
        except sqlite3.OperationalError as error:
            if "locked" not in str(error):
                raise
            return 1
        else:
            connection.execute("ROLLBACK")
            return 0
        finally:
            connection.close()

    return running


def postgres_sleeping(url: str) -> int:
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            return int(connection.exec_driver_sql(PG_SLEEPING).scalar_one())
    finally:
        engine.dispose()


def tracked(engine: Any) -> Statements:
    statements = Statements()
    event.listen(engine, "before_cursor_execute", lambda *args: statements.started())
    event.listen(engine, "after_cursor_execute", lambda *args: statements.ended())
    event.listen(engine, "handle_error", lambda context: statements.ended(context.original_exception))
    return statements


slow_table = Table("slow", MetaData(), Column("id", Integer, primary_key=True))
ASYNC_DRIVERS = {
    "sqlite": "sqlite+aiosqlite",
    "postgresql": "postgresql+psycopg",
    "asyncpg": "postgresql+asyncpg",
}


def sqlalchemy_slow(url: str, database: str, driver: str | None) -> Iterator[Slow]:
    """A sync keyset, or with ``driver`` an async one, whose plan runs for hours."""
    setup = create_engine(url)
    with setup.begin() as connection:
        slow_table.drop(connection, checkfirst=True)
        slow_table.create(connection)
        connection.execute(insert(slow_table), [{"id": n} for n in range(10)])
    setup.dispose()
    statements = None
    if driver is None:
        engine: Any = create_engine(url)
        statements = tracked(engine)
    else:  # unpooled: under WSGI each request's async code runs on an event loop of its own
        engine = create_async_engine(ASYNC_DRIVERS[driver] + url[url.index(":") :], poolclass=NullPool)
    statement = select(slow_table.c.id).where(text(SLOW[database]))
    source = sqlalchemy_keyset(engine, statement, key=slow_table.c.id, entry=lambda row: f"/s/{row.id}")
    if database == "postgresql":
        running = lambda: postgres_sleeping(url)  # noqa: E731
    else:
        running = sqlite_reading(url.removeprefix("sqlite:///"))
    yield Slow(source, running, statements)
    if driver is None:
        engine.dispose()
    else:
        asyncio.run(engine.dispose())


def django_slow(alias: str, database: str) -> Iterator[Slow]:
    """A Django keyset whose plan runs for hours."""
    empty_tables(alias)
    Product.objects.using(alias).bulk_create(
        Product(id=n, slug=f"p{n}", updated_at="2026-01-01T00:00:00Z") for n in range(10)
    )
    statements = Statements()

    def track(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        statements.started()
        try:
            result = execute(sql, params, many, context)
        except BaseException as error:
            statements.ended(error)
            raise
        statements.ended()
        return result

    def watch(sender: Any, connection: Any, **kwargs: Any) -> None:
        if connection.alias == alias:  # each worker thread opens connections of its own
            connection.execute_wrappers.append(track)

    products = Product.objects.using(alias).extra(where=[SLOW[database]])
    source = django_keyset(products, entry=lambda p: f"/s/{p.pk}", lastmod=None)
    if database == "postgresql":
        url = "postgresql+psycopg://{USER}@/{NAME}?host={HOST}".format(**settings.DATABASES[alias])
        running = lambda: postgres_sleeping(url)  # noqa: E731
    else:
        running = sqlite_reading(str(Path(settings.DATABASES[alias]["NAME"])))
    connection_created.connect(watch, dispatch_uid="abandoned-queries")
    try:
        yield Slow(source, running, statements)
    finally:
        connection_created.disconnect(dispatch_uid="abandoned-queries")


@pytest.fixture(scope="module")
def postgres_abandoned(postgres_url: str) -> str:
    return create_database(postgres_url, "abandoned")


SOURCES = [
    "sqlalchemy-sqlite",
    "sqlalchemy-postgresql",  # psycopg
    "sqlalchemy_async-sqlite",  # aiosqlite
    "sqlalchemy_async-postgresql",  # psycopg's AsyncConnection
    "sqlalchemy_async-asyncpg",
    "django-sqlite",
    "django-postgresql",
]


@pytest.fixture(params=SOURCES)
def slow(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[Slow]:
    provider, driver = request.param.split("-")
    database = "postgresql" if driver == "asyncpg" else driver
    if provider == "django":
        request.getfixturevalue("django_sqlite" if database == "sqlite" else "django_postgres")
        yield from django_slow("default" if database == "sqlite" else "postgres", database)
        return
    url = f"sqlite:///{tmp_path / 'slow.sqlite3'}"
    if database == "postgresql":
        url = request.getfixturevalue("postgres_abandoned")
    yield from sqlalchemy_slow(url, database, driver if provider == "sqlalchemy_async" else None)


@pytest.mark.server
@pytest.mark.parametrize("serve", ["uvicorn", "werkzeug-helpers"], indirect=True)
def test_a_statement_abandoned_past_the_deadline_is_cancelled_on_the_database(serve, slow):
    sitemaps = Sitemaps(base_url=BASE, provider_timeout=DEADLINE)
    sitemaps.add_provider("slow", slow.source)
    server = serve(sitemaps)
    assert server.get("/sitemap-index.xml").status == 503
    assert counter(sitemaps, "", "provider_errors") == 1
    wait_until(lambda: slow.running() == 0, "the database runs none of our statements", timeout=5)
    if slow.statements is not None:
        wait_until(slow.statements.all_ended, "the driver's statements ended", timeout=5)
        errors = slow.statements.errors
        assert any(how in error for error in errors for how in ENDED_HOW), errors
