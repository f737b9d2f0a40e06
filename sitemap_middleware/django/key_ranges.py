"""Ranges of one unique key over a Django QuerySet: the paging behind `sitemap_middleware.django`.

`KeyRanges` answers the two questions of a paged source (`sitemap_middleware.sources`) for
a QuerySet: where every page of ``n`` rows starts, with its newest lastmod, in ONE query
that the database answers without sending a row to Python: a recursive CTE that seeks from
each page's first key to the next, ``n`` keys on (the key's index is read once, end to end),
the same plan as `sitemap_middleware.sqlalchemy`'s::

    WITH RECURSIVE sitemap_pages(sitemap_first, sitemap_previous, sitemap_number) AS (
        SELECT sitemap_first, sitemap_first, 1
        FROM (SELECT (SELECT key FROM (<the QuerySet>) ORDER BY key LIMIT 1) AS sitemap_first) sitemap_head
        UNION ALL
        SELECT (SELECT key FROM (<the QuerySet> AND key >= sitemap_first) ORDER BY key LIMIT 1 OFFSET n),
               sitemap_first, sitemap_number + 1
        FROM sitemap_pages
        WHERE sitemap_first IS NOT NULL AND (sitemap_number = 1 OR sitemap_first <> sitemap_previous))
    SELECT sitemap_first, <stuck: sitemap_number > 1 AND sitemap_first = sitemap_previous>,
           (SELECT MAX(lastmod) FROM (<the page's n rows from sitemap_first>))
    FROM sitemap_pages WHERE sitemap_first IS NOT NULL ORDER BY sitemap_number

and the rows of one page, read by key (``WHERE key >= first AND key < next ORDER BY key
LIMIT chunk``, then ``key > last``), never by ``OFFSET``. A step that does not move (more
rows share one key than a page holds: a join that repeats rows) ends the plan, which
reports it (`sources.key_not_unique`) rather than seek from that key forever. Tested on
SQLite and PostgreSQL.
"""

# A module of sitemap_middleware.django: every import of Django's own package is absolute.
from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager
from datetime import date, tzinfo
from typing import Any

from django.core.exceptions import FieldDoesNotExist
from django.db import connections
from django.db.models import F, Field, IntegerField, Model, QuerySet
from django.db.models.expressions import RawSQL
from django.db.models.query import ModelIterable

from sitemap_middleware.concurrency.deadlines import cancel_on_abandon
from sitemap_middleware.django.time_zones import aware, local_zone
from sitemap_middleware.errors import ConfigurationError
from sitemap_middleware.sources import Key, PageStart, key_not_unique
from sitemap_middleware.sql.cancelling import canceller
from sitemap_middleware.sql.newest_first import WALK_BATCH, NewestFirst, walk_limit

__all__ = ["CHUNK_SIZE", "KeyRanges", "done_with", "model_field", "plain_key"]

CHUNK_SIZE = 2000  # rows per query within a page: memory stays flat, and no cursor outlives a call


