"""Django: a QuerySet as a section of the sitemap.

`keyset` makes a QuerySet a paged source (`sitemap_middleware.sources`): its pages are ranges
of an ordered unique key, read with ``WHERE key >= first ORDER BY key LIMIT n`` and never with
``OFFSET``, so page 200 costs what page 1 costs; where every page starts, and its newest
lastmod, come from one query in the database::

    # myproject/sitemaps.py
    from sitemap_middleware import Sitemaps
    from sitemap_middleware.django import keyset

    from shop.models import Product

    sitemaps = Sitemaps(base_url="https://shop.example")
    sitemaps.add_provider("products", keyset(Product.objects.filter(published=True)))

    # myproject/wsgi.py                                # myproject/asgi.py
    application = sitemaps.wsgi(get_wsgi_application())  # sitemaps.asgi(get_asgi_application())

It is synchronous: under ASGI the adapter calls it in worker threads, where Django's
ORM may be used (its async-unsafe guard only objects on a thread running an event loop).
Each query is whole within one call, and a connection is handed back between queries the
way Django's request cycle would (closed if broken or past ``CONN_MAX_AGE``, never inside
a transaction): a page's rows may be fetched by several worker threads in turn.
"""

# This module is sitemap_middleware.django: every import of Django's own package is absolute.
from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import date
from typing import Any

from django.core.exceptions import FieldDoesNotExist
from django.db import connections
from django.db.models import F, Field, Model, QuerySet
from django.db.models.query import ModelIterable

from sitemap_middleware.errors import ConfigurationError
from sitemap_middleware.protocol.entries import Url
from sitemap_middleware.sources import Key, PageStart

__all__ = ["KeysetSource", "keyset"]

CHUNK_SIZE = 2000  # rows per query within a page: memory stays flat, and no cursor outlives a call
Entry = Callable[[Any], object]


def keyset(
    queryset: QuerySet[Any],
    entry: Entry | None = None,
    *,
    key: str = "pk",
    lastmod: str | None = "updated_at",
    chunk_size: int = CHUNK_SIZE,
) -> KeysetSource:
    """A QuerySet as a paged source, read by ranges of an ordered unique key.

    Example::

        keyset(Product.objects.filter(published=True),
               entry=lambda p: Url(p.get_absolute_url(), lastmod=p.updated_at, priority=0.8))

    - ``queryset``: model instances (``.only()`` and ``select_related()`` are kept).
    - ``entry``: a row to its entry (a `Url`, a loc, a mapping); by default
      ``Url(row.get_absolute_url(), lastmod=<the lastmod field>)``.
    - ``key``: the unique field pages are ranges of (``pk``, or any unique field).
    - ``lastmod``: the field whose newest value per page the index shows (``None``: none);
      ``entry``'s lastmod should be that field.
    - ``chunk_size``: rows per query within a page.
    """
    return KeysetSource(queryset, entry, key=key, lastmod=lastmod, chunk_size=chunk_size)


class KeysetSource:
    """What `keyset` returns: a `sources.PagedSource` over one QuerySet."""

    def __init__(
        self,
        queryset: QuerySet[Any],
        entry: Entry | None,
        *,
        key: str,
        lastmod: str | None,
        chunk_size: int = CHUNK_SIZE,
    ) -> None:
        self._keys = _Keys(queryset, key, lastmod, chunk_size)
        if entry is None:
            entry = _default_entry(queryset.model, self._keys.lastmod)
        elif not callable(entry):
            raise ConfigurationError(f"entry must be callable, not {type(entry).__name__}")
        self._entry = entry

    def pages(self, page_size: int) -> list[PageStart]:
        return self._keys.plan(page_size)

    def entries(self, first: Key, limit: int) -> Iterator[object]:
        return (self._entry(row) for row in self._keys.rows(first, limit))


