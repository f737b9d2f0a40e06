"""Telling others what changed, from the change log's outbox: caches and CDNs in front.

`HttpPurge` sends ``PURGE <path>`` to a cache (Varnish, nginx, Squid); `CloudflarePurge` and
`FastlyPurge` purge by cache tag (``Sitemaps(cache_tags=...)``) over their HTTP APIs. Each
takes a `Delivery` claimed from ``sitemaps.changes`` and says whether to send it again.
"""

from __future__ import annotations

from .purge import HttpPurge
from .purger import PurgeReport
from .tagged import CloudflarePurge, FastlyPurge

__all__ = ["CloudflarePurge", "FastlyPurge", "HttpPurge", "PurgeReport"]
