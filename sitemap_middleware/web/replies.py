"""The words adapters and the service share: a `Request` in, a `Reply` out, and stock replies.

Request(method="GET", path="/sitemap-index.xml", headers={"accept-encoding": "gzip"})
plain(404, b"Not Found\n")   # Reply(404, [("Content-Type", ...), ...], b"Not Found\n")
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import NamedTuple

from ..caching.growing import Growing, Reader
from ..caching.stores import Document
from ..errors import ProviderError
from . import rules
from .sites import HOST_HEADERS

__all__ = [
    "REQUEST_HEADERS",
    "RETRY_AFTER_SECONDS",
    "Origin",
    "Reply",
    "Request",
    "early",
    "plain",
    "unavailable",
    "unknown_host",
]

RETRY_AFTER_SECONDS = 120
# Every request header we read (lowercase); both adapters pick exactly these.
REQUEST_HEADERS = ("accept-encoding", "if-none-match", "if-modified-since", *HOST_HEADERS)


class Request(NamedTuple):
    """What we read from a request: method, path below the mount prefix, a few headers.

    ``received``: when it arrived (epoch seconds): a document first produced for it is
    dated no later, so its Last-Modified never follows the response's Date. A named
    tuple, not a frozen dataclass: one is built per request, and a named tuple builds
    faster (benchmarks/HISTORY.md, "Figures behind the code's choices").
    """

    method: str
    path: str
    prefix: str = ""
    headers: Mapping[str, str] = MappingProxyType({})  # lowercase names
    received: float = 0.0

    def header(self, name: str) -> str | None:
        return self.headers.get(name) or None


@dataclass(frozen=True, slots=True)
class Origin:
    """The stored document a reply was computed from: what must still hold to replay it.

    - ``document``: a weak reference, so a remembered answer never keeps alive a body
      the cache has let go of; a replay takes the body from it (``sends_body``).
    - ``counters``: what a replay counts for ``section`` (the same as the full answer).
    """

    key: str
    document: weakref.ref[Document]
    section: str
    counters: tuple[str, ...]
    sends_body: bool = False


@dataclass(slots=True)
class Reply:
    """Status, headers and a body (bytes, or a stream); the adapter calls `finish` once sent.

    A reply may *hold* claims taken while answering (a single-flight): `finish` releases
    them, whatever became of the body, so the adapter's ``finally`` is the one place
    they end, even for a body that was never iterated or is stuck in another thread.
    """

    status: int
    headers: list[tuple[str, str]]
    body: bytes | Iterator[bytes] | Reader = b""
    # The same headers as ASGI wants them, when they were encoded once ahead of time.
    raw_headers: list[tuple[bytes, bytes]] | None = None
    # Set on an answer from a stored document that a repeat of the request may replay
    # (`replays`): a 304, a HEAD, or a 200 whose body is the stored gzip body itself.
    origin: Origin | None = None
    # The render this reply's request drives (a leader's cold page): the adapter makes it
    # while the body, a reader of it like any follower's, is sent at the client's pace.
    growing: Growing | None = None
    _held: list[Callable[[], None]] | None = None

    def hold(self, release: Callable[[], None]) -> None:
        """Release ``release`` when this reply is finished."""
        if self._held is None:
            self._held = []
        self._held.append(release)

    @property
    def holds(self) -> bool:
        return bool(self._held)

    def abandon(self) -> None:
        """Nobody will send this reply: the request it was made for gave up on it while it
        was made (`concurrency.deadlines.drop_unclaimed`). Its render ends for every client
        that joined it meanwhile (they get the error, never a render nobody steps), then
        the reply is finished."""
        try:
            if self.growing is not None:
                self.growing.fail(ProviderError("the request rendering this page gave up on it"))
        finally:
            self.finish()

    def finish(self) -> None:
        """Close the body and release what the reply holds; safe to call more than once.

        A body a stalled provider still runs in another thread cannot be closed
        ("generator already executing"): the claims go at once all the same, and the
        generator is closed once that thread drops it (CPython closes a suspended
        generator when it is collected).
        """
        try:
            close = getattr(self.body, "close", None)
            if close is not None:
                with contextlib.suppress(ValueError):  # still running in another thread
                    close()
        finally:
            held, self._held = self._held, None
            for release in held or ():
                release()
            if self.growing is not None:
                # A render this reply led but nobody is reading (its response never began):
                # ended now, never left in flight for later requests to join.
                self.growing.stop_if_unread()


def unknown_host() -> Reply:
    """The answer for a host outside the allow-list, with ``Hosts(..., reject_unknown=True)``."""
    return plain(400, b"Unknown host\n")


def unavailable() -> Reply:
    # Not a 500, and never an empty document: crawlers would read "all URLs gone".
    return plain(503, b"Sitemap temporarily unavailable\n", [("Retry-After", str(RETRY_AFTER_SECONDS))])


def early(route: rules.Route, request: Request) -> Reply | None:
    """Answers that need neither the cache nor a provider."""
    if request.method not in rules.ALLOWED_METHODS:
        return plain(405, b"Method Not Allowed\n", [("Allow", rules.ALLOW_HEADER)])
    if route.kind == "missing":
        return plain(404, b"Not Found\n")
    return None


def plain(status: int, body: bytes, extra: list[tuple[str, str]] | None = None) -> Reply:
    headers = [("Content-Type", rules.TEXT_TYPE), ("Content-Length", str(len(body)))]
    return Reply(status, headers + (extra or []), body)
