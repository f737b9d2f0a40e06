"""What the SQLAlchemy keyset reads of its columns and statement, checked at registration.

How a key is kept in a plan (stored as JSON in any cache store: ints, strings and floats as
they are, a ``Uuid``, ``DateTime``, ``Date`` or ``Numeric`` key as its exact string), whether
the key's ``Table`` says its values are unique, whether it declares an index led by the
lastmod column, and whether a statement selects one ORM entity::

    encode, decode = codec(key.type.python_type, key.type)
    declared_unique(table.c.code)      # True, False, or None: the schema cannot tell
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import Index, Table, UniqueConstraint, inspect
from sqlalchemy.sql.elements import ColumnElement

from sitemap_middleware.errors import ConfigurationError
from sitemap_middleware.sources import Key

__all__ = ["codec", "column_of", "declared_unique", "indexed", "one_entity"]

# A key the plan stores as a string: (to string, back) for the key column's Python type.
_CODECS: dict[type, tuple[Callable[[Any], str], Callable[[Key], Any]]] = {
    uuid.UUID: (str, lambda key: uuid.UUID(str(key))),
    datetime: (datetime.isoformat, lambda key: datetime.fromisoformat(str(key))),
    date: (date.isoformat, lambda key: date.fromisoformat(str(key))),
    Decimal: (str, lambda key: Decimal(str(key))),
}


def column_of(value: object, what: str) -> ColumnElement[Any]:
    """``value`` (a column, or a mapped attribute) as a column, or a `ConfigurationError`."""
    element = value.__clause_element__() if hasattr(value, "__clause_element__") else value
    if not isinstance(element, ColumnElement):
        raise ConfigurationError(f"keyset's {what} must be a column or mapped attribute, not {value!r}")
    return element


def declared_unique(column: ColumnElement[Any]) -> bool | None:
    """Whether ``column``'s table says its values are unique: a primary key, a unique
    constraint or a unique index on that column alone (a partial index does not count).
    ``None`` where the schema cannot tell: an expression, a column of a subquery or alias."""
    table = getattr(column, "table", None)
    if not isinstance(table, Table):
        return None
    name = getattr(column, "name", None)
    if getattr(column, "unique", False) or [c.name for c in table.primary_key.columns] == [name]:
        return True
    for index in table.indexes:
        if index.unique and not _partial(index) and [c.name for c in index.columns] == [name]:
            return True
    return any(
        isinstance(constraint, UniqueConstraint) and [c.name for c in constraint.columns] == [name]
        for constraint in table.constraints
    )


def indexed(column: ColumnElement[Any]) -> bool:
    """Whether ``column``'s table declares an index led by it (``index=True``, an ``Index``,
    unique): what lets the database hand rows over newest first. Partial indexes do not count."""
    table = getattr(column, "table", None)
    if not isinstance(table, Table):
        return False  # an expression, or a column of a subquery
    name = getattr(column, "name", None)
    if getattr(column, "unique", False) or getattr(column, "index", False):
        return True
    for index in table.indexes:
        if not _partial(index) and [c.name for c in index.columns][:1] == [name]:
            return True
    return any(
        isinstance(constraint, UniqueConstraint) and [c.name for c in constraint.columns][:1] == [name]
        for constraint in table.constraints
    )


def codec(python_type: type, key_type: object) -> tuple[Callable[[Any], Key], Callable[[Key], Any]]:
    """How a key is stored in the plan (an int, str or float) and read back for comparing."""
    if python_type in (int, str, float, object):  # object: an untyped column, checked per value
        return _plain, _same
    if python_type in _CODECS:
        return _CODECS[python_type]
    raise ConfigurationError(
        f"keyset's key is a {key_type} column ({python_type.__name__} values): use an int, str, "
        "float, Uuid, DateTime, Date or Numeric column"
    )


def _partial(index: Index) -> bool:
    """Whether ``index`` covers some rows only (``postgresql_where``, ``sqlite_where``)."""
    return any(options.get("where") is not None for options in index.dialect_options.values())


def _plain(value: object) -> Key:
    if isinstance(value, bool) or not isinstance(value, int | str | float):
        raise TypeError(f"key {value!r} is not an int, str or float: give the key column a type")
    return value


def _same(key: Key) -> Key:
    return key


def one_entity(statement: Any) -> bool:
    """Whether ``statement`` selects one ORM entity (``select(Product)``): rows are its objects."""
    descriptions = statement.column_descriptions
    if len(descriptions) != 1:
        return False
    inspected = inspect(descriptions[0]["expr"], raiseerr=False)
    return bool(getattr(inspected, "is_mapper", False) or getattr(inspected, "is_aliased_class", False))
