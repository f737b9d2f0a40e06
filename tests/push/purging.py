"""What the purge tests share: a shop over a change log, and the outbox loop a purge target is driven by.

`deliver` is the smallest dispatcher: claim the target's changes, send them, acknowledge
them when the target says they were answered, else release them for the next try.
"""

from __future__ import annotations

from typing import Any, Protocol

from sitemap_middleware import Sitemaps
from sitemap_middleware.changes import ChangeLog
from sitemap_middleware.changes.model import Delivery

from ..conftest import BASE, Shelf

PAGE = 3  # URLs per page: a change to one row changes one page


class Report(Protocol):
    @property
    def retry(self) -> bool: ...


class Target(Protocol):
    def consumer(self, site: str) -> str: ...

    def purge(self, delivery: Delivery) -> Report: ...


def shop(log: ChangeLog, shelf: Shelf, **options: Any) -> Sitemaps:
    options.setdefault("base_url", BASE)
    sitemaps = Sitemaps(page_size=PAGE, changes=log, **options)
    sitemaps.add_provider("products", shelf)
    sitemaps.add_provider("pages", lambda: ["/", "/about"])
    return sitemaps


def deliver(log: ChangeLog, target: Target, holder: str = "test") -> Report | None:
    """Send the target's waiting changes once: acknowledged if answered, else released."""
    delivery = log.claim(target.consumer(BASE), holder)
    if delivery is None:
        return None
    report = target.purge(delivery)
    if report.retry:
        log.release(delivery)
    else:
        assert log.acknowledge(delivery)
    return report