def _default_entry(model: type[Model], lastmod: Field[Any, Any] | None) -> Entry:
    if not callable(getattr(model, "get_absolute_url", None)):
        raise ConfigurationError(
            f"{model.__name__} has no get_absolute_url(): pass entry=lambda row: Url(...) to keyset"
        )
    if lastmod is None:
        return lambda row: Url(row.get_absolute_url())
    attname = lastmod.attname
    return lambda row: Url(row.get_absolute_url(), lastmod=getattr(row, attname))


class _Keys:
    """Ranges of one unique key over a QuerySet: where every page starts, and one page's rows."""

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
        self.key = _field(model, key)
        if not (self.key.primary_key or self.key.unique):
            raise ConfigurationError(
                f"{model.__name__}.{key} is not unique: pages are ranges of a key, so it must be one"
            )
        self.lastmod = None if lastmod is None else _field(model, lastmod)
        attname = self.key.attname
        if self.key.null:  # a unique key may still be NULL many times: such rows have no place
            queryset = queryset.filter(**{f"{attname}__isnull": False})
        self.queryset = queryset.order_by(attname)
        self.chunk_size = chunk_size

    def plan(self, rows: int, *, lastmod: bool = True) -> list[PageStart]:
        """Pages of ``rows`` rows: each one's first key and newest lastmod, in ONE query.

        The QuerySet's own SQL is numbered by key and grouped by page in the database,
        so no row crosses into Python; ``lastmod=False`` leaves the lastmods out.
        """
        alias = self.queryset.db
        connection = connections[alias]
        quote = connection.ops.quote_name
        key, page = quote("sitemap_key"), quote("sitemap_page")
        columns: dict[str, Any] = {"sitemap_key": F(self.key.attname)}
        newest = "NULL"
        if lastmod and self.lastmod is not None:
            columns["sitemap_lastmod"] = F(self.lastmod.attname)
            newest = f"MAX({quote('sitemap_lastmod')})"
        inner = self.queryset.order_by().values(**columns)
        sql, params = inner.query.get_compiler(using=alias).as_sql()
        numbered = _integer_division(f"ROW_NUMBER() OVER (ORDER BY {key}) - 1", rows, connection.vendor)
        query = (
            f"SELECT {_first(key, self.key, connection)}, {newest} FROM ("
            f"SELECT *, {numbered} AS {page} FROM ({sql}) {quote('sitemap_rows')}"
            f") {quote('sitemap_numbered')} GROUP BY {page} ORDER BY {page}"
        )
        try:
            with connection.cursor() as cursor:
                cursor.execute(query, params)
                found = cursor.fetchall()
        finally:
            _done_with(alias)
        last = self.lastmod
        return [
            PageStart(
                _plain(_from_db(first, self.key, alias)), None if last is None else _from_db(m, last, alias)
            )
            for first, m in found
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
                _done_with(self.queryset.db)
            yield from chunk
            if len(chunk) < size:
                return
            if limit is not None:
                limit -= size
            after = self.queryset.filter(**{f"{attname}__gt": getattr(chunk[-1], attname)})


def _field(model: type[Model], name: str) -> Field[Any, Any]:
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
    if vendor == "mysql":
        return f"({expression}) DIV {divisor}"
    if vendor == "oracle":
        return f"FLOOR(({expression}) / {divisor})"
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


def _plain(value: object) -> Key:
    """A key as a plan stores it (JSON): ints, strings and floats as they are, others as text
    the field parses back when it is filtered on (UUIDs, decimals, dates)."""
    if isinstance(value, bool):
        raise TypeError(f"a boolean key cannot order more than two rows: {value!r}")
    if isinstance(value, int | str | float):
        return value
    if isinstance(value, date):  # datetimes too
        return value.isoformat()
    return str(value)


def _done_with(alias: str) -> None:
    """What Django does when a request ends: close the connection if it is broken or past
    ``CONN_MAX_AGE``. Never inside a transaction (a test's, or the caller's)."""
    connection = connections[alias]
    if not connection.in_atomic_block:
        connection.close_if_unusable_or_obsolete()
