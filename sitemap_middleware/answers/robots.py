"""One site's robots.txt: the app's own, with a ``Sitemap:`` line per index file it knows of.

robots.txt never calls a provider: a crawler treats a robots.txt that fails or times out
as a server error and may stop crawling the whole site, so it must not depend on the
health of the data behind the sitemaps. It names as many index files as the last index
build for that site and mount found (`built`, read back by `known`)::

    robots = RobotsTxt("https://shop.example", store)
    robots.built("", files=3)                    # an index build found three index files
    robots.answer(request, app_answer)           # the app's robots.txt, merged (`web.robots`)
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable

from cachetools import LRUCache

from ..caching.stores import CacheStore, Document
from ..concurrency.steps import AppAnswer
from ..stats import logger
from ..web import rules
from ..web.replies import Reply, Request
from ..web.robots import RobotsAnswer, merged_robots

__all__ = ["MAX_ROBOTS_INDEX_FILES", "RobotsTxt"]

# robots.txt names at most this many index files (50 million sitemap files): Google reads
# the first 500 KiB of a robots.txt, and a count of rows must never size one without bound.
MAX_ROBOTS_INDEX_FILES = 1_000
# Merges remembered, of app answers up to this size.
_MERGES_KEPT_BYTES = 64 * 1024


class RobotsTxt:
    """robots.txt for the site at ``root``; ``store`` carries other processes' index builds."""

    def __init__(
        self, root: str, store: CacheStore | None, *, published: Callable[[str], int | None] | None = None
    ) -> None:
        self._root = root
        # Index files the last published plans need, per mount prefix (a fresh process: the log).
        self._published = published
        self._store = store
        self._lock = threading.Lock()
        # How many index files there were at the last index build, per mount prefix.
        self._index_files: LRUCache[str, int] = LRUCache(maxsize=64)
        # Merges by the app's answer (never by the request: nothing is stored by Host).
        self._merged: LRUCache[Hashable, RobotsAnswer | None] = LRUCache(maxsize=16)

    def answer(self, request: Request, app: AppAnswer) -> Reply:
        """Our robots.txt given the app's answer to the same request (its own, passed on,
        when we cannot merge into it). Never stored by request: the app's answer may
        depend on anything in the request (its Host, a cookie), and one client's answer
        must never reach another. Only the merge is remembered, keyed by the app's whole
        answer: the same answer merges the same way, whoever it was for."""
        files = self.known(request.prefix)
        key = (app.status, tuple(app.headers), app.body, request.prefix, files)
        with self._lock:
            remembered = key in self._merged
            merged = self._merged[key] if remembered else None
        if not remembered:
            urls = [f"{self._root}{request.prefix}{rules.index_path(n)}" for n in range(1, files + 1)]
            merged = merged_robots(app.status, app.headers, app.body, urls)
            if len(app.body) <= _MERGES_KEPT_BYTES:
                with self._lock:
                    self._merged[key] = merged
        if merged is None:
            return Reply(app.status, app.headers, b"" if request.method == "HEAD" else app.body)
        headers = [("Content-Type", merged.content_type), ("Content-Length", str(len(merged.body)))]
        return Reply(200, headers, merged.body)

    def built(self, prefix: str, files: int) -> None:
        """Remember how many index files an index build just found: robots.txt names them."""
        with self._lock:
            self._index_files[prefix] = files
        if self._store is not None:
            body = str(files).encode()
            self._store.set(self._key(prefix), Document(body, "", 0, len(body)))

    def known(self, prefix: str) -> int:
        """How many index files robots.txt names: as many as the last index build made.

        From the store (so a shared store carries other processes' builds), else as
        remembered here, which outlives the store's TTL and `invalidate`; before any
        build here, as many as the sections' last published plans need (``published``: kept
        beside the store, or a change log's pages, so a fresh process names them all),
        never by calling a provider; knowing none, only the first index file, where a
        crawler starts anyway. At least 1, at most `MAX_ROBOTS_INDEX_FILES`.
        """
        files: int | None = None
        if self._store is not None:
            try:
                stored = self._store.get(self._key(prefix))
                files = None if stored is None else int(stored.body)
            except Exception:  # robots.txt is never a 500 for want of a hint
                logger.exception("sitemap robots.txt: the store failed; naming the index files known here")
        if files is None:
            with self._lock:
                files = self._index_files.get(prefix)
        if files is None and self._published is not None:
            try:
                files = self._published(prefix)
            except Exception:  # robots.txt is never a 500 for want of a hint
                logger.exception("sitemap robots.txt: the published plans could not be read")
        if files is None:
            files = 1
        if files > MAX_ROBOTS_INDEX_FILES:
            logger.warning(
                "sitemap robots.txt names the first %d of %d index files: raise page_size",
                MAX_ROBOTS_INDEX_FILES,
                files,
            )
        return min(max(files, 1), MAX_ROBOTS_INDEX_FILES)

    def _key(self, prefix: str) -> str:
        return f"index-files|{self._root}{prefix}"
