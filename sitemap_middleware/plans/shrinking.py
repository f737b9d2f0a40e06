"""No sudden shrink is published: a section's new plan is held against its last published one.

A section that drops to nothing, or loses most of its URLs at once, is almost always a
fault (a replica behind, a query bug); publishing it tells crawlers the URLs are gone. So
every whole plan the service makes passes `ShrinkGuard.publish` first: a plan holding fewer
URLs than ``1 - max_shrink`` of the last published one is refused (logged and counted
``shrink_refused`` once per refusal), and the last published plan is served instead, until
`accept` or a plan within the bound (the section grew back)::

    guard = ShrinkGuard(0.9, store, stats, log)
    plan = guard.publish(scope, "products", measured)   # measured, or the last published plan
    guard.refused(scope, "products")                    # its pages: kept copies, else a 503
    guard.accept("products")                            # its next plan is published, whatever its size

What is compared (`urls`): a counted plan's count (raw entries times languages: entries
skipped as invalid are not subtracted), a measured plan's URLs page by page, a keyed plan's
told page sizes (``page_size`` for a page whose size it did not tell). The last published
plan is kept in the store beside the plans, under a key no `invalidate` moves (every worker
agrees), and in this process (which outlives the store's TTL); a fresh process with a
change log reads its size from the log (`SectionState.urls`), which has no plan to serve.
"""

from __future__ import annotations

import json
import threading
import uuid
from dataclasses import dataclass, replace

from cachetools import LRUCache

from ..caching.stores import CacheStore, Document
from ..changes.log import ChangeLog
from ..errors import ConfigurationError, ProviderError
from ..stats import Stats, logger
from . import PagePlan

__all__ = [
    "DEFAULT_MAX_SHRINK",
    "Published",
    "ShrinkGuard",
    "ShrinkRefusedError",
    "check_max_shrink",
    "urls",
]

# A section that loses more than 90% of its URLs at once is almost always a fault.
DEFAULT_MAX_SHRINK = 0.9


class ShrinkRefusedError(ProviderError):
    """A section shrank past ``max_shrink`` and no published plan of it is kept here: a 503."""


@dataclass(frozen=True, slots=True)
class Published:
    """A section's last published plan (``None``: known only by its size, from the log), its
    URLs, the URLs of the plan refused since (``None``: none), and the `accept` token it took last."""

    urls: int
    plan: PagePlan | None
    refused: int | None = None
    accepted: str | None = None
    generation: str | None = None  # the store's generation of the section when it was published

    def to_bytes(self) -> bytes:
        plan = None if self.plan is None else self.plan.to_bytes().decode()
        return json.dumps([self.urls, plan, self.refused, self.accepted, self.generation]).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> Published:
        urls, plan, refused, accepted, generation = json.loads(data)
        located = None if plan is None else PagePlan.from_bytes(plan.encode())
        return cls(urls, located, refused, accepted, generation)


def urls(plan: PagePlan) -> int:
    """The URLs a plan holds, as far as it tells (see the module's docstring)."""
    if plan.count is not None:
        return plan.count
    window = plan.window or 0
    total = 0
    for number in range(1, plan.pages + 1):
        told = plan.url_count(number)
        total += window if told is None else told
    return total


