"""Answers from the cache remembered per exact request, and replayed while they still stand.

Crawlers and CDNs ask for the same cached document again and again, mostly with the
same headers: the same ``If-None-Match`` (a 304), or the same ``Accept-Encoding: gzip``
(the stored gzip body as it is). The first request is answered in full (routing, cache,
validators); its answer is remembered under the request's *signature* (the site, method,
mount and the conditional and encoding headers, exactly as received) with the stored
document it came from.
A repeat is replayed after a dict lookup and one ordinary cache lookup, which must find
that very document (not expired, evicted or replaced; and it counts as a hit, so the
page stays warm), with nothing invalidated since the first answer began. Anything else
takes the full path::

    ticket = replays.ticket()                          # before answering in full
    reply = ...                                        # the full answer
    replays.remember(site_root, request, reply, ticket)   # kept if it came from a document
    replays.find(site_root, request)                   # the same answer again, or None

Bodies are never kept here: a replayed 200 takes its body from the document, held by
a weak reference, so this holds a bounded number of small entries and never keeps alive
a document the cache has let go of. Identity answers (the store's identity copy, or
inflated) are not replayed. It needs a `stores.Replayable` store (`MemoryStore` is one): one
that hands back the very object it stored, which is what is checked (a shared store returns a
fresh copy each time, and is never replayed).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

from ..stats import Stats
from ..web.replies import Origin, Reply, Request
from .stores import Replayable

__all__ = ["Replays"]

# Entries across all paths: distinct (path, signature) pairs answered from a stored document.
DEFAULT_LIMIT = 4096
# The most characters of the headers a signature holds (Accept-Encoding, If-None-Match,
# If-Modified-Since): a client sending huge header values gets full answers, never memory of ours.
_MAX_SIGNED = 512


@dataclass(frozen=True, slots=True)
class _Replay:
    status: int
    headers: list[tuple[str, str]]
    raw_headers: list[tuple[bytes, bytes]] | None
    origin: Origin
    ticket: int


class Replays:
    """Remembered answers over one `Replayable` store, at most ``limit`` of them."""

    def __init__(self, store: Replayable, stats: Stats, *, limit: int = DEFAULT_LIMIT) -> None:
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

    def find(self, site_root: str, request: Request) -> Reply | None:
        """The answer to this exact request again, if it still stands (counted as the first was)."""
        remembered = self._by_path.get(request.path)
        if remembered is None:
            return None
        signature = _signature(site_root, request)
        replay = remembered.get(signature) if signature is not None else None
        if replay is None:
            return None
        store = self._store
        origin = replay.origin
        document = origin.document()
        # The lookup is a cache hit like any other: a replayed page stays warm (LRU), and
        # an expired, evicted or replaced document is not the one remembered.
        if document is None or store.invalidations != replay.ticket or store.get(origin.key) is not document:
            if remembered.pop(signature, None) is not None:
                self._size -= 1
            return None
        self._stats.count_each(origin.section, (*origin.counters, "replayed"))
        body = document.body if origin.sends_body else b""
        return Reply(replay.status, replay.headers, body, raw_headers=replay.raw_headers)

    def remember(self, site_root: str, request: Request, reply: Reply, ticket: int) -> None:
        """Keep ``reply`` for repeats of this request, if it came from a stored document.

        Its body is not kept: a replay takes it from the document, if that still stands.
        """
        origin = reply.origin
        if origin is None or ticket != self._store.invalidations:
            return
        signature = _signature(site_root, request)
        if signature is None:
            return
        path = request.path
        if self._size >= self._limit:
            # Signatures come from clients: when full, start again rather than grow.
            self._by_path = {}
            self._size = 0
        remembered = self._by_path.setdefault(path, {})
        if signature not in remembered:
            self._size += 1
        remembered[signature] = _Replay(reply.status, reply.headers, reply.raw_headers, origin, ticket)


def _signature(site_root: str, request: Request) -> Hashable | None:
    """What of the request its answer depends on, or ``None`` when too large to keep."""
    headers = request.headers
    encoding = headers.get("accept-encoding", "")
    etags = headers.get("if-none-match", "")
    since = headers.get("if-modified-since", "")
    if len(encoding) + len(etags) + len(since) > _MAX_SIGNED:
        return None
    return (site_root, request.method, request.prefix, encoding, etags, since)
