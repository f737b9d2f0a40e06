"""A section served from an SQLAlchemy ``SELECT``, paged by key (a *keyset*), never by OFFSET::

    from sqlalchemy import select
    from sitemap_middleware import Url
    from sitemap_middleware.sqlalchemy import keyset

    sitemaps.add_provider(
        "products",
        keyset(
            engine,  # an Engine, an AsyncEngine, a sessionmaker or an async_sessionmaker
            select(product.c.id, product.c.slug, product.c.updated_at).where(product.c.published),
            key=product.c.id,  # an ordered unique key
            entry=lambda row: Url(f"/p/{row.slug}", lastmod=row.updated_at),
            lastmod=product.c.updated_at,  # the index's <lastmod>: each page's newest
        ),
    )

Page n is read as ``<statement> AND key >= :first AND key < :next ORDER BY key``, from
the first key the plan names for it up to the next page's (page 1 from below its first
key, the last page to the end), so page 200 costs what page 1 costs, and a row inserted
after the plan shows on its page at once (within one file's limits; past them the section
is planned again: `Engine.page`). A row deleted leaves every other in its range; a page
whose rows are all gone is a 404 until the plan is made again. The plan
(`Keyset.pages`) is one query: a recursive CTE that steps from each page's first key to
the next (``LIMIT 1 OFFSET :page_size`` from a key: the key's index is read once, end to
end), and takes ``MAX(lastmod)`` over exactly each page's rows, so the index carries true
lastmods and no row reaches Python. It is kept in the cache store and reused by every
page until the section is invalidated (with ``Sitemaps(cache=None)``: run per request).

That MAX reads every row's lastmod: 2 of the 2.5 s a 10M-row plan took in SQLite. When the
``Table`` declares an index led by the lastmod column (``Column(..., index=True)`` or an
``Index``, created in the database too) and the key is an integer, the plan reads rows
newest first over that index instead, until every page has its newest
(`sitemap_middleware.sql.newest_first`: 0.2 s at 10M rows), and takes MAX only for the pages that
walk leaves (lastmods that rise with the key, a page never updated). Without the index
the lastmods are the same, read the slower way.

``entry`` gets each row as SQLAlchemy returns it: a ``Row`` (attribute access by column
name), or the mapped object when the statement selects one ORM entity
(``select(Product)``). An ``AsyncEngine`` or ``async_sessionmaker`` gives `AsyncKeyset`,
whose methods are coroutines run on the app's event loop: it is for async apps (under
WSGI every request gets an event loop of its own, and a driver such as asyncpg ties a
pooled connection to the loop that opened it; give such an engine ``poolclass=NullPool``
there, or pass a sync ``Engine``). Only it loads ``sqlalchemy.ext.asyncio``, which needs
greenlet (SQLAlchemy 2.1 no longer installs it): a sync keyset works without either.
Every read runs in a session of its own, closed (its
connection back in the pool) on every way out, a client gone mid-page included.

Keys: int, str and float keys are stored as they are; a key column of type ``Uuid``,
``DateTime``, ``Date`` or ``Numeric`` is stored as its string (a plan is stored as JSON in
any cache store) and converted back, exactly, before it is compared. Other key types
are refused when the section is registered. Rows whose key is NULL have no place in a
range and are left out (unless the column is declared NOT NULL, every read says
``key IS NOT NULL``).
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, overload

from sqlalchemy import Select, and_, func, literal_column, or_, select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.sql.elements import ColumnElement

from sitemap_middleware.concurrency.deadlines import cancel_on_abandon
from sitemap_middleware.errors import ConfigurationError
from sitemap_middleware.sources import Key, PageStart, key_not_unique
from sitemap_middleware.sql.cancelling import backend_pid, cancellable, canceller, shielded
from sitemap_middleware.sql.newest_first import WALK_BATCH, NewestFirst, walk_limit
from sitemap_middleware.sqlalchemy_columns import codec, column_of, declared_unique, indexed, one_entity

__all__ = ["AsyncKeyset", "Keyset", "keyset"]

if TYPE_CHECKING:
    # Only for async engines, at run time (`_async_binds`): it needs greenlet, which
    # SQLAlchemy 2.1 no longer installs, and a sync keyset must import without it.
    from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

    # Written for 2.1's variadic Select; 2.0's takes one tuple type.
    Statement = Select[*tuple[Any, ...]]
Entry = Callable[[Any], object]

# Rows fetched per round trip: a page's rows stream instead of being held all at once.
YIELD_PER = 1000


class _Keyset:
    """What both flavours share: the statements, the key's conversions, the entry."""

    def __init__(self, statement: Statement, key: Any, entry: Entry, lastmod: Any | None) -> None:
        if not isinstance(statement, Select):
            raise ConfigurationError(f"keyset needs a select(), not {type(statement).__name__}")
        # A LIMIT or OFFSET of the user's would cut every page's read and the plan differently.
        if statement._limit_clause is not None or statement._offset_clause is not None:
            raise ConfigurationError("keyset's statement must not have a LIMIT or OFFSET: pages are its own")
        if not callable(entry):
            raise ConfigurationError(f"keyset's entry must be callable, not {type(entry).__name__}")
        key_column = column_of(key, "key")
        if declared_unique(key_column) is False:
            raise ConfigurationError(
                f"keyset's key {key_column} is not unique (no primary key, unique constraint or "
                "unique index is on that column alone): pages are ranges of a key, so it must be one"
            )
        key_type = key_column.type
        self._encode, self._decode = codec(key_type.python_type, key_type)
        # Newest first over the lastmod's index (`sitemap_middleware.sql.newest_first`): only where the
        # table declares one, and for integer keys, whose order Python shares.
        self._walks = (
            lastmod is not None and key_type.python_type is int and indexed(column_of(lastmod, "lastmod"))
        )
        self._statement = statement.order_by(None)
        if getattr(key_column, "nullable", True):
            # A row whose key is NULL has no place in any range (and SQLite sorts NULL first,
            # where the plan would take it for the first key): left out of every read.
            self._statement = self._statement.where(key.is_not(None))
        self._key = key
        self._lastmod = lastmod
        self._entry = entry
        # One ORM entity (select(Product)): entry gets the object, not a one-element row.
        self._scalars = one_entity(statement)

    def _page(self, first: Key | None, limit: int, end: Key | None) -> Statement:
        """``WHERE key >= :first AND key < :end ORDER BY key LIMIT :limit``: one page's rows
        (page 1 has no ``first``, the last no ``end``: see `sources`)."""
        statement = self._statement
        if first is not None:
            statement = statement.where(self._key >= self._decode(first))
        if end is not None:
            statement = statement.where(self._key < self._decode(end))
        statement = statement.order_by(self._key).limit(limit)
        if "yield_per" in statement.get_execution_options():
            return statement
        return statement.execution_options(yield_per=YIELD_PER)

    def _plan(self, page_size: int, *, newest: bool = True) -> Statement:
        """Every page's first key, whether its step was stuck, and (with ``newest``) its newest
        lastmod, in key order, in one statement.

        A recursive CTE seeks from each page's first key to the next one ``page_size`` keys
        on (the key's index is read once, end to end); a page's lastmod is the MAX over
        its rows, read exactly as the page is. ``ROW_NUMBER() OVER (ORDER BY key)`` grouped
        by page does the same in one pass, but SQLite takes tens of seconds for it at 10M
        rows, against 0.3 s for these seeks (most of a plan's cost is the MAX).

        Each row carries the key it stepped from: a step that did not move (more rows share
        one key than a page holds: a key that is not unique, or a join that repeats rows)
        would seek from the same key forever, so the recursion ends there and that last row
        is ``stuck`` (`_stuck`).
        """
        key = self._key
        keys = self._statement.with_only_columns(key, maintain_column_froms=True).order_by(key).limit(1)
        head = select(keys.scalar_subquery().label("first")).subquery("sitemap_head")
        page: ColumnElement[int] = literal_column("1")
        # Page 1's "previous" is never compared: it is its own first key, for the column's type.
        starts: Any = select(head.c.first, head.c.first.label("previous"), page.label("page"))
        starts = starts.cte("sitemap_pages", recursive=True)
        following = keys.where(key >= starts.c.first).offset(page_size).scalar_subquery()
        moved = or_(starts.c.page == page, starts.c.first != starts.c.previous)
        starts = starts.union_all(
            select(following, starts.c.first, starts.c.page + page).where(starts.c.first.is_not(None), moved)
        )
        stuck = and_(starts.c.page > page, starts.c.first == starts.c.previous)
        columns: list[Any] = [starts.c.first, stuck.label("stuck")]
        if newest and self._lastmod is not None:
            columns.append(self._newest(starts.c.first, page_size, starts).label("newest"))
        return select(*columns).where(starts.c.first.is_not(None)).order_by(starts.c.page)

    def _stuck(self, rows: list[Any]) -> Any | None:
        """The first key of the plan's stuck page (`_plan`), if it has one."""
        return next((row.first for row in rows if row.stuck), None)

    def _sharing(self, first: Any) -> Statement:
        """How many of the statement's rows have key ``first``."""
        return select(func.count()).select_from(self._statement.where(self._key == first).subquery())

    def _newest(self, first: Any, page_size: int, outer: Any = None) -> Any:
        """MAX(lastmod) over the ``page_size`` rows from key ``first``: a page's newest.

        The LIMIT keeps the page's rows read by key: unlimited, SQLite would answer the
        MAX from the lastmod's index, walking it from the newest row for every page.
        """
        lastmod: Any = self._lastmod
        page = (
            self._statement.with_only_columns(lastmod.label("lastmod"), maintain_column_froms=True)
            .where(self._key >= first)
            .order_by(self._key)
            .limit(page_size)
        )
        if outer is not None:  # ``first`` is a column of the plan's CTE
            page = page.correlate(outer)
        return select(func.max(page.subquery().c.lastmod)).scalar_subquery()

    def _walk(self, pages: int, page_size: int) -> Statement:
        """(key, lastmod), newest first, NULL lastmods left out: `sitemap_middleware.sql.newest_first`."""
        lastmod: Any = self._lastmod
        return (
            self._statement.with_only_columns(self._key, lastmod, maintain_column_froms=True)
            .where(lastmod.is_not(None))
            .order_by(lastmod.desc())
            .limit(walk_limit(pages, page_size))
            .execution_options(yield_per=WALK_BATCH)
        )

    def _leftover(self, walk: NewestFirst[Any], page_size: int) -> Iterator[tuple[list[int], Statement]]:
        """The pages a walk left without a lastmod, a batch at a time, and the MAX of each."""
        for batch in walk.missing():
            newest = [
                self._newest(walk.starts[page], page_size).label(f"p{n}") for n, page in enumerate(batch)
            ]
            yield batch, select(*newest)

    def _walked(self, firsts: list[Any], walk: NewestFirst[Any]) -> list[PageStart]:
        return [PageStart(self._encode(first), walk.found.get(n)) for n, first in enumerate(firsts)]

    def _starts(self, rows: list[Any]) -> list[PageStart]:
        return [PageStart(self._encode(row.first), getattr(row, "newest", None)) for row in rows]


