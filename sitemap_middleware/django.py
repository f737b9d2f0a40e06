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
from typing import Any

from django.db.models import Field, Model, QuerySet

from sitemap_middleware.django_keys import CHUNK_SIZE, KeyRanges
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
        self._keys = KeyRanges(queryset, key, lastmod, chunk_size)
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
