"""The change log over keyset sections (SQLAlchemy on SQLite and PostgreSQL), on both adapters.

A keyset page is a key range: rows inserted below, inside and past the planned ranges, an
update and deletes; and the same data planned again, where every row after an edit moves
to another page. Moves are never changes: the log reports exactly the rows edited.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import (
    Column,
    DateTime,
    Engine,
    Integer,
    MetaData,
    Table,
    create_engine,
    delete,
    insert,
    select,
    update,
)

from sitemap_middleware import MemoryStore, Sitemaps, Url
from sitemap_middleware.changes import ChangeLog
from sitemap_middleware.sqlalchemy import keyset

from ..conftest import BASE, SitemapClient, counter
from ..postgres_server import create_database

PAGE = 4
KEYS = [10 * n for n in range(1, 13)]  # pages of 4, from keys 10, 50 and 90
EPOCH = datetime(2026, 1, 1)

stamped = Table(
    "stamped",
    MetaData(),
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("updated_at", DateTime, nullable=False),
)


@pytest.fixture(scope="module")
def postgres_changes(postgres_url: str) -> str:
    return create_database(postgres_url, "changes")


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    url = f"sqlite:///{tmp_path / 'rows.sqlite3'}"
    if request.param == "postgresql":
        url = request.getfixturevalue("postgres_changes")
    engine = create_engine(url)
    stamped.metadata.create_all(engine)
    with engine.begin() as connection:
        connection.execute(delete(stamped))
        connection.execute(insert(stamped), [{"id": key, "updated_at": EPOCH} for key in KEYS])
    yield engine
    engine.dispose()


def loc(key: int) -> str:
    return f"/s/{key:04d}"


def shop(engine: Engine, tmp_path: Path, **options: Any) -> Sitemaps:
    sitemaps = Sitemaps(base_url=BASE, changes=ChangeLog.sqlite(tmp_path / "changes.sqlite3"), **options)
    source = keyset(
        engine,
        select(stamped.c.id, stamped.c.updated_at),
        key=stamped.c.id,
        entry=lambda row: Url(loc(row.id), lastmod=row.updated_at),
    )
    sitemaps.add_provider("s", source, page_size=PAGE)
    return sitemaps


def edit(engine: Engine) -> set[tuple[str, str]]:
    with engine.begin() as connection:
        connection.execute(insert(stamped), [{"id": key, "updated_at": EPOCH} for key in (5, 55, 130)])
        connection.execute(
            update(stamped).where(stamped.c.id == 70).values(updated_at=EPOCH + timedelta(days=1))
        )
        connection.execute(delete(stamped).where(stamped.c.id.in_([20, 100])))
    return {
        ("added", loc(5)),  # below page 1's first key
        ("added", loc(55)),  # inside page 2's range
        ("added", loc(130)),  # past the last page's first key
        ("changed", loc(70)),
        ("removed", loc(20)),
        ("removed", loc(100)),
    }


def found(sitemaps: Sitemaps) -> set[tuple[str, str]]:
    assert sitemaps.changes is not None
    return {(change.kind, change.loc.removeprefix(BASE)) for change in sitemaps.changes.since()}


def crawl(client: SitemapClient, pages: int) -> list[int]:
    assert client.get("/sitemap-index.xml").status == 200
    return [client.get(f"/sitemap-s-{number}.xml").status for number in range(1, pages + 1)]


def test_a_refresh_of_a_keyset_reports_exactly_the_rows_edited(engine: Engine, tmp_path: Path) -> None:
    sitemaps = shop(engine, tmp_path)
    sitemaps.refresh()
    assert found(sitemaps) == set()
    expected = edit(engine)
    sitemaps.refresh()  # planned again: most rows on another page than before
    assert found(sitemaps) == expected
    sitemaps.refresh()
    assert found(sitemaps) == expected


def test_crawlers_over_a_standing_plan_report_exactly_the_rows_edited(
    engine: Engine, tmp_path: Path, make_client: Callable[..., SitemapClient]
) -> None:
    # A store too small for the pages keeps only the plan: each crawl renders every page in
    # its planned key range, and rows edited meanwhile show inside those ranges.
    sitemaps = shop(engine, tmp_path, cache=MemoryStore(max_bytes=2048))
    client = make_client(sitemaps)
    assert crawl(client, 3) == [200, 200, 200]
    expected = edit(engine)
    assert crawl(client, 3) == [200, 200, 200]
    assert found(sitemaps) == expected
    assert counter(sitemaps, "s", "renders") >= 6


def test_a_keyset_page_emptied_under_a_standing_plan_ends_its_pass_with_its_rows_removed(
    engine: Engine, tmp_path: Path, make_client: Callable[..., SitemapClient]
) -> None:
    sitemaps = shop(engine, tmp_path, cache=MemoryStore(max_bytes=2048))
    client = make_client(sitemaps)
    assert crawl(client, 3) == [200, 200, 200]
    with engine.begin() as connection:
        connection.execute(delete(stamped).where(stamped.c.id.in_([50, 60, 70, 80])))  # all of page 2
    assert crawl(client, 3) == [200, 404, 200]
    assert found(sitemaps) == {("removed", loc(key)) for key in (50, 60, 70, 80)}
    assert counter(sitemaps, "s", "empty_pages") == 1
