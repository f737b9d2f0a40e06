"""Where rendered documents are kept between requests, and single-flight rendering.

A `CacheStore` keeps `Document`s (a gzip body and its validators) under string keys.
`MemoryStore` is the in-process implementation: a cachetools ``TTLCache`` bounded by
**bytes**, not entries, so a handful of 50,000-URL pages cannot exhaust memory::

    store = MemoryStore(max_bytes=256 * 1024 * 1024, ttl=600)
    store.set("page|products|0|1", document)
    store.get("page|products|0|1")          # the Document, until the TTL or memory evicts it

Keys carry a per-section *generation*: `invalidate` bumps it, so documents rendered
before the bump can never be served again (they simply age out). A shared store for a
fleet (Redis) implements the same four methods.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from cachetools import TTLCache

__all__ = ["FOLLOW_TIMEOUT", "CacheStore", "Document", "Flights", "MemoryStore"]

# A follower waits this long for the leader's render before rendering on its own.
FOLLOW_TIMEOUT = 60.0
# Bytes charged per entry on top of its body: keys, validators, bookkeeping.
_ENTRY_OVERHEAD = 512


@dataclass(frozen=True, slots=True, weakref_slot=True)
class Document:
    """A rendered document as stored: gzip body, validators, and what it was rendered from.

    - ``body``: the document, gzip-compressed (stored once; identity is inflated on demand).
    - ``etag``: the strong entity tag of the identity representation, without quotes.
    - ``last_modified``: epoch seconds (whole) when these bytes were first produced.
    - ``size``: length of the identity (uncompressed) document.
    """

    body: bytes
    etag: str
    last_modified: int
    size: int


class CacheStore(Protocol):
    """What the middleware needs from a cache; small on purpose, so a shared store fits."""

    def get(self, key: str) -> Document | None: ...

    def set(self, key: str, document: Document) -> None: ...

    def generation(self, section: str) -> str:
        """A token that changes whenever ``section`` (or everything) is invalidated."""
        ...

    def invalidate(self, section: str | None = None) -> None:
        """Make every document of ``section`` (every section, for ``None``) unreachable."""
        ...


class MemoryStore:
    """In-process `CacheStore`: LRU within a byte budget, each entry living ``ttl`` seconds.

    - ``max_bytes``: total bytes of stored bodies (plus a small per-entry overhead).
    - ``ttl``: seconds a document is served before it is rendered again.
    - ``timer``: a monotonic clock; inject a fake one in tests instead of sleeping.
    """

    def __init__(
        self,
        *,
        max_bytes: int = 256 * 1024 * 1024,
        ttl: float = 600.0,
        timer: Callable[[], float] = time.monotonic,
    ) -> None:
        self._lock = threading.Lock()
        self._documents: TTLCache[str, Document] = TTLCache(
            maxsize=max_bytes, ttl=ttl, timer=timer, getsizeof=_charge
        )
        self._generations: dict[str, int] = {}
        self._epoch = 0
        self.max_bytes = max_bytes
        self.ttl = ttl
        # Bumped by every `invalidate`: an answer remembered before it no longer stands.
        self.invalidations = 0

    def get(self, key: str) -> Document | None:
        with self._lock:
            return self._documents.get(key)

    def set(self, key: str, document: Document) -> None:
        if _charge(document) > self.max_bytes:
            return  # larger than the whole cache: serve it, never store it
        with self._lock:
            self._documents[key] = document

    def generation(self, section: str) -> str:
        # No lock: read on every request, and a read racing `invalidate` returns either
        # token (or a mix that matches no stored key): never a document from before.
        return f"{self._epoch}.{self._generations.get(section, 0)}"

    def invalidate(self, section: str | None = None) -> None:
        with self._lock:
            self.invalidations += 1
            if section is None:
                self._epoch += 1
                self._documents.clear()
            else:
                self._generations[section] = self._generations.get(section, 0) + 1

    @property
    def current_bytes(self) -> int:
        """Bytes the stored documents are charged for (never above ``max_bytes``)."""
        with self._lock:
            return int(self._documents.currsize)


def _charge(document: Document) -> int:
    return len(document.body) + _ENTRY_OVERHEAD


class Flights:
    """Single-flight: at most one render per key at a time in this process.

    The first caller of `claim` leads (renders, then calls `release`); the others get
    the leader's event to wait on, then read the store, and lead themselves if the
    leader failed and stored nothing.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._flights: dict[str, threading.Event] = {}

    def claim(self, key: str) -> tuple[bool, threading.Event]:
        """``(True, event)`` for the new leader, ``(False, event)`` for a follower."""
        with self._lock:
            event = self._flights.get(key)
            if event is not None:
                return False, event
            event = self._flights[key] = threading.Event()
            return True, event

    def pending(self, key: str) -> threading.Event | None:
        """The event of a render in flight for ``key``, or ``None``."""
        with self._lock:
            return self._flights.get(key)

    def release(self, key: str, event: threading.Event) -> None:
        """End the flight ``event`` leads and wake its followers.

        Idempotent, and never ends a newer flight of the same key: a render abandoned
        by a stalled provider may finish long after another request took over.
        """
        with self._lock:
            if self._flights.get(key) is event:
                del self._flights[key]
        event.set()
