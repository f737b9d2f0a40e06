"""Telling other systems what changed: IndexNow, CDN purges and your own hooks.

Everything here is delivered from the change log's outbox (`ChangeLog.claim`), on one
background thread per `Sitemaps` and process, never on a request's path::

    from sitemap_middleware.push import HttpPurge, IndexNow, Push

    sitemaps = Sitemaps(base_url="https://shop.example",
                        changes=ChangeLog.sqlite("var/sitemap-changes.sqlite3"),
                        push=[IndexNow(key="3f1c9a2be07d4c11")])
    sitemaps.on_change(my_callback)          # called with each batch of Changes
    sitemaps.push_now()                      # deliver what waits, now (tests, commands)

`HttpPurge` sends ``PURGE <path>`` to a cache in front (Varnish, nginx, Squid);
`CloudflarePurge` and `FastlyPurge` purge by cache tag (``Sitemaps(cache_tags=...)``) over
their HTTP APIs. A target of your own is one class (`Target`): see `target`.
"""

from __future__ import annotations

from .dispatch import Push, Pushed
from .hooks import Hook
from .indexnow import IndexNow
from .purge import HttpPurge
from .purger import PurgeReport
from .retry import Backoff, retry_after
from .tagged import CloudflarePurge, FastlyPurge
from .target import Outcome, Refused, Retry, Sent, Target

__all__ = [
    "Backoff",
    "CloudflarePurge",
    "FastlyPurge",
    "Hook",
    "HttpPurge",
    "IndexNow",
    "Outcome",
    "PurgeReport",
    "Push",
    "Pushed",
    "Refused",
    "Retry",
    "Sent",
    "Target",
    "retry_after",
]
