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

A `MemoryStore` also keeps the *identity copy* of a document asked for without gzip, so
the next such request sends bytes instead of inflating them again::

    if store.claim_identity(key, document):          # room to spare, and nobody making it
        store.keep_identity(key, document, inflated)  # ends the claim, whatever became of it
    store.identity(key, document)                     # the copy, while the document is stored

Copies live in the same byte budget, only in room the documents leave spare (they go
first when a document needs it), and go with their document: evicted, expired,
replaced or cleared, the copy is dropped, never served for another document.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import NamedTuple, Protocol, cast

from cachetools import TTLCache

from ..concurrency.flights import Flights, SingleFlight

__all__ = [
    "CacheStore",
    "Document",
    "IdentityCopies",
    "MemoryStore",
    "Replayable",
    "identity_copies",
    "max_document_bytes",
    "replayable",
]

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

    - ``flights``: the single-flight under which this store's documents are rendered.
    - ``blocking``: whether a call (``get``, ``set``, a claim) may wait on the network.
      The ASGI adapter then makes every one in a worker thread, so that a slow or silent
      store never stalls the event loop; ``False`` only for a store that answers from
      memory, called on the loop at no thread hop. A store without it counts as blocking.
      A blocking store may also offer ``aget(key, clients)``, its ``get`` through an
      asyncio client it keeps in ``clients`` (`concurrency.loop_clients`): the ASGI
      adapter awaits a request's lookup on the loop through it (`RedisStore`).
    - ``generation`` never waits on the network, whatever ``blocking`` says: keys are
      built on the event loop (a shared store resolves generations inside its own calls).
    - A store may declare ``max_document_bytes``, the largest body it stores: a cold page
      past it will not be kept, so its render is paced by its readers (`caching.growing`).
    """

    blocking: bool

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


class Replayable(CacheStore, Protocol):
    """A store whose answers may be replayed without a lookup (`caching.replays`).

    It declares ``replayable = True``, and so promises that ``get`` hands back the very
    object ``set`` stored (a replay checks it is still stored by identity; a shared store,
    which decodes a fresh copy each time, cannot) and that ``invalidations`` grows with
    every `invalidate`, before it returns (a replay remembered before it no longer stands).
    """

    replayable: bool
    invalidations: int


class IdentityCopies(CacheStore, Protocol):
    """A store that can keep, beside a stored document, its identity (uncompressed) bytes.

    It declares ``identity_copies = True``; the protocol of the three calls is
    `MemoryStore`'s (see the module's docstring): a copy is claimed, made off the
    event loop, kept or not, and served only while its very document is stored.
    """

    identity_copies: bool

    def identity(self, key: str, document: Document) -> bytes | None: ...

    def claim_identity(self, key: str, document: Document) -> bool: ...

    def keep_identity(self, key: str, document: Document, body: bytes | None) -> None: ...


def replayable(store: CacheStore | None) -> Replayable | None:
    """``store``, if it declares it may be replayed (a capability, never a class)."""
    return cast(Replayable, store) if getattr(store, "replayable", False) else None


def max_document_bytes(store: CacheStore | None) -> int | None:
    """The largest body ``store`` declares it keeps (``None``: any, or no store)."""
    limit = getattr(store, "max_document_bytes", None)
    return limit if isinstance(limit, int) else None


def identity_copies(store: CacheStore | None) -> IdentityCopies | None:
    """``store``, if it declares it keeps identity copies."""
    return cast(IdentityCopies, store) if getattr(store, "identity_copies", False) else None


class _Copy(NamedTuple):
    """The identity bytes of one stored document, and the document they belong to."""

    document: weakref.ref[Document]
    body: bytes


class MemoryStore:
    """In-process `CacheStore`: LRU within a byte budget, each entry living ``ttl`` seconds.

    - ``max_bytes``: total bytes of stored bodies (plus a small per-entry overhead),
      identity copies included.
    - ``max_document_bytes``: the largest body stored (an eighth of ``max_bytes`` by
      default); a larger one is served, never stored: room for it would evict much of what
      is hot, section plans among them, which cost a pass over the section to make again.
    - ``ttl``: seconds a document is served before it is rendered again.
    - ``timer``: a monotonic clock; inject a fake one in tests instead of sleeping.
    """

    def __init__(
        self,
        *,
        max_bytes: int = 256 * 1024 * 1024,
        max_document_bytes: int | None = None,
        ttl: float = 600.0,
        timer: Callable[[], float] = time.monotonic,
    ) -> None:
        # Reentrant: a copy's weakref callback may run inside an eviction, under the lock.
        self._lock = threading.RLock()
        self._documents: TTLCache[str, Document] = TTLCache(
            maxsize=max_bytes, ttl=ttl, timer=timer, getsizeof=_charge
        )
        self._copies: dict[str, _Copy] = {}  # oldest first: the first to go for room
        self._copy_bytes = 0
        self._making: dict[str, int] = {}  # copies being made (one per key), and the room each takes
        self._generations: dict[str, int] = {}
        self._epoch = 0
        self.max_bytes = max_bytes
        self.max_document_bytes = max_bytes // 8 if max_document_bytes is None else max_document_bytes
        self.ttl = ttl
        self.flights = Flights()
        self.blocking = False  # answered from memory: on the event loop, no thread hop
        # Capabilities (`Replayable`, `IdentityCopies`): `get` returns the stored object itself.
        self.replayable = True
        self.identity_copies = True
        # Bumped by every `invalidate`: an answer remembered before it no longer stands.
        self.invalidations = 0

    def get(self, key: str) -> Document | None:
        with self._lock:
            try:
                return self._documents[key]  # one lookup: `get` would test, then look up
            except KeyError:  # never stored, expired or evicted
                return None

    def set(self, key: str, document: Document) -> None:
        charge = _charge(document)
        if len(document.body) > self.max_document_bytes or charge > self.max_bytes:
            return  # served, never stored
        with self._lock:
            self._drop_copy(key)  # it belonged to the document this one replaces
            # Copies only ever use room documents leave spare: they make way first.
            while self._copies and self._documents.currsize + charge + self._copy_bytes > self.max_bytes:
                self._drop_copy(next(iter(self._copies)))
            self._documents[key] = document
            self._drop_orphans()  # of the documents this one evicted or that expired

    def identity(self, key: str, document: Document) -> bytes | None:
        """The identity bytes kept for ``document`` (as `get` returned it for ``key``), if any."""
        copy = self._copies.get(key)
        if copy is not None and copy.document() is document:
            return copy.body
        return None

    def claim_identity(self, key: str, document: Document) -> bool:
        """Whether to make the identity copy of ``document`` now: it is the one stored under
        ``key``, none is kept or being made for it, and the cache has room to spare for it.

        A ``True`` must be followed by `keep_identity`, whatever becomes of the copy.
        """
        charge = document.size + _ENTRY_OVERHEAD
        with self._lock:
            if key in self._making or self.identity(key, document) is not None:
                return False
            if self._documents.get(key) is not document:
                return False
            # Copies being made hold their room too: inflating whole never outgrows the spare room.
            if self._spare() < charge:
                return False
            self._making[key] = charge
            return True

    def keep_identity(self, key: str, document: Document, body: bytes | None) -> None:
        """End the claim on ``key``'s copy; keep ``body`` (``None``: none was made) if it is
        ``document``'s, ``document`` is still stored, and there is still room for it."""
        with self._lock:
            self._making.pop(key, None)
            if body is None or len(body) != document.size or self._documents.get(key) is not document:
                return
            charge = len(body) + _ENTRY_OVERHEAD
            if self._spare() < charge:
                return
            self._drop_copy(key)
            self._copies[key] = _Copy(weakref.ref(document, partial(self._forget, key)), body)
            self._copy_bytes += charge

    def _spare(self) -> int:
        return self.max_bytes - int(self._documents.currsize) - self._copy_bytes - sum(self._making.values())

    def _forget(self, key: str, gone: weakref.ref[Document]) -> None:
        """A document was collected: its copy goes with it (a weakref callback)."""
        with self._lock:
            copy = self._copies.get(key)
            if copy is not None and copy.document is gone:
                self._drop_copy(key)

    def _drop_copy(self, key: str) -> None:
        copy = self._copies.pop(key, None)
        if copy is not None:
            self._copy_bytes -= len(copy.body) + _ENTRY_OVERHEAD

    def _drop_orphans(self) -> None:
        """Drop the copies whose document the cache no longer holds (evicted, expired)."""
        for key in [key for key in self._copies if key not in self._documents]:
            self._drop_copy(key)

    def generation(self, section: str) -> str:
        # No lock: read on every request, and a read racing `invalidate` returns either
        # token (or a mix that matches no stored key): never a document from before.
        return f"{self._epoch}.{self._generations.get(section, 0)}"

    def invalidate(self, section: str | None = None) -> None:
        with self._lock:
            if section is None:
                self._epoch += 1
                self._documents.clear()
                self._copies.clear()
                self._copy_bytes = 0
            else:
                self._generations[section] = self._generations.get(section, 0) + 1
            # After the generation: an answer that began before this line read either
            # the old generation (and is now refused by its older ticket) or the new one.
            self.invalidations += 1

    @property
    def current_bytes(self) -> int:
        """Bytes the stored documents and their copies are charged for (never above ``max_bytes``)."""
        with self._lock:
            return int(self._documents.currsize) + self._copy_bytes


def _charge(document: Document) -> int:
    return len(document.body) + _ENTRY_OVERHEAD
