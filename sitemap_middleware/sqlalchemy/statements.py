"""The statements a SQLAlchemy keyset runs, the same for its sync and async flavours.

`KeysetStatements` checks the statement, its key and lastmod once, when the section is
registered (`columns`), and builds:

- a page: ``<statement> AND key >= :first AND key < :next ORDER BY key LIMIT :rows``;
- the plan: one recursive CTE seeking from each page's first key to the next, with each
  page's ``MAX(lastmod)`` unless the walk replaces it;
- the walk: ``(key, lastmod)`` newest first over the lastmod's index
  (`sitemap_middleware.sql.newest_first`), and the ``MAX`` of the pages it leaves.

`keysets.Keyset` and `keysets.AsyncKeyset` run them, each in sessions of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from sqlalchemy import Select, and_, func, literal_column, or_, select
from sqlalchemy.sql.elements import ColumnElement

from sitemap_middleware.errors import ConfigurationError
from sitemap_middleware.sources import Key, PageStart
from sitemap_middleware.sql.newest_first import WALK_BATCH, NewestFirst, walk_limit
from sitemap_middleware.sqlalchemy.columns import codec, column_of, declared_unique, indexed, one_entity

__all__ = ["YIELD_PER", "Entry", "KeysetStatements"]

if TYPE_CHECKING:
    # Written for 2.1's variadic Select; 2.0's takes one tuple type.
    Statement = Select[*tuple[Any, ...]]
Entry = Callable[[Any], object]

# Rows fetched per round trip: a page's rows stream instead of being held all at once.
YIELD_PER = 1000


class KeysetStatements:
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
        by page does the same in one pass, but numbers every row, far slower than the
        seeks; most of a plan's cost is the MAX (benchmarks/HISTORY.md, "keyset pages over
        10M rows").

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
