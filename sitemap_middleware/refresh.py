"""`Sitemaps.refresh`: every page of some sections rendered now, off any request.

For a periodic job, a management command, or right after ``invalidate()``: the sections'
cached documents are dropped, their plans made afresh, and each page requested through
the WSGI middleware in this process, exactly as a crawler's request would be. So every
rule holds as it does for crawlers: a page a crawler is rendering at the same moment is
read from that render (single-flight: rendered once), each page is stored, and each is
recorded in the change log, if there is one. Pages are requested in order, which keeps
the window in which a URL moving between pages can be missed to the refresh's duration
(`changes.ledger`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from werkzeug.test import Client

from .caching.stores import CacheStore
from .errors import ProviderError
from .gateway import Gateway
from .providers import LoopRunner
from .wsgi import SitemapWSGIMiddleware

__all__ = ["Refreshable", "Refreshed", "refresh"]


class Refreshable(Protocol):
    """What a refresh needs of a `Sitemaps`."""

    @property
    def gateway(self) -> Gateway: ...

    @property
    def cache(self) -> CacheStore | None: ...

    def invalidate(self, section: str | None = None) -> None: ...


@dataclass(frozen=True, slots=True)
class Refreshed:
    """What a refresh did: the pages it rendered (or read from a render in progress), per
    section, over every site."""

    pages: dict[str, int]


def refresh(sitemaps: Refreshable, sections: Sequence[str]) -> Refreshed:
    """Render every page of ``sections`` now, site by site; raises `ProviderError` at the first
    page that does not render (the pages before it stand, and are recorded)."""
    for name in sections:
        sitemaps.invalidate(name)
    middleware = SitemapWSGIMiddleware(_no_app, sitemaps=sitemaps)
    client = Client(middleware)
    gateway = sitemaps.gateway
    headers = {"Accept-Encoding": "gzip"} if sitemaps.cache is not None else {}
    pages = dict.fromkeys(sections, 0)
    for site in gateway.sites.all:
        service = gateway.service(site)
        host = {"Host": gateway.sites.host_of(site)}
        runner = LoopRunner(gateway.provider_timeout)
        try:
            for name in sections:
                plan = service.plan(service.sections[name], "", runner)
                suffix = ".xml.gz" if headers else ".xml"
                for number in range(1, plan.pages + 1):
                    _get(client, f"/sitemap-{name}-{number}{suffix}", {**headers, **host})
                    pages[name] += 1
        finally:
            runner.close()
    return Refreshed(pages)


def _get(client: Client, path: str, headers: dict[str, str]) -> None:
    response = client.get(path, headers=headers)
    try:
        if response.status_code == 404:  # emptied since it was planned: nothing to record
            return
        if response.status_code != 200:
            raise ProviderError(f"refresh: GET {path} answered {response.status}")
        _drain(response.response)
    finally:
        response.close()


def _drain(body: Iterable[object]) -> None:
    """Read a body to its end, holding none of it (a render records its page at its end)."""
    for _ in body:
        pass


def _no_app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    start_response("404 Not Found", [("Content-Type", "text/plain")])
    return [b"Not Found\n"]