class KeyRanges:
    """Ranges of one unique key over a QuerySet: where every page starts, and one page's rows.

    ``key`` names a unique field (``pk`` for the primary key); rows where it is NULL have
    no place in any range and are left out. ``lastmod`` names the field whose newest value
    a page reports. Misconfiguration is a `ConfigurationError`, raised here.
    """

    def __init__(self, queryset: QuerySet[Any], key: str, lastmod: str | None, chunk_size: int) -> None:
        if not isinstance(queryset, QuerySet):
            raise ConfigurationError(f"keyset needs a QuerySet, not {type(queryset).__name__}")
        if queryset.query.is_sliced or queryset.query.combinator:
            raise ConfigurationError("keyset needs a QuerySet that can be filtered: not sliced, not a union")
        if queryset._iterable_class is not ModelIterable:
            raise ConfigurationError(
                "keyset reads model instances, not values() or values_list(): use .only() for fewer columns"
            )
        if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
            raise ConfigurationError(f"chunk_size must be a positive int, not {chunk_size!r}")
        model = queryset.model
        self.key = model_field(model, key)
        if not (self.key.primary_key or self.key.unique):
            raise ConfigurationError(
                f"{model.__name__}.{key} is not unique: pages are ranges of a key, so it must be one"
            )
        self.lastmod = None if lastmod is None else model_field(model, lastmod)
        attname = self.key.attname
        if self.key.null:  # a unique key may still be NULL many times: such rows have no place
            queryset = queryset.filter(**{f"{attname}__isnull": False})
        self.queryset = queryset.order_by(attname)
        self.chunk_size = chunk_size
        # Newest first over the lastmod's index (`sitemap_middleware.sql.newest_first`): only where the
        # model declares one, and for integer keys, whose order Python shares.
        self.walks = (
            self.lastmod is not None and isinstance(self.key, IntegerField) and _indexed(model, self.lastmod)
        )

    def plan(self, rows: int) -> list[PageStart]:
        """Pages of ``rows`` rows: each one's first key and newest lastmod.

        Each page's first key is found by seeking ``rows`` keys on from the one before
        (``LIMIT 1 OFFSET rows`` from a key, over the key's index), so no row crosses into
        Python; ``ROW_NUMBER() OVER (ORDER BY key)`` grouped by page gives the same in one
        pass, but numbers every row (benchmarks/HISTORY.md, "keyset pages over 10M rows"). Each page's
        newest lastmod is its rows' MAX, in the same query; or, when the model indexes the
        lastmod field and the key is an integer, read newest first over that index
        (`sitemap_middleware.sql.newest_first`), with MAX only for the pages that walk leaves. Either
        way a naive lastmod is in Django's ``TIME_ZONE`` (``USE_TZ = False``) and is made
        aware in it (`time_zones`).
        """
        if isinstance(rows, bool) or not isinstance(rows, int) or rows < 1:
            raise ValueError(f"page size must be a positive int, not {rows!r}")
        alias = self.queryset.db
        walks = self.walks
        zone = local_zone()
        try:
            with _cancellable(alias):  # on the database, if its thread is abandoned past its deadline
                return self._planned(rows, walks, zone)
        finally:
            done_with(alias)

    def _planned(self, rows: int, walks: bool, zone: tzinfo | None) -> list[PageStart]:
        alias = self.queryset.db
        found = self._execute(*self._seek(rows, newest=not walks))
        stuck = next((key for key, stuck, _ in found if stuck), None)
        if stuck is not None:
            key = _from_db(stuck, self.key, alias)
            raise key_not_unique(key, self.queryset.filter(**{self.key.attname: key}).count(), rows)
        if not walks:
            return [PageStart(self._key(key), aware(self._lastmod(v), zone)) for key, _, v in found]
        walk: NewestFirst[Any] = NewestFirst([key for key, _, _ in found])
        if found:
            self._walk(walk, rows)
        for batch in walk.missing():
            newest = [self._newest(walk.starts[page], rows) for page in batch]
            query = "SELECT " + ", ".join(sql for sql, _ in newest)
            [values] = self._execute(query, tuple(p for _, params in newest for p in params))
            walk.found.update(zip(batch, map(self._lastmod, values), strict=True))
        return [
            PageStart(self._key(key), aware(walk.found.get(n), zone)) for n, key in enumerate(walk.starts)
        ]

    def _seek(self, rows: int, *, newest: bool) -> tuple[str, tuple[Any, ...]]:
        """The plan's one query: the recursive seek, and (``newest``) each page's MAX.

        Each row carries the key it stepped from: a step that did not move (more rows share
        one key than a page holds: a join that repeats rows, a column unique only in the
        model) would seek from the same key forever, so the recursion ends there and that
        last row is flagged as stuck (its second column).
        """
        connection = connections[self.queryset.db]
        quote = connection.ops.quote_name
        pages, first = quote("sitemap_pages"), quote("sitemap_first")
        previous, number = quote("sitemap_previous"), quote("sitemap_number")
        attname = self.key.attname
        here = RawSQL(f"{pages}.{first}", ())  # the page start the recursive step is at
        head, head_params = self._sql(self.queryset.values_list(attname)[:1])
        step, step_params = self._sql(
            self.queryset.filter(**{f"{attname}__gte": here}).values_list(attname)[rows : rows + 1]
        )
        most, most_params = "NULL", ()
        if newest and self.lastmod is not None:
            most, most_params = self._newest(here, rows)
        moved = f"({pages}.{number} = 1 OR {pages}.{first} <> {pages}.{previous})"
        stuck = f"CASE WHEN {pages}.{number} > 1 AND {pages}.{first} = {pages}.{previous} THEN 1 ELSE 0 END"
        # Page 1's "previous" is never compared: it is its own first key, for the column's type.
        query = (
            f"WITH RECURSIVE {pages}({first}, {previous}, {number}) AS ("
            f"SELECT {first}, {first}, 1 FROM (SELECT ({head}) AS {first}) {quote('sitemap_head')} "
            f"UNION ALL SELECT ({step}), {pages}.{first}, {pages}.{number} + 1 FROM {pages} "
            f"WHERE {pages}.{first} IS NOT NULL AND {moved}) "
            f"SELECT {pages}.{first}, {stuck}, {most} FROM {pages} WHERE {pages}.{first} IS NOT NULL "
            f"ORDER BY {pages}.{number}"
        )
        return query, (*head_params, *step_params, *most_params)

    def _newest(self, first: Any, rows: int) -> tuple[str, tuple[Any, ...]]:
        """MAX(lastmod) over the ``rows`` rows from key ``first``: a page's newest.

        The LIMIT keeps the page's rows read by key: unlimited, SQLite would answer the
        MAX from the lastmod's index, walking it from the newest row for every page.
        """
        assert self.lastmod is not None
        quote = connections[self.queryset.db].ops.quote_name
        page = self.queryset.filter(**{f"{self.key.attname}__gte": first})
        sql, params = self._sql(page.values(sitemap_newest=F(self.lastmod.attname))[:rows])
        return f"(SELECT MAX({quote('sitemap_newest')}) FROM ({sql}) {quote('sitemap_page')})", params

    def _walk(self, walk: NewestFirst[Any], rows: int) -> None:
        """Feed ``walk`` (key, lastmod) newest first, until every page has its lastmod."""
        assert self.lastmod is not None
        lastmod = self.lastmod.attname
        newest = (
            self.queryset.filter(**{f"{lastmod}__isnull": False})
            .order_by(F(lastmod).desc())
            .values_list(self.key.attname, lastmod)[: walk_limit(len(walk.starts), rows)]
        )
        walked = newest.iterator(chunk_size=WALK_BATCH)
        try:
            walk.feed(walked)
        finally:
            close = getattr(walked, "close", None)  # a generator: its cursor goes now, not at exit
            if close is not None:
                close()

    def _execute(self, query: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        with connections[self.queryset.db].cursor() as cursor:
            cursor.execute(query, params)
            found: list[tuple[Any, ...]] = cursor.fetchall()
            return found

    def _sql(self, queryset: QuerySet[Any]) -> tuple[str, tuple[Any, ...]]:
        sql, params = queryset.query.get_compiler(using=self.queryset.db).as_sql()
        return sql, tuple(params)

    def _key(self, value: object) -> Key:
        return plain_key(_from_db(value, self.key, self.queryset.db))

    def _lastmod(self, value: object) -> Any:
        return None if self.lastmod is None else _from_db(value, self.lastmod, self.queryset.db)

    def rows(self, first: Key | None, limit: int | None, end: Key | None = None) -> Iterator[Any]:
        """At most ``limit`` rows from key ``first`` on (from the first, with ``None``) and
        before key ``end`` (to the last, with ``None``), in key order: one query per chunk,
        each seeking past the last key the one before it read."""
        attname = self.key.attname
        queryset = self.queryset if end is None else self.queryset.filter(**{f"{attname}__lt": end})
        after = queryset if first is None else queryset.filter(**{f"{attname}__gte": first})
        while limit is None or limit > 0:
            size = self.chunk_size if limit is None else min(self.chunk_size, limit)
            try:
                with _cancellable(self.queryset.db):
                    chunk = list(after[:size])
            finally:
                done_with(self.queryset.db)
            yield from chunk
            if len(chunk) < size:
                return
            if limit is not None:
                limit -= size
            after = queryset.filter(**{f"{attname}__gt": getattr(chunk[-1], attname)})


def _cancellable(alias: str) -> AbstractContextManager[None]:
    """The block's statements on ``alias`` are cancelled on the database if the thread
    running them is abandoned past its deadline (`sitemap_middleware.sql.cancelling`)."""
    connection = connections[alias]
    connection.ensure_connection()  # what the block's first query would do
    return cancel_on_abandon(canceller(connection.connection))


def _indexed(model: type[Model], field: Field[Any, Any]) -> bool:
    """Whether ``model`` declares an index led by ``field`` (``db_index``, ``unique``, or one
    of ``Meta.indexes``, either direction): what lets the database hand rows over newest
    first. Partial indexes (``condition=``) and expression indexes do not count."""
    if getattr(field, "db_index", False) or field.unique or field.primary_key:
        return True
    for index in model._meta.indexes:
        if index.condition is None and index.fields and index.fields[0].lstrip("-") == field.name:
            return True
    return False


def model_field(model: type[Model], name: str) -> Field[Any, Any]:
    """The column ``name`` (``pk``: the primary key) of ``model``, or a `ConfigurationError`."""
    try:
        field = model._meta.pk if name == "pk" else model._meta.get_field(name)
    except FieldDoesNotExist:
        raise ConfigurationError(
            f"{model.__name__} has no field {name!r}: name one of its fields (lastmod=None for none)"
        ) from None
    if not isinstance(field, Field) or not field.concrete or field.many_to_many:
        raise ConfigurationError(f"{model.__name__}.{name} is not a column of its table")
    return field


def _from_db(value: object, field: Field[Any, Any], alias: str) -> Any:
    """A raw value of ``field`` as the ORM would give it (SQLite's datetime text, for one)."""
    if value is None:
        return None
    connection = connections[alias]
    column = field.get_col(field.model._meta.db_table)
    for convert in connection.ops.get_db_converters(column) + column.get_db_converters(connection):
        value = convert(value, column, connection)
    return value


def plain_key(value: object) -> Key:
    """A key as a plan stores it (JSON): ints, strings and floats as they are, others as text
    the field parses back when it is filtered on (UUIDs, decimals, dates)."""
    if isinstance(value, bool):
        raise TypeError(f"a boolean key cannot order more than two rows: {value!r}")
    if isinstance(value, int | str | float):
        return value
    if isinstance(value, date):  # datetimes too
        return value.isoformat()
    return str(value)


def done_with(alias: str) -> None:
    """What Django does when a request ends: close the connection if it is broken or past
    ``CONN_MAX_AGE``. Never inside a transaction (a test's, or the caller's)."""
    connection = connections[alias]
    if not connection.in_atomic_block:
        connection.close_if_unusable_or_obsolete()
