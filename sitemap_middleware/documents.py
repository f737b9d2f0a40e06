"""One site's documents: made from a render, kept in the store, answered from, read as they grow.

What a document is beyond its bytes lives here: its validators (an ETag from its bytes, or
from a declared version; a Last-Modified that survives a re-render of the same bytes), the
answer a stored one gives (a 304, the gzip body, its identity copy or inflated bytes), the
renders in progress in this process that clients join (`caching.growing`), and the last
good copy of each index file (served when a provider fails)::

    documents = Documents(store, stats, headers, compression)
    document = documents.made(resource, request, body, digest, size)
    documents.reply(document, resource, route, request)       # the answer it gives
    documents.grow(resource, request, chunks, flight)         # a cold page, read as it grows
    documents.joined(resource, route, request)                # a reader of one, or None
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

from cachetools import LRUCache

from .caching.growing import Growing, Reader
from .caching.recording import Recording
from .caching.resources import Resource, version_etag
from .caching.stores import CacheStore, Document, IdentityCopies, identity_copies, max_document_bytes
from .concurrency.flights import Flight
from .stats import Stats
from .web import rules
from .web.compress import Gzip
from .web.headers import DocumentHeaders, is_not_modified, representation, wants_gzip
from .web.replies import Origin, Reply, Request
from .web.rules import Validators

__all__ = ["Completed", "Documents"]

# A page rendered completely: the sha256 of its bytes, and a callable returning them.
Completed = Callable[[Any, Callable[[], bytes]], None]


class Documents:
    """The documents of one site, in ``store`` (``None``: nothing is kept but what renders)."""

    def __init__(
        self,
        store: CacheStore | None,
        stats: Stats,
        headers: DocumentHeaders,
        compression: Gzip,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.stats = stats
        self.headers = headers
        self.compression = compression
        self._clock = clock
        # Identity copies beside stored documents, where the store keeps them.
        self._copies = identity_copies(store)
        # (etag, first-produced time) per resource: Last-Modified survives a re-render
        # that produced the same bytes (TTL expiry, another section's invalidation).
        self._first_seen: LRUCache[str, tuple[str, int]] = LRUCache(maxsize=100_000)
        # The newest rendering of each index file per mount prefix, served when a provider fails.
        self._last_good_index: LRUCache[tuple[str, int], Document] = LRUCache(maxsize=64)
        # Cold pages being rendered in this process, by key: their clients read them as they grow.
        self._growing: dict[str, Growing] = {}
        self._lock = threading.Lock()

    # -- the last good index ---------------------------------------------------------------------

    def keep_index(self, prefix: str, number: int, document: Document) -> None:
        with self._lock:
            self._last_good_index[(prefix, number)] = document

    def last_good_index(self, prefix: str, number: int) -> Document | None:
        with self._lock:
            return self._last_good_index.get((prefix, number))

    # -- renders in progress -----------------------------------------------------------------

    def growing(self, key: str) -> bool:
        """Whether the document under ``key`` is being rendered in this process now."""
        return key in self._growing

    def joined(self, resource: Resource, route: rules.Route, request: Request) -> Reply | None:
        """A reader of the render of ``resource`` in progress here, if there is one."""
        with self._lock:
            growing = self._growing.get(resource.key)
        if growing is None:
            return None
        body: bytes | Reader | None
        if request.method == "HEAD":
            body = None if growing.ended else b""
        else:
            body = growing.join(gzip=wants_gzip(route, request))
        if body is None:
            return None  # it ended meanwhile: the store answers now, or nobody
        self.stats.count_each(resource.section, ("served", "joined_renders"))
        return Reply(200, self.cold_headers(resource, route, request), body)

    # -- answers from a document -------------------------------------------------------------

    def reply(
        self,
        document: Document,
        resource: Resource,
        route: rules.Route,
        request: Request,
        *,
        hit: bool = True,
    ) -> Reply:
        gzip = wants_gzip(route, request)
        prepared = self.headers.prepare(document, resource.key, route, gzip)
        # A declared version decides afresh on every request: never replayed.
        replayable = resource.version is None and bool(resource.key)
        if is_not_modified(prepared.validators, request):
            self.stats.count(resource.section, "not_modified")
            origin = None
            if replayable:
                origin = Origin(resource.key, weakref.ref(document), resource.section, ("not_modified",))
            return Reply(304, prepared.not_modified, raw_headers=prepared.raw_not_modified, origin=origin)
        counters = ("cache_hits", "served") if hit else ("served",)
        for counter in counters:
            self.stats.count(resource.section, counter)
        if request.method == "HEAD" or gzip:
            sends_body = request.method != "HEAD"
            body = document.body if sends_body else b""
            origin = None
            if replayable:
                # Both can be answered again from the stored document alone (`replays`).
                origin = Origin(resource.key, weakref.ref(document), resource.section, counters, sends_body)
            return Reply(200, prepared.ok, body, raw_headers=prepared.raw_ok, origin=origin)
        copies = self._copies
        if copies is not None and resource.key:
            identity = copies.identity(resource.key, document)
            if identity is not None:
                return Reply(200, prepared.ok, identity, raw_headers=prepared.raw_ok)
            inflated = self._inflating(copies, resource.key, document)
        else:
            inflated = self.compression.inflate(document.body)
        return Reply(200, prepared.ok, inflated, raw_headers=prepared.raw_ok)

    def _inflating(self, copies: IdentityCopies, key: str, document: Document) -> Iterator[bytes]:
        """A stored document's identity body, inflated where the adapter runs bodies (off
        the event loop): whole, and kept beside the document for the next identity request,
        when the store has room to spare for it; else piece by piece, never whole."""
        if not copies.claim_identity(key, document):
            yield from self.compression.inflate(document.body)
            return
        identity = None
        try:
            identity = self.compression.decompress(document.body, document.size)
        finally:
            copies.keep_identity(key, document, identity)  # ends the claim on every way out
        yield identity

    # -- validators ---------------------------------------------------------------------------

    def cold_headers(self, resource: Resource, route: rules.Route, request: Request) -> list[tuple[str, str]]:
        """A page's headers before its bytes exist (validators only from a declared version)."""
        headers = self.headers.base(route, wants_gzip(route, request))
        if resource.version is not None:
            headers += self.validators(resource, route, request).headers()
        return headers

    def grow(
        self,
        resource: Resource,
        request: Request,
        chunks: Iterator[bytes],
        flight: Flight,
        completed: Completed | None = None,
    ) -> Growing:
        """The render of a cold page that every client of it reads as it grows, stored once
        complete (never when it failed, or every client left), its flight released at its end.

        ``completed(digest, body)`` hears of it once complete (`changes.watch`): the sha256
        of its bytes, and a callable that inflates them, called only if they are needed.
        """

        def store(body: bytes, digest: Any, size: int) -> None:
            if self.store is not None:
                self.store.set(resource.key, self.made(resource, request, body, digest, size))
            if completed is not None:
                completed(digest, partial(self.compression.decompress, body, size))

        def ended(growing: Growing) -> None:
            with self._lock:
                if self._growing.get(resource.key) is growing:
                    del self._growing[resource.key]

        recording = Recording(chunks, self.compression.writer(), store=store, flight=flight)
        keeps = max_document_bytes(self.store)
        growing = Growing(resource.key, recording, ended, self.compression.inflater, keeps=keeps)
        with self._lock:
            self._growing[resource.key] = growing
        return growing

    def made(self, resource: Resource, request: Request, body: bytes, digest: Any, size: int) -> Document:
        if resource.version is not None:
            etag = version_etag(resource)
            last_modified = resource.version.time or self._first_produced(resource.stable, etag, request)
        else:
            etag = digest.hexdigest()[:32]
            last_modified = self._first_produced(resource.stable, etag, request)
        return Document(body, etag, last_modified, size)

    def _first_produced(self, stable: str, etag: str, request: Request) -> int:
        # RFC 9110 §8.8.2.1: Last-Modified is never later than the response's Date, which
        # servers take when the request arrives (uvicorn: at its last tick, up to a second
        # before): these bytes were read from data as of then anyway.
        now = int(min(self._clock(), request.received or self._clock()) - 1)
        with self._lock:
            seen = self._first_seen.get(stable)
            if seen is not None and seen[0] == etag:
                return seen[1]
            self._first_seen[stable] = (etag, now)
            return now

    def validators(self, resource: Resource, route: rules.Route, request: Request) -> Validators:
        """Version-derived validators, known before rendering (declared versions only)."""
        assert resource.version is not None
        etag = version_etag(resource)
        with self._lock:
            seen = self._first_seen.get(resource.stable)
        last_modified = resource.version.time or (seen[1] if seen and seen[0] == etag else None)
        return representation(Validators(f'"{etag}"', last_modified), wants_gzip(route, request))
