"""Which index files list a page: the engine's index cutting, from plans already known here.

`Engine.index` numbers every section's pages in registration order and cuts the list
every `MAX_SITEMAPS` (50,000) pages: page ``k`` of a section sits at position ``offset + k``,
where ``offset`` counts the pages of the sections before it. Knowing ``offset`` takes those
sections' plans; measuring one may iterate a whole section, so a purge never plans anything.
It reads the page counts this process already holds (`Service.planned_pages`) and, when
one is missing (another worker planned it), names every index file robots.txt names
(`Service.index_files`, shared through the store): one on any site under 50,000 pages, and
a PURGE of a document the cache does not hold costs one round trip::

    indexes = SitemapIndexes(sitemaps)
    indexes.listing("https://shop.example", "products", 3)   # (1,)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from ..protocol.render import MAX_SITEMAPS

if TYPE_CHECKING:
    from ..service import Service
    from ..sitemaps import Sitemaps

__all__ = ["IndexFiles", "SitemapIndexes"]


class IndexFiles(Protocol):
    """What a purge asks of the sitemaps: the index files that list a page."""

    def listing(self, scope: str, section: str, page: int) -> Sequence[int]:
        """The numbers (from 1) of the index files under ``scope`` that may list the page."""
        ...


class SitemapIndexes:
    """`IndexFiles` over one `Sitemaps`: its sites, their mount prefixes and their plans here."""

    def __init__(self, sitemaps: Sitemaps) -> None:
        gateway = sitemaps.gateway
        # The longest root first: "https://a.example/shop" before "https://a.example".
        self._services = sorted(
            ((site.root, gateway.service(site)) for site in gateway.sites.all),
            key=lambda pair: len(pair[0]),
            reverse=True,
        )

    def listing(self, scope: str, section: str, page: int) -> Sequence[int]:
        found = self._service(scope)
        if found is None:
            return (1,)  # a scope of no site here (another app's log): where crawlers start
        service, prefix = found
        offset = 0
        for name in service.sections:
            if name == section:
                return ((offset + page - 1) // MAX_SITEMAPS + 1,)
            pages = service.planned_pages(prefix, name)
            if pages is None:
                break  # not planned in this process: every index file robots.txt names
            offset += pages
        return tuple(range(1, service.index_files(prefix) + 1))

    def _service(self, scope: str) -> tuple[Service, str] | None:
        for root, service in self._services:
            if scope == root or scope.startswith(root + "/"):
                return service, scope[len(root) :]
        return None
