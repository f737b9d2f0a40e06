"""What every purge target shares: which documents a delivery makes stale, an HTTP client,
and the report that says whether the delivery must be sent again.

A target (`purge.HttpPurge`, `tagged.CloudflarePurge`, `tagged.FastlyPurge`) is a push
`target.Target`: given as ``Sitemaps(push=[HttpPurge(...)])``, it is bound to its `Sitemaps`
(whose index cutting says which index files list a page) and the dispatcher sends it each
`Delivery` of pages whose bytes changed. `purge` is the same without the dispatcher::

    target.bind(sitemaps)
    report = target.purge(delivery)
    log.release(delivery) if report.retry else log.acknowledge(delivery)
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

import httpx

from ..changes.model import Delivery
from ..errors import ConfigurationError
from ..stats import logger
from .documents import StaleDocuments, stale_documents
from .indexes import IndexFiles, SitemapIndexes
from .target import Outcome, Retry, Sent, Want

if TYPE_CHECKING:
    from typing import Self

    from ..sitemaps import Sitemaps

__all__ = ["DEFAULT_TIMEOUT", "PurgeReport", "Purger"]

DEFAULT_TIMEOUT = 10.0  # seconds one purge request may take (connecting, sending, answering)


@dataclass(frozen=True, slots=True)
class PurgeReport:
    """What one `send` achieved: what was dropped, and what failed (why, for the log)."""

    purged: tuple[str, ...] = ()  # "host/path" of each document dropped, or each tag purged
    failed: tuple[tuple[str, str], ...] = ()  # (what, "HTTP 503" or the error)

    @property
    def retry(self) -> bool:
        """Whether the delivery must be sent again (released, not acknowledged): purges are
        idempotent, so sending all of it again is harmless."""
        return bool(self.failed)


class Purger:
    """The shared part of a purge target: ``timeout``, ``indexes``, ``transport`` (see each target)."""

    name = "purge"  # for the log
    wants: frozenset[Want] = frozenset({"pages"})
    limit = 1_000  # page changes a delivery: each is a few requests

    def consumer(self, site: str) -> str:
        """Its name in the change log's outbox for the site at ``site``: one cursor per cache."""
        return f"{self.name}|{self._where()}|{site}"

    def send(self, delivery: Delivery, site: str) -> Outcome:
        """`purge` for the dispatcher: a purge that failed anywhere is sent again, whole."""
        report = self.purge(delivery)
        if report.retry:
            return Retry(reason="; ".join(f"{what}: {why}" for what, why in report.failed[:3]))
        return Sent()

    def purge(self, delivery: Delivery) -> PurgeReport:
        raise NotImplementedError

    def _where(self) -> str:
        raise NotImplementedError

    def __init__(
        self,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        indexes: IndexFiles | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
            raise ConfigurationError(f"timeout must be a positive number of seconds, not {timeout!r}")
        self._timeout = float(timeout)
        self._transport = transport
        self._indexes = indexes
        self._client: httpx.Client | None = None
        self._lock = threading.Lock()

    def bind(self, sitemaps: Sitemaps) -> Self:
        """Purge for ``sitemaps``: its index cutting says which index files list a page."""
        if self._indexes is None:
            self._indexes = SitemapIndexes(sitemaps)
        return self

    def stale(self, delivery: Delivery) -> list[StaleDocuments]:
        """The documents ``delivery`` makes stale (`documents.stale_documents`): what `send` purges."""
        if self._indexes is None:
            raise RuntimeError(
                f"{type(self).__name__} needs bind(sitemaps) to tell which index files list a page"
            )
        return stale_documents(delivery.pages, self._indexes)

    def close(self) -> None:
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()

    def _http(self) -> httpx.Client:
        with self._lock:
            if self._client is None:
                # One client, its connections kept alive: a delivery may be many small requests.
                self._client = httpx.Client(timeout=self._timeout, transport=self._transport)
            return self._client

    def _report(self, purged: list[str], failed: list[tuple[str, str]], where: str) -> PurgeReport:
        if failed:
            logger.warning(
                "sitemap %s: %d of %d requests to %s failed (the delivery is sent again): %s",
                self.name,
                len(failed),
                len(failed) + len(purged),
                where,
                "; ".join(f"{what}: {why}" for what, why in failed[:5]),
            )
        return PurgeReport(tuple(purged), tuple(failed))
