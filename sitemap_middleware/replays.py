"""Conditional answers remembered per exact request, and replayed while they still stand.

Crawlers and CDNs revalidate far more often than pages change, so most requests for a
cached document are the same conditional request again: the same path, the same
``If-None-Match``. The first is answered in full (routing, cache, validators); its 304
is remembered under the request's *signature* (method, mount and every header we read,
exactly as received) with the stored document it was computed from. A repeat is
replayed after a dict lookup and an identity check: the store still holds that very
document, its TTL has not run out, and nothing was invalidated since the first answer
began. Anything else takes the full path::

    ticket = replays.ticket()                          # before answering in full
    reply = ...                                        # the full answer
    replays.remember(path, signature, reply, ticket)   # kept if it is a replayable 304
    replays.find(path, signature)                      # the same Reply, or None

Only 304s are remembered: they have no body, so this holds a bounded number of small
entries and never keeps alive a document the cache has let go of. It needs a
`MemoryStore`, whose state can be checked without a lock; a shared store is not
checked per request, so nothing is replayed over one.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

from .cache import MemoryStore
from .replies import Origin, Reply
from .stats import Stats

__all__ = ["Replays"]

# Entries across all paths: distinct (path, signature) pairs that ended in a 304.
DEFAULT_LIMIT = 4096


@dataclass(frozen=True, slots=True)
class _Replay:
    reply: Reply
    origin: Origin
    ticket: int


class Replays:
    """Remembered 304s over one `MemoryStore`, at most ``limit`` of them."""

    def __init__(self, store: MemoryStore, stats: Stats, *, limit: int = DEFAULT_LIMIT) -> None:
        self._store = store
        self._stats = stats
        self._limit = limit
        self._size = 0
        self._by_path: dict[str, dict[Hashable, _Replay]] = {}

    def __contains__(self, path: object) -> bool:
        """Whether anything is remembered for ``path``: one lookup, before building a signature."""
        return path in self._by_path

    def __len__(self) -> int:
        return sum(len(remembered) for remembered in self._by_path.values())

    def ticket(self) -> int:
        """Taken before a full answer starts: an invalidation after it voids the answer."""
        return self._store.invalidations

    def find(self, path: str, signature: Hashable) -> Reply | None:
        """The remembered reply for this exact request if it still stands (counted as a 304)."""
        remembered = self._by_path.get(path)
        if remembered is None:
            return None
        replay = remembered.get(signature)
        if replay is None:
            return None
        store = self._store
        origin = replay.origin
        held = store.holding(origin.key)
        if (
            held is None
            or held[0] is not origin.document()
            or store.timer() >= held[1]
            or store.invalidations != replay.ticket
        ):
            if remembered.pop(signature, None) is not None:
                self._size -= 1
            return None
        self._stats.count(origin.section, "not_modified")
        return replay.reply

    def remember(self, path: str, signature: Hashable, reply: Reply, ticket: int) -> None:
        """Keep ``reply`` for repeats of this request, if it is a 304 from a stored document."""
        origin = reply.origin
        if reply.status != 304 or origin is None or ticket != self._store.invalidations:
            return
        if self._size >= self._limit:
            # Signatures come from clients: when full, start again rather than grow.
            self._by_path = {}
            self._size = 0
        remembered = self._by_path.setdefault(path, {})
        if signature not in remembered:
            self._size += 1
        remembered[signature] = _Replay(reply, origin, ticket)
