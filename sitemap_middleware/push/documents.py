"""What a cache in front must drop when pages changed: documents by path, or by cache tag.

Pure: a delivery's `PageChange`s in, paths (or tags) out; no I/O, so what is purged when
is one function each, read and tested apart from the sending (`purge`, `tagged`)::

    stale = stale_documents(delivery.pages, indexes)    # per scope (site root + mount prefix)
    stale[0].host, stale[0].paths()   # "shop.example", ["/sitemap-products-3.xml", ".gz", ...]
    tags_of(stale)                    # ["sitemap-products-3", "sitemap-index-1", "sitemap-robots"]

For each page whose bytes changed: the page and its ``.gz``; the index files that list it
(its lastmod there may have changed: `indexes`), each under both of the first one's names
(``/sitemap-index.xml``, ``/sitemap.xml``) and with its ``.gz``; and robots.txt, whenever
an index file is purged. robots.txt changes only when the number of index files does, which
no page change alone says; purging it with every index file costs one fetch from your app
and never leaves a cached robots.txt naming index files that no longer exist.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from ..changes.model import PageChange
from ..web import rules
from ..web.tags import ROBOTS_TAG, index_tag, page_tag
from .indexes import IndexFiles

__all__ = ["StaleDocuments", "stale_documents", "tags_of"]


@dataclass(slots=True)
class StaleDocuments:
    """The documents of one scope (site root and mount prefix) whose cached copies are stale."""

    scope: str
    pages: dict[tuple[str, int], None] = field(default_factory=dict)  # (section, page), in order
    index_files: dict[int, None] = field(default_factory=dict)

    @property
    def host(self) -> str:
        """The ``Host`` a cache in front keys the scope's documents by (with a port, if any)."""
        return urlsplit(self.scope).netloc

    def paths(self) -> list[str]:
        """Every stale document's path on the public site, its ``.gz`` right after it."""
        prefix = urlsplit(self.scope).path
        documents = [rules.page_path(section, page) for section, page in self.pages]
        for number in self.index_files:
            documents.append(rules.index_path(number))
            if number == 1:
                documents.append("/sitemap.xml")  # the first index file's other name
        paths = [prefix + path + suffix for path in documents for suffix in ("", ".gz")]
        if self.index_files:
            paths.append(prefix + rules.ROBOTS_PATH)
        return paths


def stale_documents(pages: Iterable[PageChange], indexes: IndexFiles) -> list[StaleDocuments]:
    """The stale documents of each scope the pages are under, in the order the pages came."""
    scopes: dict[str, StaleDocuments] = {}
    for change in pages:
        stale = scopes.get(change.scope)
        if stale is None:
            stale = scopes[change.scope] = StaleDocuments(change.scope)
        key = (change.section, change.page)
        if key in stale.pages:
            continue  # changed twice in the span: one purge
        stale.pages[key] = None
        for number in indexes.listing(change.scope, change.section, change.page):
            stale.index_files[number] = None
    return list(scopes.values())


def tags_of(stale: Iterable[StaleDocuments]) -> list[str]:
    """The cache tags (`web.tags`) naming exactly those documents, on every scope at once:
    a CDN's tags span its whole zone or service."""
    tags: dict[str, None] = {}
    for documents in stale:
        for section, page in documents.pages:
            tags[page_tag(section, page)] = None
        for number in documents.index_files:
            tags[index_tag(number)] = None
        if documents.index_files:
            tags[ROBOTS_TAG] = None
    return list(tags)
