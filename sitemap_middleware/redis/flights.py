"""Single-flight across the fleet: a lock in Redis per cold document, with a timeout.

The first request anywhere to claim a document's lock (``SET NX PX``) leads its render;
requests for it elsewhere follow: they poll the lock until it is gone, then read the
store. Requests in the leader's own process share its `LocalFlight`, exactly as with
`Flights`; those in another process share one `RemoteFlight` per document::

    lead, flight = store.flights.claim(key)     # the same protocol as `Flights`

While it leads, a process renews its lock every second or so with its progress (how long
since its provider's last batch, whether it is waiting on its own client), so followers
elsewhere apply the very rules of `flights.stalled_by` and take over a stalled leader. A
dead leader renews nothing: its lock expires after ``lock_timeout`` and the next follower
leads. Without Redis, every claim leads alone: the request renders its own answer.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
import uuid
from dataclasses import dataclass

from ..concurrency.deadlines import Heartbeat
from ..concurrency.flights import Flight, Flights, LocalFlight, stalled_by
from .link import Away, Link, fresh
from .scripts import Template

__all__ = ["RedisFlights", "RemoteFlight"]

# Seconds between two looks at another process's lock, shared by its followers here.
WATCH_EVERY = 0.01
# At most this many seconds between two renewals of a lock (its progress as followers see it).
RENEW_EVERY = 1.0


@dataclass(slots=True)
class _Lead:
    lock: str  # the lock's Redis key
    token: str
    values: tuple[str, ...]  # the generations when it was claimed: what it renders from
    renewing: bool = True


class RedisFlights:
    """Fleet-wide `flights.SingleFlight` over one `Link`; ``lock_timeout`` in seconds."""

    def __init__(self, link: Link, lock_timeout: float) -> None:
        self._link = link
        self.lock_ms = max(1, round(lock_timeout * 1000))
        self._renew_every = min(RENEW_EVERY, lock_timeout / 3)
        self._lock = threading.Lock()
        self._flights: dict[str, Flight] = {}  # the flight local requests for a key follow
        self._leads: dict[LocalFlight, _Lead] = {}
        self._renewer: threading.Thread | None = None
        self._renewer_pid = 0

    def claim(self, key: str, *, replacing: Flight | None = None) -> tuple[bool, Flight]:
        with self._lock:
            current = self._flights.get(key)
            if current is not None and current is not replacing and not current.done.is_set():
                return False, current
            template = Template.parse(key)
            token = uuid.uuid4().hex
            link = self._link
            try:
                reply = link.script(
                    "claim",
                    [link.keys.generations],
                    [
                        link.keys.prefix,
                        fresh(),
                        self.lock_ms,
                        f"{token}|0|0|-1",
                        self._token_of(replacing),
                        *template.args(),
                    ],
                )
            except Away:
                link.stats.count("", "redis_fallbacks")
                return True, Flights().claim(key)[1]  # alone: shared with no one
            values = link.learn(template.sections, reply[0])
            outcome = reply[1]
            if outcome == b"stored":
                ended = LocalFlight(key, self)
                ended.done.set()
                return False, ended  # look again: it is there
            lock = link.keys.lock(template.render(values))
            if outcome == b"lead":
                flight = LocalFlight(key, self)
                self._flights[key] = flight
                self._leads[flight] = _Lead(lock, token, values)
                self._renew_soon()
                return True, flight
            remote = RemoteFlight(key, self, lock, reply[2], int(reply[3]))
            self._flights[key] = remote
            return False, remote

    def release(self, flight: Flight) -> None:
        """Never ends a newer flight of the same key (its lock has another token by then)."""
        with self._lock:
            if self._flights.get(flight.key) is flight:
                del self._flights[flight.key]
            lead = self._leads.pop(flight, None) if isinstance(flight, LocalFlight) else None
        if lead is not None:
            with contextlib.suppress(Away):  # else it expires on its own
                self._link.script("release", [lead.lock], [lead.token])
        flight.done.set()

    def forget(self, flight: Flight) -> None:
        """A flight led elsewhere is over: the next claim here asks Redis again."""
        with self._lock:
            if self._flights.get(flight.key) is flight:
                del self._flights[flight.key]

    def claimed(self, key: str) -> tuple[str, ...] | None:
        """The generations the oldest render of ``key`` led here was claimed under, if any."""
        with self._lock:
            leads = [
                (flight.started, lead.values) for flight, lead in self._leads.items() if flight.key == key
            ]
        return min(leads)[1] if leads else None

    def watch(self, lock: str) -> tuple[bytes | None, int]:
        """Another process's lock: its value and milliseconds left (`Away` without Redis)."""
        link = self._link
        pipe = link.client.pipeline(transaction=False)
        pipe.get(lock)
        pipe.pttl(lock)
        held, pttl = link.run(pipe.execute)
        return held, int(pttl)

    def __len__(self) -> int:
        """Flights in progress here (observability, and tests that nothing stays claimed)."""
        with self._lock:
            return len(self._flights)

    def _token_of(self, flight: Flight | None) -> str:
        if isinstance(flight, RemoteFlight):
            return flight.token
        lead = self._leads.get(flight) if isinstance(flight, LocalFlight) else None
        return "" if lead is None else lead.token

    # -- renewing the locks this process holds ---------------------------------------------

    def _renew_soon(self) -> None:
        pid = os.getpid()
        if self._renewer is not None and self._renewer_pid == pid and self._renewer.is_alive():
            return
        self._renewer = threading.Thread(target=self._renew, name="sitemap-redis-renew", daemon=True)
        self._renewer_pid = pid
        self._renewer.start()

    def _renew(self) -> None:
        while True:
            time.sleep(self._renew_every)
            with self._lock:
                if not self._leads:
                    self._renewer = None
                    return
                leads = [(flight, lead) for flight, lead in self._leads.items() if lead.renewing]
            for flight, lead in leads:
                now = time.monotonic()
                client = flight.client_wait()
                progress = (
                    f"{lead.token}|{_ms(now - flight.started)}|{_ms(now - flight.heartbeat.last)}"
                    f"|{-1 if client is None else _ms(client)}"
                )
                try:
                    kept = self._link.script("renew", [lead.lock], [lead.token, progress, self.lock_ms])
                except Away:
                    continue  # it may expire: then another worker renders too, never none
                if not kept:
                    lead.renewing = False  # taken over: the new leader's now