def check_max_shrink(value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 1:
        raise ConfigurationError(f"max_shrink must be a number in (0, 1] or None, not {value!r}")
    return float(value)


class ShrinkGuard:
    """Holds each section's new plans against its last published one (``max_shrink``: ``None``,
    every plan is published); ``store`` shares the last published plans among workers."""

    def __init__(
        self, max_shrink: float | None, store: CacheStore | None, stats: Stats, log: ChangeLog | None
    ) -> None:
        self.max_shrink = max_shrink
        self._store = store
        self._stats = stats
        self._log = log
        self._lock = threading.Lock()
        # Outlives the store's TTL and `invalidate()`: a shrink is caught after either.
        self._memory: LRUCache[str, Published] = LRUCache(maxsize=1024)
        self._memory_tokens: LRUCache[str, str] = LRUCache(maxsize=1024)

    def publish(self, scope: str, section: str, plan: PagePlan) -> PagePlan:
        """The plan to serve for a whole ``plan`` just made: itself, or the last published
        one when it shrank too much (`ShrinkRefusedError` when none is kept)."""
        published = self.read(scope, section)
        new = urls(plan)
        if published is None:
            # An acceptance made before this record existed is not one of its shrinks.
            published = Published(new, plan, None, self._accepted(section), self._generation(section))
            self._write(scope, section, published)
            return plan
        if self.max_shrink is None or not self._shrank(published, new):
            generation = self._generation(section)
            if published.plan != plan or published.refused is not None or published.generation != generation:
                if published.refused is not None:
                    logger.warning("sitemap section %r grew back to %s URLs: published", section, f"{new:,}")
                self._write(scope, section, Published(new, plan, None, published.accepted, generation))
            return plan
        token = self._accepted(section)
        if token is not None and token != published.accepted:
            logger.warning(
                "sitemap section %r: its shrink from %s to %s URLs was accepted: published",
                section,
                f"{published.urls:,}",
                f"{new:,}",
            )
            self._write(scope, section, Published(new, plan, None, token, self._generation(section)))
            return plan
        if published.refused != new:  # once per refusal, not per request
            self._stats.count(section, "shrink_refused")
            logger.error(
                "sitemap section %r shrank from %s to %s URLs at once (max_shrink=%s): the last "
                "published documents are served; call sitemaps.accept_shrink(%r) if it is right",
                section,
                f"{published.urls:,}",
                f"{new:,}",
                self.max_shrink,
                section,
            )
            published = replace(published, refused=new)
            self._write(scope, section, published)
        if published.plan is None:
            raise ShrinkRefusedError(
                f"section {section!r} shrank from {published.urls:,} to {new:,} URLs: refused, and no "
                "published plan of it is kept here (sitemaps.accept_shrink)"
            )
        return published.plan

    def _generation(self, section: str) -> str | None:
        return None if self._store is None else self._store.generation(section)

    def _shrank(self, published: Published, new: int) -> bool:
        assert self.max_shrink is not None
        return new < (1 - self.max_shrink) * published.urls

    def refused(self, scope: str, section: str) -> Published | None:
        """The last published record of ``section`` while a shrink of it is refused, else ``None``."""
        if self.max_shrink is None:
            return None
        published = self.read(scope, section)
        return published if published is not None and published.refused is not None else None

    def accept(self, section: str) -> None:
        """Publish the section's next plan whatever its size, under every site and mount: a
        new token beside the records (in the store, so every worker hears it), which each
        record takes once."""
        token = uuid.uuid4().hex
        key = _accepted_key(section)
        with self._lock:
            self._memory_tokens[key] = token
        if self._store is not None:
            self._store.set(key, Document(token.encode(), "", 0, len(token)))

    def _accepted(self, section: str) -> str | None:
        key = _accepted_key(section)
        if self._store is not None:
            stored = self._store.get(key)
            if stored is not None:
                return stored.body.decode()
        with self._lock:
            return self._memory_tokens.get(key)

    def pages(self, scope: str, section: str) -> int | None:
        """The pages of the section's last published plan, without calling a provider (robots.txt)."""
        published = self.read(scope, section)
        if published is not None and published.plan is not None:
            return published.plan.pages
        state = None if self._log is None else self._log.state(scope, section)
        return None if state is None else state.pages

    def read(self, scope: str, section: str) -> Published | None:
        key = _key(scope, section)
        if self._store is not None:
            stored = self._store.get(key)
            if stored is not None:
                return Published.from_bytes(stored.body)
        with self._lock:
            kept = self._memory.get(key)
        if kept is not None:
            return kept
        state = None if self._log is None else self._log.state(scope, section)
        if state is None or not state.baselined:
            return None
        return Published(state.urls, None)

    def _write(self, scope: str, section: str, published: Published) -> None:
        key = _key(scope, section)
        with self._lock:
            self._memory[key] = published
        if self._store is not None:
            body = published.to_bytes()
            self._store.set(key, Document(body, "", 0, len(body)))


def _key(scope: str, section: str) -> str:
    # No generation in it: the last published plan outlives `invalidate`.
    return f"published|{scope}|{section}"


def _accepted_key(section: str) -> str:
    return f"shrink-accepted|{section}"
