"""Telling other systems what changed: IndexNow, CDN purges and your own hooks.

Everything here is delivered from the change log's outbox (`ChangeLog.claim`), on one
background thread per `Sitemaps` and process, never on a request's path::

    from sitemap_middleware.push import IndexNow, Push

    sitemaps = Sitemaps(base_url="https://shop.example",
                        changes=ChangeLog.sqlite("var/sitemap-changes.sqlite3"),
                        push=[IndexNow(key="3f1c9a2be07d4c11")])
    sitemaps.on_change(my_callback)          # called with each batch of Changes
    sitemaps.push_now()                      # deliver what waits, now (tests, commands)

A target of your own is one class (`Target`): see `target`.
"""

from __future__ import annotations

from .dispatch import Push, Pushed
from .hooks import Hook
from .indexnow import IndexNow
from .retry import Backoff, retry_after
from .target import Outcome, Refused, Retry, Sent, Target

__all__ = [
    "Backoff",
    "Hook",
    "IndexNow",
    "Outcome",
    "Push",
    "Pushed",
    "Refused",
    "Retry",
    "Sent",
    "Target",
    "retry_after",
]
