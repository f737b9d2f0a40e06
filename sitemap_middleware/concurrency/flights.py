"""Single-flight: at most one render of a document at a time, and how long others wait for it.

The first request for a cold document *leads* its render; requests for the same document
meanwhile *follow*. In the leader's process a follower reads the render as it grows
(`caching.growing`) as soon as it has begun; elsewhere (a shared store), and while it has
not, a follower waits for the leader, then reads the store. It stops waiting when the
flight is over, and a flight is over when the leader is done, or has stalled: no
progress from its provider for the provider deadline, or its render waiting longer than
`CLIENT_PATIENCE` for a reader to want the next chunk (under WSGI, readers make the
chunks: a client that stopped reading must never hold other clients' page). A follower
of a stalled flight then takes the document over with a flight of its own, which the
others follow::

    flights = Flights()
    lead, flight = flights.claim("page|products|2")
    if lead:
        try:
            ...render, store...
        finally:
            flight.release()        # on every way out: followers wake at once
    else:
        while not flight.over(stall_after=120): ...wait...

`CacheStore` implementations carry their own `flights` (a shared store brings a
fleet-wide lock; `Flights` is per process). What the answer path needs of a flight is the
`Flight` protocol; `LocalFlight` is the in-process one, and one place (`stalled_by`) says
when a leader has stalled, wherever its progress is read from.
"""

from __future__ import annotations

import threading
import time
from typing import Protocol

from .deadlines import Heartbeat

__all__ = [
    "CLIENT_PATIENCE",
    "FOLLOW_TIMEOUT",
    "Flight",
    "Flights",
    "LocalFlight",
    "SingleFlight",
    "stalled_by",
]

# A follower never waits longer than this in all for one flight, whatever its progress.
FOLLOW_TIMEOUT = 60.0
# A leader blocked this long handing one chunk to its client has a slow reader: its
# followers stop waiting for it and render the page themselves.
CLIENT_PATIENCE = 5.0


class Flight(Protocol):
    """One render in progress, as its leader and its followers see it.

    - ``key``: the document it renders.
    - ``done``: set once the flight has ended (its followers may look in the store).
    - ``heartbeat``: renewed by every batch the leader's provider yields.
    - ``sending``/``sent``: the render waits for its readers to want the next chunk, and
      goes on (`caching.recording`).
    - ``stalled``/``over``: whether a follower should stop waiting (see `stalled_by`).
    - ``release``: end the flight and wake its followers; idempotent.
    """

    @property
    def key(self) -> str: ...

    @property
    def done(self) -> threading.Event: ...

    @property
    def heartbeat(self) -> Heartbeat: ...

    def sending(self) -> None: ...

    def sent(self) -> None: ...

    def stalled(self, stall_after: float | None) -> bool: ...

    def over(self, stall_after: float | None) -> bool: ...

    def release(self) -> None: ...


def stalled_by(age: float, silent_for: float, client_wait: float | None, stall_after: float | None) -> bool:
    """Whether a leader has stalled: too old, its client too slow, or its provider silent.

    ``age``: seconds since it claimed; ``silent_for``: since its provider's last batch;
    ``client_wait``: how long it has been handing one chunk to its client (``None``: not).
    """
    if client_wait is not None and client_wait > CLIENT_PATIENCE:
        return True
    if age > FOLLOW_TIMEOUT:
        return True
    return stall_after is not None and silent_for > stall_after


class LocalFlight:
    """An in-process `Flight`: its progress, whether its leader is waiting on its client, done.

    ``owner``: the single-flight that ends it (``owner.release(flight)``).
    """

    __slots__ = ("_client_since", "_owner", "done", "heartbeat", "key", "started")

    def __init__(self, key: str, owner: SingleFlight) -> None:
        self.key = key
        self._owner = owner
        self.done = threading.Event()
        self.heartbeat = Heartbeat()  # renewed by every batch the leader's provider yields
        self.started = time.monotonic()
        self._client_since: float | None = None

    def sending(self) -> None:
        """The leader hands a chunk to its client: the time until `sent` is the client's."""
        self._client_since = time.monotonic()

    def sent(self) -> None:
        self._client_since = None
        self.heartbeat.last = time.monotonic()

    def client_wait(self) -> float | None:
        """Seconds the leader has been handing its current chunk over (``None``: not sending)."""
        since = self._client_since
        return None if since is None else time.monotonic() - since

    def stalled(self, stall_after: float | None) -> bool:
        """No provider progress for ``stall_after`` s, or a client too slow to take a chunk."""
        return stalled_by(
            time.monotonic() - self.started, self.heartbeat.silent_for(), self.client_wait(), stall_after
        )

    def over(self, stall_after: float | None) -> bool:
        """Whether a follower should stop waiting: done, or stalled."""
        return self.done.is_set() or self.stalled(stall_after)

    def release(self) -> None:
        """End this flight and wake its followers; idempotent."""
        self._owner.release(self)


class SingleFlight(Protocol):
    """What the answer path needs from a store's single-flight (a Redis lock fits too)."""

    def claim(self, key: str, *, replacing: Flight | None = None) -> tuple[bool, Flight]: ...

    def release(self, flight: Flight) -> None: ...


class Flights:
    """In-process single-flight, per key."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._flights: dict[str, LocalFlight] = {}

    def claim(self, key: str, *, replacing: Flight | None = None) -> tuple[bool, Flight]:
        """``(True, flight)`` for a new leader, ``(False, flight)`` for a follower.

        ``replacing``: a stalled flight the caller gave up on; if it is still the
        current one, the caller leads a new flight in its place.
        """
        with self._lock:
            current = self._flights.get(key)
            if current is not None and current is not replacing:
                return False, current
            flight = self._flights[key] = LocalFlight(key, self)
            return True, flight

    def release(self, flight: Flight) -> None:
        """Never ends a newer flight of the same key: an abandoned render may end late."""
        with self._lock:
            if self._flights.get(flight.key) is flight:
                del self._flights[flight.key]
        flight.done.set()

    def __len__(self) -> int:
        """Flights in progress (observability, and tests that nothing stays claimed)."""
        with self._lock:
            return len(self._flights)
