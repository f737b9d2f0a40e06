"""A QuerySet as a paged source: its pages are ranges of an ordered unique key.

``keyset(queryset)`` reads page n with ``WHERE key >= first AND key < next ORDER BY key``,
never with ``OFFSET``, so page 200 costs what page 1 costs; where every page starts, and its
newest lastmod, come from one query in the database (`key_ranges.KeyRanges`). An entry's
naive lastmod is made aware in ``TIME_ZONE`` under ``USE_TZ = False`` (`time_zones`)::

    sitemaps.add_provider("products", keyset(Product.objects.filter(published=True)))
"""

# A module of sitemap_middleware.django: every import of Django's own package is absolute.
from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from django.db.models import Field, Model, QuerySet

from sitemap_middleware.django.key_ranges import CHUNK_SIZE, KeyRanges
from sitemap_middleware.django.time_zones import aware_entry, local_zone
from sitemap_middleware.errors import ConfigurationError
from sitemap_middleware.protocol.entries import Url
from sitemap_middleware.sources import Key, PageStart

__all__ = ["KeysetSource", "keyset"]

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
      ``Url(row.get_absolute_url(), lastmod=<the lastmod field>)``. With ``USE_TZ = False``
      a naive lastmod it returns is in ``TIME_ZONE``, as Django's are, and published in
      UTC (`time_zones`: a conversion per entry, none with ``USE_TZ``).
    - ``key``: the unique field pages are ranges of (``pk``, or any unique field).
    - ``lastmod``: the field whose newest value per page the index shows (``None``: none);
      ``entry``'s lastmod should be that field. Index it (``db_index=True`` or a
      ``Meta.indexes`` entry led by it) and, with an integer key, the plan reads a few
      rows newest first over that index instead of every row's lastmod (timed in
      benchmarks/HISTORY.md): the same lastmods either way.
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
        self._keys = KeyRanges(queryset, key, lastmod, chunk_size)
        if entry is None:
            entry = _default_entry(queryset.model, self._keys.lastmod)
        elif not callable(entry):
            raise ConfigurationError(f"entry must be callable, not {type(entry).__name__}")
        self._entry = entry

    def pages(self, page_size: int) -> list[PageStart]:
        return self._keys.plan(page_size)

    def entries(self, first: Key | None, limit: int, end: Key | None = None) -> Iterator[object]:
        entry, rows, zone = self._entry, self._keys.rows(first, limit, end), local_zone()
        if zone is None:  # USE_TZ = True: Django's datetimes are aware, and a page costs nothing more
            return (entry(row) for row in rows)
        return (aware_entry(entry(row), zone) for row in rows)


def _default_entry(model: type[Model], lastmod: Field[Any, Any] | None) -> Entry:
    if not callable(getattr(model, "get_absolute_url", None)):
        raise ConfigurationError(
            f"{model.__name__} has no get_absolute_url(): pass entry=lambda row: Url(...) to keyset"
        )
    if lastmod is None:
        return lambda row: Url(row.get_absolute_url())
    attname = lastmod.attname
    return lambda row: Url(row.get_absolute_url(), lastmod=getattr(row, attname))
