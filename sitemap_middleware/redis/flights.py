"""Single-flight across the fleet: a lock in Redis per cold document, with a timeout.

The first request anywhere to claim a document's lock (``SET NX PX``) leads its render;
requests for it elsewhere follow: they wait until the lock is gone, then read the
store. Requests in the leader's own process share its `LocalFlight`, exactly as with
`Flights`; those in another process share one `RemoteFlight` per document::

    lead, flight = store.flights.claim(key)     # the same protocol as `Flights`

`claim` is one round trip, made where the caller may block (`CacheStore.blocking`), with
no lock held meanwhile (requests here for the same key wait for its answer, for no other).
Everything else a flight needs from Redis is done by one background thread per process
(`RedisFlights._work`), so that a flight's ``over`` and ``release`` never wait on Redis
(the ASGI adapter calls them on the event loop): it deletes the locks of finished
renders, reads the locks followed here (all in one pipeline, every `WATCH_EVERY`), and
renews the locks held here every second or so with their progress (how long since the
provider's last batch, whether the leader waits on its own client), so followers
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

from ..caching import store_time
from ..concurrency.deadlines import Heartbeat, off_the_clock
from ..concurrency.flights import Flight, Flights, LocalFlight, stalled_by
from .link import Away, Link, fresh
from .scripts import Template

__all__ = ["RedisFlights", "RemoteFlight"]

# Seconds between two looks at the locks of renders led elsewhere (all at once).
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
        self._wake = threading.Condition(self._lock)
        self._flights: dict[str, Flight] = {}  # the flight local requests for a key follow
        self._asking: dict[str, threading.Event] = {}  # keys whose claim is on its way to Redis
        self._leads: dict[LocalFlight, _Lead] = {}
        self._ended: list[_Lead] = []  # locks of finished renders, for `_work` to delete
        self._worker: threading.Thread | None = None
        self._worker_pid = 0

    def claim(self, key: str, *, replacing: Flight | None = None) -> tuple[bool, Flight]:
        while True:
            with self._lock:
                current = self._flights.get(key)
                if current is not None and current is not replacing and not current.done.is_set():
                    return False, current
                asking = self._asking.get(key)
                if asking is None:
                    asking = self._asking[key] = threading.Event()
                    break
            # Another request here is asking Redis about this key: its answer is ours too.
            # No lock is held across a round trip, so other keys never queue behind it.
            with off_the_clock():
                store_time.charged(asking.wait)
        try:
            return self._claim(key, replacing)
        finally:
            with self._lock:
                del self._asking[key]
            asking.set()

    def _claim(self, key: str, replacing: Flight | None) -> tuple[bool, Flight]:
        template = Template.parse(key)
        token = uuid.uuid4().hex
        link = self._link
        try:
            if link.unheard(template.sections):
                raise Away  # Redis missed an invalidation of it: render it here, alone
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
            # A request that spent its time on Redis could not read what another render
            # stores: it renders for itself rather than wait for that render.
            if reply[1] == b"held" and link.out_of_time():
                raise Away
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
        with self._lock:
            if outcome == b"lead":
                flight = LocalFlight(key, self)
                self._flights[key] = flight
                self._leads[flight] = _Lead(lock, token, values)
                self._start_work()
                return True, flight
            remote = RemoteFlight(key, self, lock, reply[2], int(reply[3]))
            self._flights[key] = remote
            self._start_work()
            return False, remote

    def release(self, flight: Flight) -> None:
        """Ends ``flight`` here at once; its lock goes from Redis on the background thread.

        Never ends a newer flight of the same key (its lock has another token by then).
        """
        with self._lock:
            if self._flights.get(flight.key) is flight:
                del self._flights[flight.key]
            lead = self._leads.pop(flight, None) if isinstance(flight, LocalFlight) else None
            if lead is not None:
                self._ended.append(lead)
                self._wake.notify()
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

    def __len__(self) -> int:
        """Flights in progress here (observability, and tests that nothing stays claimed)."""
        with self._lock:
            return len(self._flights)

    def _token_of(self, flight: Flight | None) -> str:
        if isinstance(flight, RemoteFlight):
            return flight.token
        lead = self._leads.get(flight) if isinstance(flight, LocalFlight) else None
        return "" if lead is None else lead.token

    # -- the background thread: what no request waits on ---------------------------------------

    def _start_work(self) -> None:
        """Make sure this process has its background thread (a forked worker starts its own)."""
        pid = os.getpid()
        if self._worker is not None and self._worker_pid == pid and self._worker.is_alive():
            self._wake.notify()
            return
        self._worker = threading.Thread(target=self._work, name="sitemap-redis-flights", daemon=True)
        self._worker_pid = pid
        self._worker.start()

    def _work(self) -> None:
        """Delete ended locks, read followed ones, renew held ones; gone when there is none."""
        renew_at = time.monotonic() + self._renew_every
        while True:
            with self._lock:
                while True:
                    ended, self._ended = self._ended, []
                    followed = [f for f in self._flights.values() if isinstance(f, RemoteFlight)]
                    now = time.monotonic()
                    renewing = self._leads and now >= renew_at
                    if ended or followed or renewing:
                        break
                    if not self._leads:
                        self._worker = None
                        return
                    self._wake.wait(renew_at - now)
                leads = [(f, lead) for f, lead in self._leads.items() if lead.renewing] if renewing else []
            for lead in ended:
                with contextlib.suppress(Away):  # else it expires on its own
                    self._link.script("release", [lead.lock], [lead.token])
            if followed:
                self._look(followed)
            if renewing:
                self._renew(leads)
                renew_at = time.monotonic() + self._renew_every
            if followed:
                with self._lock:
                    if not self._ended:
                        self._wake.wait(WATCH_EVERY)

    def _look(self, followed: list[RemoteFlight]) -> None:
        """Read the locks of renders led elsewhere: gone or replaced ends the flight here."""
        link = self._link
        pipe = link.client.pipeline(transaction=False)
        for flight in followed:
            pipe.get(flight.lock)
            pipe.pttl(flight.lock)
        try:
            replies = link.call(pipe.execute)
        except Away:
            replies = [None, -2] * len(followed)  # without Redis, followers render for themselves
        for n, flight in enumerate(followed):
            flight.saw(replies[2 * n], int(replies[2 * n + 1]))

    def _renew(self, leads: list[tuple[LocalFlight, _Lead]]) -> None:
        for flight, lead in leads:
            now = time.monotonic()
            client = flight.client_wait()
            progress = (
                f"{lead.token}|{_ms(now - flight.started)}|{_ms(flight.heartbeat.silent_for())}"
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
        "_owner",
        "_progress",
        "_read_at",
        "_written",
        "done",
        "heartbeat",
        "key",
        "lock",
        "token",
    )

    def __init__(self, key: str, owner: RedisFlights, lock: str, held: bytes, pttl: int) -> None:
        self.key = key
        self.done = threading.Event()
        self.heartbeat = Heartbeat()  # a follower never renders under it
        self._owner = owner
        self.lock = lock  # its Redis key
        self.token = ""
        self._progress: tuple[float, float, float | None] = (0.0, 0.0, None)
        self._read_at = self._written = 0.0
        self._read(held, pttl)

    def _read(self, held: bytes, pttl: int) -> None:
        """Take the leader's token and progress from its lock's value and remaining time."""
        token, age, silent, client = held.decode().split("|")
        self.token = token
        self._progress = (int(age) / 1000, int(silent) / 1000, None if client == "-1" else int(client) / 1000)
        self._read_at = time.monotonic()
        self._written = max(0, self._owner.lock_ms - pttl) / 1000  # seconds since the leader wrote it

    def saw(self, held: bytes | None, pttl: int) -> None:
        """The lock as just read (`RedisFlights._look`): gone or replaced ends this flight."""
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
        return self.done.is_set() or self.stalled(stall_after)

    def release(self) -> None:
        self.done.set()
        self._owner.forget(self)


def _ms(seconds: float) -> int:
    return max(0, round(seconds * 1000))
