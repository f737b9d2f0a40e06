"""One of Django's own ``Sitemap`` classes (``django.contrib.sitemaps``) as a paged source.

``from_sitemap(BlogSitemap())`` lists what Django's own view lists for that class: its
``items()``, ``location()``, ``lastmod``, ``changefreq``, ``priority``, ``limit`` and
``i18n``. Items that are a QuerySet ordered by one unique, non-null field are paged by
ranges of that key (`key_ranges.KeyRanges`); anything else is iterated, as Django's
paginator does::

    sitemaps.add_provider("blog", from_sitemap(BlogSitemap(), lastmod="updated_at"))
"""

# A module of sitemap_middleware.django: every import of Django's own package is absolute.
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import tzinfo
from decimal import Decimal, InvalidOperation
from itertools import islice
from typing import Any

from django.conf import settings
from django.contrib.sitemaps import GenericSitemap, Sitemap
from django.db.models import QuerySet
from django.db.models.query import ModelIterable
from django.utils import translation

from sitemap_middleware.django.key_ranges import CHUNK_SIZE, KeyRanges, done_with, model_field, plain_key
from sitemap_middleware.django.time_zones import aware, local_zone
from sitemap_middleware.errors import ConfigurationError, EntryError
from sitemap_middleware.protocol.entries import Url, w3c_datetime
from sitemap_middleware.protocol.extensions import Alternate
from sitemap_middleware.sources import Key, PageStart

__all__ = ["SitemapSource", "from_sitemap"]


def from_sitemap(
    sitemap: Sitemap[Any] | type[Sitemap[Any]], *, lastmod: str | None = None, chunk_size: int = CHUNK_SIZE
) -> SitemapSource:
    """A ``django.contrib.sitemaps.Sitemap`` as a paged source, listing what Django's own view lists.

    Example::

        sitemaps.add_provider("blog", from_sitemap(BlogSitemap(), lastmod="updated_at"))

    Everything the class defines is honoured: ``items()``, ``location()``, ``lastmod``,
    ``changefreq`` and ``priority`` (attributes or methods), ``limit`` (the most URLs on a
    page; a smaller ``page_size`` wins), and ``i18n`` with ``languages`` or
    ``get_languages_for_item()``: one URL per language, at the location Django gives it with
    that language active. URLs are on ``base_url`` (Django takes the request's site and
    ``protocol``). When ``items()`` is a QuerySet ordered by one unique, non-null field,
    pages are ranges of that key; anything else is iterated, as Django's paginator does.

    - ``sitemap``: an instance, or the class (as Django's views take either).
    - ``lastmod``: the field ``lastmod()`` returns, for a QuerySet: each page's newest then
      comes from the one planning query, instead of from ``lastmod()`` on every item
      (a ``GenericSitemap``'s ``date_field`` is used without being named).
    - ``chunk_size``: rows per query within a page.
    """
    return SitemapSource(sitemap, lastmod=lastmod, chunk_size=chunk_size)


