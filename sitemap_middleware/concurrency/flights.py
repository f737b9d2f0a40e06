"""Single-flight: at most one render of a document at a time, and how long others wait for it.

The first request for a cold document *leads* its render; requests for the same document
meanwhile *follow*: they wait for the leader, then read the store. A follower stops
waiting when the flight is over, and a flight is over when the leader is done, or has
stalled: no progress from its provider for the provider deadline, or stuck handing a
chunk to its own client for longer than `CLIENT_PATIENCE` (a client that stopped
reading must never hold other clients' page). A follower of a stalled flight then
takes the document over with a flight of its own, which the others follow::

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
fleet-wide lock; this one is per process).
"""

from __future__ import annotations

import threading
import time
from typing import Protocol

from .deadlines import Heartbeat

__all__ = ["CLIENT_PATIENCE", "FOLLOW_TIMEOUT", "Flight", "Flights", "SingleFlight"]

# A follower never waits longer than this in all for one flight, whatever its progress.
FOLLOW_TIMEOUT = 60.0
# A leader blocked this long handing one chunk to its client has a slow reader: its
# followers stop waiting for it and render the page themselves.
CLIENT_PATIENCE = 5.0


class Flight:
    """One render in progress: its progress, whether its leader is waiting on its client, done."""

    __slots__ = ("_client_since", "_owner", "done", "heartbeat", "key", "started")

    def __init__(self, key: str, owner: Flights) -> None:
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

    def stalled(self, stall_after: float | None) -> bool:
        """No provider progress for ``stall_after`` s, or a client too slow to take a chunk."""
        since = self._client_since
        now = time.monotonic()
        if since is not None and now - since > CLIENT_PATIENCE:
            return True
        if now - self.started > FOLLOW_TIMEOUT:
            return True
        return stall_after is not None and now - self.heartbeat.last > stall_after

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
        self._flights: dict[str, Flight] = {}

    def claim(self, key: str, *, replacing: Flight | None = None) -> tuple[bool, Flight]:
        """``(True, flight)`` for a new leader, ``(False, flight)`` for a follower.

        ``replacing``: a stalled flight the caller gave up on; if it is still the
        current one, the caller leads a new flight in its place.
        """
        with self._lock:
            current = self._flights.get(key)
            if current is not None and current is not replacing:
                return False, current
            flight = self._flights[key] = Flight(key, self)
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
