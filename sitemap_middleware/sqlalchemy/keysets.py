"""`keyset`: a SQLAlchemy ``SELECT`` as a paged source, over a sync or an async bind.

`Keyset` runs the statements (`statements.KeysetStatements`) in a ``Session`` of its own per
read, `AsyncKeyset` in an ``AsyncSession``; each closes its session on every way out and
cancels, on the database, a statement nobody waits for (`sitemap_middleware.sql.cancelling`)::

    source = keyset(engine, select(product), key=product.c.id, entry=lambda row: f"/p/{row.id}")
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, overload

from sqlalchemy import func, select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session, sessionmaker

from sitemap_middleware.concurrency.deadlines import cancel_on_abandon
from sitemap_middleware.errors import ConfigurationError
from sitemap_middleware.sources import Key, PageStart, key_not_unique
from sitemap_middleware.sql.cancelling import backend_pid, cancellable, canceller, shielded
from sitemap_middleware.sql.newest_first import WALK_BATCH, NewestFirst
from sitemap_middleware.sqlalchemy.statements import YIELD_PER, Entry, KeysetStatements

__all__ = ["AsyncKeyset", "Keyset", "keyset"]

if TYPE_CHECKING:
    # Only for async engines, at run time (`_async_binds`): it needs greenlet, which
    # SQLAlchemy 2.1 no longer installs, and a sync keyset must import without it.
    from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

    from sitemap_middleware.sqlalchemy.statements import Statement


class Keyset(KeysetStatements):
    """A `sources.PagedSource` over a sync ``Engine`` or ``sessionmaker``: see the package."""

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


class AsyncKeyset(KeysetStatements):
    """A `sources.PagedSource` over an ``AsyncEngine`` or ``async_sessionmaker``: see the package."""

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
        (`sitemap_middleware.sql.cancelling.cancellable`): aiosqlite's ``interrupt``; for
        PostgreSQL, ``pg_cancel_backend`` of the connection's backend, on a connection of its
        own (asyncpg has no public cancel)."""
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
      column (``index=True``, in the database too): the plan then reads a few rows newest
      first rather than every row's lastmod (timed in benchmarks/HISTORY.md).
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