class SitemapSource:
    """What `from_sitemap` returns: a `sources.PagedSource` over a Django ``Sitemap``."""

    def __init__(
        self,
        sitemap: Sitemap[Any] | type[Sitemap[Any]],
        *,
        lastmod: str | None = None,
        chunk_size: int = CHUNK_SIZE,
    ) -> None:
        if isinstance(sitemap, type) and issubclass(sitemap, Sitemap):
            sitemap = sitemap()
        if not isinstance(sitemap, Sitemap):
            raise ConfigurationError(f"from_sitemap needs a django Sitemap, not {type(sitemap).__name__}")
        if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
            raise ConfigurationError(f"chunk_size must be a positive int, not {chunk_size!r}")
        if isinstance(sitemap.limit, bool) or not isinstance(sitemap.limit, int) or sitemap.limit < 1:
            raise ConfigurationError(f"{type(sitemap).__name__}.limit must be a positive int")
        if lastmod is None and isinstance(sitemap, GenericSitemap):
            lastmod = sitemap.date_field
        self.sitemap = sitemap
        self._lastmod_field = lastmod
        self._chunk_size = chunk_size
        self._location = _attribute(sitemap, "location")
        self._lastmod = _attribute(sitemap, "lastmod")
        self._changefreq = _attribute(sitemap, "changefreq")
        self._priority = _attribute(sitemap, "priority")
        # Languages chosen per item: a page's items are known only by counting their URLs.
        self._languages_vary = type(sitemap).get_languages_for_item is not Sitemap.get_languages_for_item
        # What `Sitemaps.add_provider` declares for the section: hreflang groups, as Django's
        # view writes them, when the sitemap asks for alternates.
        self.extensions: tuple[str, ...] = ("alternates",) if sitemap.i18n and sitemap.alternates else ()

    def pages(self, page_size: int) -> list[PageStart]:
        size = min(page_size, self.sitemap.limit)
        items = self.sitemap.items()
        keyset = self._keyset(items)
        if keyset is None:
            return self._measured(((n, item) for n, (item, _) in enumerate(self._pairs(items))), size)
        keys, per_item = keyset
        rows = self._rows(size, per_item)
        if self._lastmod_field is not None:
            return keys.plan(rows)  # each page's newest comes from the planning query
        lastmod = getattr(self.sitemap, "lastmod", None)
        if not callable(lastmod):  # none, or one value for every item
            lastmod = aware(lastmod, local_zone())
            return [page._replace(lastmod=lastmod) for page in keys.plan(rows)]
        # lastmod() is a method and no field is named: each page's newest is read off its rows.
        attname = keys.key.attname
        keyed = ((plain_key(getattr(row, attname)), row) for row in keys.rows(None, None))
        return self._measured(keyed, rows)

    def entries(self, first: Key | None, limit: int, end: Key | None = None) -> Iterator[Url]:
        size = min(limit, self.sitemap.limit)
        items = self.sitemap.items()
        keyset = self._keyset(items)
        zone = local_zone()
        if keyset is None:
            first = 0 if first is None else first  # page 1
            if isinstance(first, bool) or not isinstance(first, int):
                raise TypeError(f"a page of an iterated sitemap starts at a position, not {first!r}")
            if isinstance(end, int):  # the next page's position: no item is listed on two pages
                size = min(size, end - first)
            return (self._url(item, language, zone) for item, language in self._window(items, first, size))
        keys, per_item = keyset
        # Up to the next page's first key, so no row is listed twice; still at most the
        # Sitemap's own ``limit``: rows added past it wait for the next plan, as in Django.
        rows = keys.rows(first, self._rows(size, per_item), end)
        return (url for item in rows for url in self._urls(item, zone))

    def _keyset(self, items: object) -> tuple[KeyRanges, int] | None:
        """The key ``items`` can be read by, and the URLs of one row; ``None`` to iterate them."""
        if not isinstance(items, QuerySet) or items.query.is_sliced or items.query.combinator:
            return None
        if items._iterable_class is not ModelIterable or (self.sitemap.i18n and self._languages_vary):
            return None
        key = _unique_ordering(items)
        if key is None:
            return None
        per_item = len(self._languages()) if self.sitemap.i18n else 1
        return KeyRanges(items, key, self._lastmod_field, self._chunk_size), per_item

    def _rows(self, size: int, per_item: int) -> int:
        if size < per_item:
            raise ValueError(f"a page of {size} URLs cannot hold an item in each of its {per_item} languages")
        return size // per_item

    def _languages(self) -> list[str]:
        if self.sitemap.languages is not None:
            return list(self.sitemap.languages)
        return [code for code, _ in settings.LANGUAGES]

    def _pairs(self, items: Iterable[Any]) -> Iterator[tuple[Any, str | None]]:
        """(item, language) in Django's order: every item once, or once per language with i18n."""
        if not self.sitemap.i18n:
            return ((item, None) for item in items)
        languages = self.sitemap.get_languages_for_item
        return ((item, language) for item in items for language in languages(item))

    def _window(self, items: Iterable[Any], first: int, size: int) -> list[tuple[Any, str | None]]:
        """The ``size`` (item, language) pairs from position ``first``: a slice where items can
        be sliced (``OFFSET`` for a QuerySet, as Django's paginator), else iterated up to it."""
        if not self.sitemap.i18n and isinstance(items, QuerySet | Sequence):
            window = items[first : first + size]
            try:
                return [(item, None) for item in window]
            finally:
                if isinstance(items, QuerySet):
                    done_with(items.db)
        return list(islice(self._pairs(items), first, first + size))

    def _measured(self, keyed: Iterable[tuple[Key, Any]], size: int) -> list[PageStart]:
        """Pages of ``size`` over (key, item), in order: each one's first key and newest lastmod,
        from ``lastmod()`` on every item (as Django's index finds its one lastmod)."""
        pages: list[PageStart] = []
        newest: str | None = None
        zone = local_zone()
        for n, (key, item) in enumerate(keyed):
            if n % size == 0:
                if pages:
                    pages[-1] = pages[-1]._replace(lastmod=newest)
                pages.append(PageStart(key))
                newest = None
            lastmod = _w3c(aware(self._lastmod(item), zone))
            if lastmod is not None and (newest is None or lastmod > newest):
                newest = lastmod
        if pages:
            pages[-1] = pages[-1]._replace(lastmod=newest)
        return pages

    def _urls(self, item: Any, zone: tzinfo | None) -> Iterator[Url]:
        if not self.sitemap.i18n:
            yield self._url(item, None, zone)
            return
        for language in self._languages():
            yield self._url(item, language, zone)

    def _url(self, item: Any, language: str | None, zone: tzinfo | None) -> Url:
        """``item``'s URL in ``language``; a naive lastmod is in ``zone`` (`local_zone`)."""
        if language is None:
            loc = self._location(item)
        else:
            with translation.override(language):
                loc = self._location(item)
        alternates = [Alternate(tag, href) for tag, href in self._alternates(item)]
        return Url(
            loc,
            lastmod=aware(self._lastmod(item), zone) or None,
            changefreq=self._changefreq(item) or None,
            priority=_number(self._priority(item)),
            alternates=alternates or None,
        )

    def _alternates(self, item: Any) -> list[tuple[str, str]]:
        """(hreflang, location) of every language version of ``item``, as Django's view lists
        them: one per language with ``alternates``, then ``x-default`` with ``x_default``."""
        sitemap = self.sitemap
        if not (sitemap.i18n and sitemap.alternates):
            return []
        languages = sitemap.get_languages_for_item(item)
        found = []
        for language in languages:
            with translation.override(language):
                found.append((language, self._location(item)))
        if sitemap.x_default and settings.LANGUAGE_CODE in languages:
            language = settings.LANGUAGE_CODE
            with translation.override(language):
                found.append(("x-default", self._location(item).replace(f"/{language}/", "/", 1)))
        return found