class Keyset(_Keyset):
    """A `sources.PagedSource` over a sync ``Engine`` or ``sessionmaker``: see the module."""

    def __init__(
        self,
        bind: Engine | sessionmaker[Any],
        statement: Statement,
        *,
        key: Any,
        entry: Entry,
        lastmod: Any | None = None,
    ) -> None:
        super().__init__(statement, key, entry, lastmod)
        self._sessions = sessionmaker(bind) if isinstance(bind, Engine) else bind

    def pages(self, page_size: int) -> list[PageStart]:
        # Cancelled on the database if its thread is abandoned past its deadline.
        with self._sessions() as session, cancel_on_abandon(self._canceller(session)):
            return self._planned(session, page_size)

    def _planned(self, session: Session, page_size: int) -> list[PageStart]:
        rows = list(session.execute(self._plan(page_size, newest=not self._walks)))
        stuck = self._stuck(rows)
        if stuck is not None:
            raise key_not_unique(stuck, session.scalar(self._sharing(stuck)) or 0, page_size)
        if not self._walks:
            return self._starts(rows)
        firsts = [row.first for row in rows]
        walk: NewestFirst[Any] = NewestFirst(firsts)
        if firsts:
            result = session.execute(self._walk(len(firsts), page_size))
            try:
                walk.feed((key, lastmod) for key, lastmod in result)
            finally:
                result.close()
        for batch, statement in self._leftover(walk, page_size):
            walk.found.update(zip(batch, session.execute(statement).one(), strict=True))
        return self._walked(firsts, walk)

    def entries(self, first: Key | None, limit: int, end: Key | None = None) -> Iterator[object]:
        return self._read(self._page(first, limit, end))

    def _read(self, statement: Statement) -> Iterator[object]:
        # The session is opened and closed in this frame: a generator closed before it
        # starts has taken nothing, one closed mid-page closes the result and the session.
        with self._sessions() as session:
            cancel = self._canceller(session)
            # Each round trip is cancelled on the database if its thread is abandoned past
            # its deadline (never a yield inside: the next chunk may run in another call).
            with cancel_on_abandon(cancel):
                result = session.execute(statement)
            try:
                rows = result.scalars() if self._scalars else result
                while True:
                    with cancel_on_abandon(cancel):
                        batch = rows.fetchmany(YIELD_PER)
                    if not batch:
                        return
                    for row in batch:
                        yield self._entry(row)
            finally:
                result.close()

    def _canceller(self, session: Session) -> Callable[[], object] | None:
        """How to cancel the statement ``session``'s connection runs (`sitemap_middleware.sql.cancelling`)."""
        connection = session.connection(bind_arguments={"clause": self._statement})
        return canceller(connection.connection.dbapi_connection)


