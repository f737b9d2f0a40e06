"""Ranges of one unique key over a Django QuerySet: the paging behind `sitemap_middleware.django`.

`KeyRanges` answers the two questions of a paged source (`sitemap_middleware.sources`) for
a QuerySet: where every page of ``n`` rows starts, with its newest lastmod, in ONE query
that the database answers without sending a row to Python::

    SELECT MIN(sitemap_key), MAX(sitemap_lastmod) FROM (
        SELECT *, (ROW_NUMBER() OVER (ORDER BY sitemap_key) - 1) / n AS sitemap_page
        FROM (<the QuerySet's own SQL, selecting key AS sitemap_key, lastmod AS sitemap_lastmod>)
    ) GROUP BY sitemap_page ORDER BY sitemap_page

and the rows of one page, read by key (``WHERE key >= first ORDER BY key LIMIT chunk``,
then ``key > last``), never by ``OFFSET``. Tested on SQLite and PostgreSQL.
"""

# Every import of Django's own package is absolute: `sitemap_middleware.django` is a sibling.
from __future__ import annotations

from collections.abc import Iterator
from datetime import date
from typing import Any

from django.core.exceptions import FieldDoesNotExist
from django.db import connections
from django.db.models import F, Field, Model, QuerySet
from django.db.models.query import ModelIterable

from sitemap_middleware.errors import ConfigurationError
from sitemap_middleware.sources import Key, PageStart

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

    def plan(self, rows: int) -> list[PageStart]:
        """Pages of ``rows`` rows: each one's first key and newest lastmod, in ONE query.

        The QuerySet's own SQL is numbered by key and grouped by page in the database,
        so no row crosses into Python.
        """
        alias = self.queryset.db
        connection = connections[alias]
        quote = connection.ops.quote_name
        key, page, named = quote("sitemap_key"), quote("sitemap_page"), quote("sitemap_rows")
        columns: dict[str, Any] = {"sitemap_key": F(self.key.attname)}
        newest = "NULL"
        if self.lastmod is not None:
            columns["sitemap_lastmod"] = F(self.lastmod.attname)
            newest = f"MAX({quote('sitemap_lastmod')})"
        inner = self.queryset.order_by().values(**columns)
        sql, params = inner.query.get_compiler(using=alias).as_sql()
        numbered = _integer_division(f"ROW_NUMBER() OVER (ORDER BY {key}) - 1", rows, connection.vendor)
        query = (
            f"SELECT {_first(key, self.key, connection)}, {newest} FROM ("
            f"SELECT {named}.*, {numbered} AS {page} FROM ({sql}) {named}"
            f") {quote('sitemap_numbered')} GROUP BY {page} ORDER BY {page}"
        )
        try:
            with connection.cursor() as cursor:
                cursor.execute(query, params)
                found = cursor.fetchall()
        finally:
            done_with(alias)
        lastmod = self.lastmod
        return [
            PageStart(
                plain_key(_from_db(first, self.key, alias)),
                None if lastmod is None else _from_db(newest, lastmod, alias),
            )
            for first, newest in found
        ]

    def rows(self, first: Key | None, limit: int | None) -> Iterator[Any]:
        """At most ``limit`` rows from key ``first`` on (from the first, with ``None``), in key
        order: one query per chunk, each seeking past the last key the one before it read."""
        attname = self.key.attname
        after = self.queryset if first is None else self.queryset.filter(**{f"{attname}__gte": first})
        while limit is None or limit > 0:
            size = self.chunk_size if limit is None else min(self.chunk_size, limit)
            try:
                chunk = list(after[:size])
            finally:
                done_with(self.queryset.db)
            yield from chunk
            if len(chunk) < size:
                return
            if limit is not None:
                limit -= size
            after = self.queryset.filter(**{f"{attname}__gt": getattr(chunk[-1], attname)})


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


def _first(key: str, field: Field[Any, Any], connection: Any) -> str:
    """The first key of a page: rows are grouped in key order, so the smallest."""
    if connection.vendor == "postgresql" and field.db_type(connection) == "uuid":
        # PostgreSQL has no MIN(uuid); its text form compares bytewise in the same order.
        return f'MIN(CAST({key} AS text) COLLATE "C")'
    return f"MIN({key})"


def _integer_division(expression: str, divisor: int, vendor: str) -> str:
    if isinstance(divisor, bool) or not isinstance(divisor, int) or divisor < 1:
        raise ValueError(f"page size must be a positive int, not {divisor!r}")
    if vendor == "mysql":  # MySQL's "/" gives a decimal (untested here: SQLite and PostgreSQL are)
        return f"({expression}) DIV {divisor}"
    return f"({expression}) / {divisor}"  # SQLite, PostgreSQL: integer operands, integer quotient


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