def _attribute(sitemap: Sitemap[Any], name: str) -> Callable[[Any], Any]:
    """A ``Sitemap`` attribute as Django reads it: a method called with the item, else the value."""
    try:
        value = getattr(sitemap, name)
    except AttributeError:
        return lambda item: None
    if callable(value):
        return value  # type: ignore[no-any-return]
    return lambda item: value


def _unique_ordering(queryset: QuerySet[Any]) -> str | None:
    """The field a QuerySet is ordered by, if it is one unique, non-null column (either direction)."""
    query = queryset.query
    ordering = query.order_by or (queryset.model._meta.ordering if query.default_ordering else ())
    if len(ordering) != 1 or not isinstance(ordering[0], str) or query.extra_order_by:
        return None
    name = ordering[0].removeprefix("-")
    try:
        field = model_field(queryset.model, name)
    except ConfigurationError:  # "?", a lookup across a relation, an annotation
        return None
    return name if (field.primary_key or field.unique) and not field.null else None


def _w3c(value: object) -> str | None:
    """A lastmod as the index writes it (dates and datetimes compare once written alike)."""
    if value is None:
        return None
    try:
        return w3c_datetime(value)
    except EntryError:
        return None  # the page render skips and counts that entry


def _number(value: object) -> Any:
    """A priority: Django writes whatever it is given, so a string such as "0.8" is read as one."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        try:
            return Decimal(value)
        except InvalidOperation:
            return value  # invalid: skipped and counted when the page is rendered
    return value