class AsyncKeyset(_Keyset):
    """A `sources.PagedSource` over an ``AsyncEngine`` or ``async_sessionmaker``: see the module."""

    def __init__(
        self,
        bind: AsyncEngine | async_sessionmaker[Any],
        statement: Statement,
        *,
        key: Any,
        entry: Entry,
        lastmod: Any | None = None,
    ) -> None:
        from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker

        super().__init__(statement, key, entry, lastmod)
        self._sessions = async_sessionmaker(bind) if isinstance(bind, AsyncEngine) else bind

    async def pages(self, page_size: int) -> list[PageStart]:
        async with self._session() as session:
            cancel = await self._canceller(session)
            return await cancellable(cancel, self._planned(session, page_size))

    async def _planned(self, session: AsyncSession, page_size: int) -> list[PageStart]:
        rows = list(await session.execute(self._plan(page_size, newest=not self._walks)))
        stuck = self._stuck(rows)
        if stuck is not None:
            raise key_not_unique(stuck, await session.scalar(self._sharing(stuck)) or 0, page_size)
        if not self._walks:
            return self._starts(rows)
        firsts = [row.first for row in rows]
        walk: NewestFirst[Any] = NewestFirst(firsts)
        if firsts:
            result = await session.stream(self._walk(len(firsts), page_size))
            try:
                while (fetched := await result.fetchmany(WALK_BATCH)) and not walk.feed(fetched):
                    pass
            finally:
                await result.close()
        for batch, statement in self._leftover(walk, page_size):
            found = (await session.execute(statement)).one()
            walk.found.update(zip(batch, found, strict=True))
        return self._walked(firsts, walk)

    async def entries(self, first: Key | None, limit: int, end: Key | None = None) -> AsyncIterator[object]:
        async with self._session() as session:
            cancel = await self._canceller(session)
            result = await cancellable(cancel, session.stream(self._page(first, limit, end)))
            try:
                rows = result.scalars() if self._scalars else result
                while batch := await cancellable(cancel, rows.fetchmany(YIELD_PER)):
                    for row in batch:
                        yield self._entry(row)
            finally:
                await shielded(result.close())

    @asynccontextmanager
    async def _session(self) -> AsyncIterator[AsyncSession]:
        """A session closed whole on every way out, a cancelled task's too: cancelled while it
        closes, SQLAlchemy would terminate its connection and leave the close running on
        (a task the event loop may not outlive: under WSGI each request has its own)."""
        session = self._sessions()
        try:
            yield session
        finally:
            await shielded(session.close())

    async def _canceller(self, session: AsyncSession) -> Callable[[], Awaitable[object]] | None:
        """How to cancel, on the database, the statement ``session``'s connection runs
        (`_cancellable`): aiosqlite's ``interrupt``; for PostgreSQL, ``pg_cancel_backend`` of
        the connection's backend, on a connection of its own (asyncpg has no public cancel)."""
        connection = await session.connection(bind_arguments={"clause": self._statement})
        driver = (await connection.get_raw_connection()).driver_connection
        interrupt = getattr(driver, "interrupt", None)  # aiosqlite
        if callable(interrupt):
            return interrupt  # type: ignore[no-any-return]
        pid = backend_pid(driver)
        if pid is None:
            return None
        engine = connection.engine

        async def cancel() -> None:
            async with engine.connect() as other:
                await other.execute(select(func.pg_cancel_backend(pid)))

        return cancel


