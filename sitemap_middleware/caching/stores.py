"""Where rendered documents are kept between requests, and whose single-flight renders them.

A `CacheStore` keeps `Document`s (a gzip body and its validators) under string keys.
`MemoryStore` is the in-process implementation: a cachetools ``TTLCache`` bounded by
**bytes**, not entries, so a handful of 50,000-URL pages cannot exhaust memory::

    store = MemoryStore(max_bytes=256 * 1024 * 1024, ttl=600)
    store.set("page|products|0|1", document)
    store.get("page|products|0|1")          # the Document, until the TTL or memory evicts it

Keys carry a per-section *generation*: `invalidate` bumps it, so documents rendered
before the bump can never be served again (they simply age out). A store also carries
the single-flight its documents are rendered under (`flights.Flights` in-process): a
shared store for a fleet (Redis) brings its own, with the same four methods.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from cachetools import TTLCache

from ..concurrency.flights import Flights, SingleFlight

__all__ = ["CacheStore", "Document", "MemoryStore"]

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
    """What the middleware needs from a cache; small on purpose, so a shared store fits.

    ``flights``: the single-flight under which this store's documents are rendered.
    """

    @property
    def flights(self) -> SingleFlight: ...

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
        self.flights = Flights()
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
            if section is None:
                self._epoch += 1
                self._documents.clear()
            else:
                self._generations[section] = self._generations.get(section, 0) + 1
            # After the generation: an answer that began before this line read either
            # the old generation (and is now refused by its older ticket) or the new one.
            self.invalidations += 1

    @property
    def current_bytes(self) -> int:
        """Bytes the stored documents are charged for (never above ``max_bytes``)."""
        with self._lock:
            return int(self._documents.currsize)


def _charge(document: Document) -> int:
    return len(document.body) + _ENTRY_OVERHEAD
