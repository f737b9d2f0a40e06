"""`HttpPurge`: ``PURGE <path>`` to a cache in front (Varnish, nginx's purge module, Squid)
for every sitemap document whose bytes changed.

What is purged is `documents.stale_documents`' (the page and its ``.gz``, the index files
listing it, robots.txt with them); this module only sends it. Each document is one
request to ``origin`` (the cache's own address), with the site's ``Host``, so the cache
finds the object it keys by host and path::

    purge = HttpPurge("http://127.0.0.1:6081").bind(sitemaps)
    report = purge.send(delivery)       # a `Delivery` claimed from the change log's outbox
    report.retry                        # some PURGE was not answered 2xx: send it all again

A PURGE is idempotent: sending a delivery again after a partial failure drops nothing
twice that matters. A 404 counts as purged (Squid and nginx's cache_purge answer it for
a document they do not hold); anything else but a 2xx, or no answer, is a failure.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import httpx

from ..changes.model import Delivery
from ..errors import ConfigurationError
from .indexes import IndexFiles
from .purger import DEFAULT_TIMEOUT, Purger, PurgeReport

__all__ = ["HttpPurge"]

_NOT_HELD = 404  # Squid, nginx cache_purge: nothing cached under that key (nothing to drop)


class HttpPurge(Purger):
    """Purges changed sitemap documents from an HTTP cache in front, one ``PURGE`` each.

    Example::

        purge = HttpPurge("http://127.0.0.1:6081").bind(sitemaps)

    - ``origin``: the cache's address (``http://host:port``), not the site's: the site's
      host goes in each request's ``Host`` header.
    - ``timeout``: seconds one PURGE may take (connecting, sending, answering).
    - ``method``: the request method the cache purges on (``PURGE`` for Varnish's usual
      VCL, Squid and nginx's cache_purge).
    - ``indexes``: which index files list a page (`indexes.IndexFiles`); by default the
      bound `Sitemaps`' own (`bind`).
    - ``transport``: an `httpx.BaseTransport` (tests, proxies); httpx's own by default.
    """

    def __init__(
        self,
        origin: str,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        method: str = "PURGE",
        indexes: IndexFiles | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        super().__init__(timeout=timeout, indexes=indexes, transport=transport)
        self.origin = _check_origin(origin)
        if not isinstance(method, str) or not method.isalpha() or not method.isupper():
            raise ConfigurationError(f"method must be an HTTP method such as 'PURGE', not {method!r}")
        self.method = method

    def _where(self) -> str:
        return self.origin

    def purge(self, delivery: Delivery) -> PurgeReport:
        """PURGE every document ``delivery`` makes stale; failures are logged and reported."""
        purged: list[str] = []
        failed: list[tuple[str, str]] = []
        for documents in self.stale(delivery):
            for path in documents.paths():
                where = documents.host + path
                problem = self._purge(documents.host, path)
                if problem is None:
                    purged.append(where)
                else:
                    failed.append((where, problem))
        return self._report(purged, failed, self.origin)

    def _purge(self, host: str, path: str) -> str | None:
        """One PURGE: ``None`` when the cache dropped it (or never held it), else why not."""
        try:
            response = self._http().request(self.method, self.origin + path, headers={"Host": host})
        except httpx.HTTPError as error:
            return f"{type(error).__name__}: {error}"
        if 200 <= response.status_code < 300 or response.status_code == _NOT_HELD:
            return None
        return f"HTTP {response.status_code}"


def _check_origin(origin: object) -> str:
    parts = urlsplit(origin) if isinstance(origin, str) else None
    if (
        parts is None
        or parts.scheme not in ("http", "https")
        or not parts.hostname
        or parts.path not in ("", "/")
        or parts.query
        or parts.fragment
    ):
        raise ConfigurationError(
            f"origin must be a cache's address such as 'http://127.0.0.1:6081', not {origin!r}"
        )
    return f"{parts.scheme}://{parts.netloc}"
