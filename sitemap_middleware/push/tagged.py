"""Purge by cache tag over a CDN's HTTP API: `CloudflarePurge` and `FastlyPurge`.

With ``Sitemaps(cache_tags="Cache-Tag")`` (Cloudflare) or ``"Surrogate-Key"`` (Fastly) every
document carries its tags (`web.tags`); a delivery's stale documents (`documents`) become
the tags naming exactly them (``sitemap-products-3``, ``sitemap-index-1``,
``sitemap-robots``: never a section's or ``sitemap``, which would drop every page), sent in
as few calls as the API allows::

    cloudflare = CloudflarePurge(zone_id="023e105f...", token="...").bind(sitemaps)
    fastly = FastlyPurge(service_id="SU1Z0isxPaozGVKXdv0eY", token="...").bind(sitemaps)
    report = cloudflare.send(delivery)

- Cloudflare: ``POST /client/v4/zones/{zone_id}/purge_cache``, ``{"tags": [...]}``, a
  Bearer token with the Cache Purge permission, at most 30 tags a call; answered 200 with
  ``"success": true``.
- Fastly: ``POST /service/{service_id}/purge``, the keys in a ``Surrogate-Key`` request
  header, space-separated, at most 256 a call, the token in ``Fastly-Key``;
  ``soft=True`` marks them stale (``Fastly-Soft-Purge: 1``) instead of dropping them.

A tag spans the whole zone or service, so one call purges the documents of every host
and mount there. Any other answer (a 429, a 5xx, a refused token) is reported for retry.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx

from ..changes.model import Delivery
from ..errors import ConfigurationError
from .documents import tags_of
from .indexes import IndexFiles
from .purger import DEFAULT_TIMEOUT, Purger, PurgeReport

__all__ = ["CloudflarePurge", "FastlyPurge"]

CLOUDFLARE_API = "https://api.cloudflare.com/client/v4"
FASTLY_API = "https://api.fastly.com"
CLOUDFLARE_TAGS_PER_CALL = 30  # Cloudflare: "up to 30 tags ... in one API call"
FASTLY_KEYS_PER_CALL = 256  # Fastly: "up to 256 surrogate keys ... in one batch request"


class _TagPurge(Purger):
    per_call = 1

    def __init__(
        self,
        account: str,
        token: str,
        *,
        endpoint: str,
        timeout: float,
        indexes: IndexFiles | None,
        transport: httpx.BaseTransport | None,
    ) -> None:
        super().__init__(timeout=timeout, indexes=indexes, transport=transport)
        for what, value in (("id", account), ("token", token)):
            if not isinstance(value, str) or not value or any(c in value for c in "/?#\r\n "):
                raise ConfigurationError(f"{self.name} needs its {what} as a non-empty string, not {value!r}")
        if not isinstance(endpoint, str) or not endpoint.startswith(("https://", "http://")):
            raise ConfigurationError(f"endpoint must be an http(s) URL, not {endpoint!r}")
        self._account = account
        self._token = token
        self._endpoint = endpoint.rstrip("/")

    def _where(self) -> str:
        return self._account  # one cursor per zone or service

    def purge(self, delivery: Delivery) -> PurgeReport:
        """Purge the tags of every document ``delivery`` makes stale; failures reported for retry."""
        purged: list[str] = []
        failed: list[tuple[str, str]] = []
        for batch in _batches(tags_of(self.stale(delivery)), self.per_call):
            try:
                problem = self._purge(batch)
            except httpx.HTTPError as error:
                problem = f"{type(error).__name__}: {error}"
            if problem is None:
                purged += batch
            else:
                failed.append((" ".join(batch), problem))
        return self._report(purged, failed, self._endpoint)

    def _purge(self, tags: list[str]) -> str | None:
        raise NotImplementedError  # pragma: no cover


class CloudflarePurge(_TagPurge):
    """Purges by ``Cache-Tag`` through Cloudflare's API (tag purges need an Enterprise zone).

    - ``zone_id``: the zone's id; ``token``: an API token allowed to purge its cache.
    - ``endpoint``: the API's base URL (a loopback server in tests).
    - ``timeout``, ``indexes``, ``transport``: as `HttpPurge`'s.
    """

    name = "cloudflare"
    per_call = CLOUDFLARE_TAGS_PER_CALL

    def __init__(
        self,
        zone_id: str,
        token: str,
        *,
        endpoint: str = CLOUDFLARE_API,
        timeout: float = DEFAULT_TIMEOUT,
        indexes: IndexFiles | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        super().__init__(
            zone_id, token, endpoint=endpoint, timeout=timeout, indexes=indexes, transport=transport
        )

    def _purge(self, tags: list[str]) -> str | None:
        response = self._http().post(
            f"{self._endpoint}/zones/{self._account}/purge_cache",
            json={"tags": tags},
            headers={"Authorization": f"Bearer {self._token}"},
        )
        if response.status_code != 200:
            return f"HTTP {response.status_code}: {response.text[:200]}"
        try:
            answer = response.json()
        except ValueError:
            return "HTTP 200 without a JSON answer"
        # Cloudflare's envelope: {"success": bool, "errors": [...], "result": {"id": ...}}.
        if not isinstance(answer, dict) or answer.get("success") is not True:
            return f"not purged: {str(answer)[:200]}"
        return None


class FastlyPurge(_TagPurge):
    """Purges by ``Surrogate-Key`` through Fastly's API.

    - ``service_id``: the service's id; ``token``: an API token with ``purge_select``.
    - ``soft``: mark the documents stale rather than drop them (served stale while refetched).
    - ``endpoint``, ``timeout``, ``indexes``, ``transport``: as `CloudflarePurge`'s.
    """

    name = "fastly"
    per_call = FASTLY_KEYS_PER_CALL

    def __init__(
        self,
        service_id: str,
        token: str,
        *,
        soft: bool = False,
        endpoint: str = FASTLY_API,
        timeout: float = DEFAULT_TIMEOUT,
        indexes: IndexFiles | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        super().__init__(
            service_id, token, endpoint=endpoint, timeout=timeout, indexes=indexes, transport=transport
        )
        self.soft = bool(soft)

    def _purge(self, tags: list[str]) -> str | None:
        headers = {"Fastly-Key": self._token, "Surrogate-Key": " ".join(tags), "Accept": "application/json"}
        if self.soft:
            headers["Fastly-Soft-Purge"] = "1"
        response = self._http().post(f"{self._endpoint}/service/{self._account}/purge", headers=headers)
        if response.status_code != 200:
            return f"HTTP {response.status_code}: {response.text[:200]}"
        return None


def _batches(tags: list[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(tags), size):
        yield tags[start : start + size]