@overload
def keyset(
    bind: Engine | sessionmaker[Any],
    statement: Statement,
    *,
    key: Any,
    entry: Entry,
    lastmod: Any | None = None,
) -> Keyset: ...


@overload
def keyset(
    bind: AsyncEngine | async_sessionmaker[Any],
    statement: Statement,
    *,
    key: Any,
    entry: Entry,
    lastmod: Any | None = None,
) -> AsyncKeyset: ...


def keyset(
    bind: Engine | sessionmaker[Any] | AsyncEngine | async_sessionmaker[Any],
    statement: Statement,
    *,
    key: Any,
    entry: Entry,
    lastmod: Any | None = None,
) -> Keyset | AsyncKeyset:
    """A paged source reading ``statement``'s rows by ``key``, for `Sitemaps.add_provider`.

    - ``bind``: an ``Engine`` or ``sessionmaker`` (`Keyset`), or an ``AsyncEngine`` or
      ``async_sessionmaker`` (`AsyncKeyset`, for async apps).
    - ``statement``: a ``select()``; its ORDER BY is replaced by the key's, and a LIMIT or
      OFFSET is refused (pages are cut by the key).
    - ``key``: a column (or mapped attribute) of the statement whose values are unique and
      ordered: a page is the rows from its first key on, in key order. Rows whose key
      is NULL are left out. A column its ``Table`` does not declare unique (primary key,
      unique constraint or index on it alone) is refused; a key the statement repeats
      anyway (a join), more times than a page holds, makes the plan a `ProviderError`.
    - ``entry``: turns one row (or the mapped object of a one-entity statement) into an
      entry: a `Url`, a loc string or a mapping.
    - ``lastmod``: a column (or expression) whose newest value on a page is that page's
      ``<lastmod>`` in the index; without it the index lists no lastmod. Index that
      column (``index=True``, in the database too) to plan 10M rows in 0.2 s rather than 2.5.
    """
    if isinstance(bind, Engine | sessionmaker):
        return Keyset(bind, statement, key=key, entry=entry, lastmod=lastmod)
    async_binds = _async_binds()
    if async_binds is not None and isinstance(bind, async_binds):
        return AsyncKeyset(bind, statement, key=key, entry=entry, lastmod=lastmod)
    raise ConfigurationError(
        "keyset's bind must be an Engine, AsyncEngine, sessionmaker or async_sessionmaker, "
        f"not {type(bind).__name__}"
    )


def _async_binds() -> tuple[type, ...] | None:
    """``(AsyncEngine, async_sessionmaker)``, or ``None`` when no async bind can exist.

    Either one is made by code that imported ``sqlalchemy.ext.asyncio``, so a bind can be
    async only once that module is loaded: asking ``sys.modules`` never imports it (nor
    greenlet, which it needs).
    """
    module = sys.modules.get("sqlalchemy.ext.asyncio")
    return None if module is None else (module.AsyncEngine, module.async_sessionmaker)