class RemoteFlight:
    """A render led by another process, as the requests here that follow it see it."""

    __slots__ = (
        "_lock",
        "_next_look",
        "_owner",
        "_progress",
        "_read_at",
        "_watching",
        "_written",
        "done",
        "heartbeat",
        "key",
        "token",
    )

    def __init__(self, key: str, owner: RedisFlights, lock: str, held: bytes, pttl: int) -> None:
        self.key = key
        self.done = threading.Event()
        self.heartbeat = Heartbeat()  # a follower never renders under it
        self._owner = owner
        self._lock = lock
        self._watching = threading.Lock()
        self.token = ""
        self._progress: tuple[float, float, float | None] = (0.0, 0.0, None)
        self._read_at = self._written = self._next_look = 0.0
        self._read(held, pttl)

    def _read(self, held: bytes, pttl: int) -> None:
        """Take the leader's token and progress from its lock's value and remaining time."""
        token, age, silent, client = held.decode().split("|")
        self.token = token
        self._progress = (int(age) / 1000, int(silent) / 1000, None if client == "-1" else int(client) / 1000)
        self._read_at = time.monotonic()
        self._written = max(0, self._owner.lock_ms - pttl) / 1000  # seconds since the leader wrote it
        self._next_look = self._read_at + WATCH_EVERY

    def _look(self) -> None:
        """Read the lock again (at most every `WATCH_EVERY` s): gone or replaced ends this flight."""
        if time.monotonic() < self._next_look or not self._watching.acquire(blocking=False):
            return
        try:
            held, pttl = self._owner.watch(self._lock)
        except Away:
            held = None  # without Redis, followers render for themselves
        finally:
            self._watching.release()
        if held is None or not held.startswith(f"{self.token}|".encode()):
            self.release()  # done, failed, expired, or taken over: look in the store
        else:
            self._read(held, pttl)

    def sending(self) -> None:
        pass  # a follower sends nothing while it follows

    def sent(self) -> None:
        pass

    def stalled(self, stall_after: float | None) -> bool:
        since = self._written + time.monotonic() - self._read_at
        age, silent, client = self._progress
        return stalled_by(
            age + since, silent + since, None if client is None else client + since, stall_after
        )

    def over(self, stall_after: float | None) -> bool:
        if not self.done.is_set():
            self._look()
        return self.done.is_set() or self.stalled(stall_after)

    def release(self) -> None:
        self.done.set()
        self._owner.forget(self)


def _ms(seconds: float) -> int:
    return max(0, round(seconds * 1000))
