"""The push thread: delivers the change log's outbox to its targets, off every request.

One thread per `Sitemaps` in each process, started lazily (the first change recorded, the
first request, a refresh), never at import or construction: a server that preloads the
app forks after constructing it, and a thread does not survive a fork. It wakes when a
page recorded changes, waits ``window`` seconds more (a burst of saves is one POST), and
also polls every ``poll`` seconds: in a fleet other workers record changes, and after a
restart what was never answered is still waiting::

    dispatcher = Dispatcher(log, ["https://shop.example"], stats, Push([IndexNow(key=KEY)]))
    dispatcher.changed()         # a page recorded changes: deliver in `window` seconds
    dispatcher.now()             # or deliver everything now, on this thread
    dispatcher.close()

Each delivery is claimed from the log under a lease held by this process and thread, sent,
then acknowledged (answered: `Sent`, `Refused`) or released (`Retry`, an exception), the
consumer then waiting out a backoff. Counted per consumer in ``stats``: ``sent``,
``retried``, ``refused`` (deliveries) and ``pending`` (changes waiting).
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from ..answers.key_files import KeyFiles
from ..changes.log import ChangeLog
from ..changes.model import Delivery
from ..changes.watch import Recorder
from ..config import check_timeout
from ..errors import ConfigurationError
from ..protocol.uris import Site
from ..stats import Stats, _cap, logger
from .hooks import ChangeCallback, Hook
from .retry import Backoff
from .target import Outcome, Refused, Retry, Sent, Target

__all__ = ["ChangeCallback", "Dispatcher", "Push", "Pushed", "Target"]

# Bumped in every forked child: a dispatcher started before a fork is not running after it.
_forks = [0]
os.register_at_fork(after_in_child=lambda: _forks.__setitem__(0, _forks[0] + 1))
_STOP_WAIT = 5.0  # seconds `close` waits for a send in progress


class Push:
    """The push targets of one `Sitemaps`, and how they are delivered.

    Example::

        Sitemaps(base_url=..., changes=ChangeLog.sqlite(path),
                 push=Push([IndexNow(key="...")], window=2.0, poll=5.0))

    - ``targets``: `Target`s (``IndexNow``, a purge, your own).
    - ``window``: seconds between the first change recorded and its delivery, so a burst
      of saves is one delivery.
    - ``poll``: seconds between two looks at the outbox when nothing woke the thread
      (changes recorded by other workers, or left unanswered before a restart).
    - ``lease``: seconds a claimed delivery is this worker's; past it another worker may
      send it. Longer than any target's ``timeout``.
    - ``backoff``: how long a consumer waits after a failure (`Backoff`).
    """

    def __init__(
        self,
        targets: Iterable[Target] = (),
        *,
        window: float = 2.0,
        poll: float = 5.0,
        lease: float = 60.0,
        backoff: Backoff | None = None,
    ) -> None:
        self.targets = tuple(targets)
        for target in self.targets:
            if not isinstance(target, Target):
                raise ConfigurationError(f"push targets must be Targets, not {type(target).__name__}")
        self.window = _seconds("window", window)
        self.poll = check_timeout("poll", poll)
        self.lease = check_timeout("lease", lease)
        for target in self.targets:
            # A capability, not a type: a target that says how long a send may take.
            timeout = getattr(target, "timeout", None)
            if isinstance(timeout, int | float) and timeout >= self.lease:
                raise ConfigurationError(
                    f"push lease ({self.lease} s) must be longer than {target.name}'s timeout ({timeout} s)"
                )
        self.backoff = Backoff() if backoff is None else backoff

    @classmethod
    def of(cls, push: Push | Sequence[Target] | None) -> Push:
        if push is None:
            return cls()
        return push if isinstance(push, Push) else cls(push)


@dataclass(frozen=True, slots=True)
class Pushed:
    """One delivery and its outcome: ``consumer``, ``site``, how many ``changes`` it held."""

    consumer: str
    site: str
    changes: int
    outcome: Outcome


class _Slot:
    """One consumer: a target for one site, and its backoff."""

    __slots__ = ("consumer", "due", "failures", "pending", "site", "target")

    def __init__(self, target: Target, site: str) -> None:
        self.target = target
        self.site = site
        self.consumer = target.consumer(site)
        self.failures = 0
        self.due = 0.0  # monotonic time before which it is not tried again
        self.pending = 0  # what ``stats`` says waits


class Dispatcher:
    """Delivers ``log``'s outbox to ``push``'s targets, one consumer per target and site root."""

    def __init__(self, log: ChangeLog | None, sites: Sequence[str], stats: Stats, push: Push) -> None:
        self._log = log
        self._sites = tuple(sites)
        self._stats = stats
        self._push = push
        self._slots: list[_Slot] = []
        self._lock = threading.Lock()
        self._woken = threading.Condition(self._lock)
        self._delivering = threading.Lock()  # one delivery pass at a time in this process
        self._window_ends: float | None = None
        self._thread: threading.Thread | None = None
        self._started_in = -1  # the fork generation the thread runs in
        self._stopped = False
        for target in push.targets:
            self.add(target)

    @classmethod
    def wire(
        cls,
        log: ChangeLog | None,
        push: Push | Sequence[Target] | None,
        sites: Sequence[Site],
        stats: Stats,
        clock: Callable[[], float],
    ) -> tuple[Dispatcher, Recorder | None]:
        """A `Sitemaps`' dispatcher and the recorder that wakes it (none without a log; a
        dispatcher without one delivers nothing and refuses targets)."""
        if log is None and push:
            raise ConfigurationError("push needs changes=ChangeLog...: the outbox it delivers from")
        dispatcher = cls(log, [site.root for site in sites], stats, Push.of(push))
        return dispatcher, None if log is None else Recorder(log, stats, clock, dispatcher.changed)

    def bind(self, sitemaps: object) -> None:
        """Bind the targets that ask for their `Sitemaps` (a capability: ``bind``)."""
        for target in self._push.targets:
            bind = getattr(target, "bind", None)
            if bind is not None:
                bind(sitemaps)

    @property
    def active(self) -> bool:
        """Whether it has a log to deliver from."""
        return self._log is not None

    @property
    def consumers(self) -> tuple[str, ...]:
        return tuple(slot.consumer for slot in self._slots)

    @property
    def log(self) -> ChangeLog:
        if self._log is None:
            raise ConfigurationError(
                "push and on_change need changes=ChangeLog...: the outbox they deliver from"
            )
        return self._log

    def key_files(self) -> KeyFiles:
        """The files its targets ask every site to serve (a capability: ``key_file``)."""
        files = (getattr(slot.target, "key_file", None) for slot in self._slots)
        return KeyFiles(dict(file for file in files if file is not None))

    def hook(self, callback: ChangeCallback, name: str | None = None) -> ChangeCallback:
        """``sitemaps.on_change``: ``callback`` becomes a target (`hooks.Hook`)."""
        self.add(Hook(callback, name=name))
        return callback

    def add(self, target: Target) -> None:
        """Deliver to ``target`` too: its consumers are subscribed now, so every change
        recorded from now on reaches it."""
        slots = [_Slot(target, site) for site in self._sites]
        known = set(self.consumers)
        for slot in slots:
            if slot.consumer in known:
                raise ConfigurationError(f"push consumer {slot.consumer!r} is already registered")
            known.add(slot.consumer)
        _subscribe(self.log, [slot.consumer for slot in slots])
        with self._lock:
            self._slots.extend(slots)

    def start(self) -> None:
        """Make sure this process's thread runs (cheap when it does: the request path calls it)."""
        if self._started_in == _forks[0] or not self._slots:
            return
        with self._lock:
            if self._started_in == _forks[0] or self._stopped:
                return
            self._thread = threading.Thread(target=self._run, name="sitemap-push", daemon=True)
            self._thread.start()
            self._started_in = _forks[0]

    def changed(self) -> None:
        """A page recorded changes: deliver once ``window`` has passed (more may follow)."""
        if not self._slots:
            return
        self.start()
        with self._lock:
            if self._window_ends is None:
                self._window_ends = time.monotonic() + self._push.window
                self._woken.notify()

    def now(self) -> list[Pushed]:
        """Deliver everything waiting, on this thread, backoffs or not; what happened."""
        self.log.flush()
        return self._pass(waiting=False)

    def close(self) -> None:
        """Stop the thread (a send in progress may finish first, within a few seconds)."""
        with self._lock:
            self._stopped = True
            self._woken.notify()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(_STOP_WAIT)

    # -- the thread ------------------------------------------------------------------------------

    def _run(self) -> None:
        # What waits since before a restart goes one window after the start, not at once:
        # the change that started the thread is coalesced with those that follow it.
        next_poll = time.monotonic() + self._push.window
        while True:
            with self._lock:
                while True:
                    if self._stopped:
                        return
                    now = time.monotonic()
                    wake = next_poll if self._window_ends is None else self._window_ends
                    wake = min([wake, *(slot.due for slot in self._slots if slot.failures)])
                    if wake <= now:
                        break
                    self._woken.wait(wake - now)
                if self._window_ends is not None and self._window_ends <= now:
                    self._window_ends = None
                    next_poll = now + self._push.poll
                elif next_poll <= now:
                    next_poll = now + self._push.poll
            try:
                self._pass(waiting=True)
            except Exception:  # never the end of the thread
                logger.exception("sitemap push: a delivery pass failed")

    def _pass(self, *, waiting: bool) -> list[Pushed]:
        done: list[Pushed] = []
        with self._delivering:
            for slot in list(self._slots):
                if waiting and slot.failures and slot.due > time.monotonic():
                    continue  # still backing off
                if self._stopped and waiting:
                    break
                done += self._deliver(slot)
        return done

    def _deliver(self, slot: _Slot) -> list[Pushed]:
        """Claim, send and answer ``slot``'s deliveries until none waits or one fails."""
        done: list[Pushed] = []
        holder = f"{socket.gethostname()}:{os.getpid()}:{threading.get_ident()}"
        try:
            while True:
                delivery = self.log.claim(
                    slot.consumer, holder, scope=slot.site, limit=slot.target.limit, lease=self._push.lease
                )
                if delivery is None:
                    break
                if self._stopped and threading.current_thread() is self._thread:
                    self.log.release(delivery)  # closing: the next start (or worker) sends it
                    break
                outcome = self._send(slot, delivery)
                if delivery.changes or delivery.pages:
                    done.append(Pushed(slot.consumer, slot.site, len(delivery.changes), outcome))
                if isinstance(outcome, Retry):
                    self.log.release(delivery)
                    self._back_off(slot, outcome)
                    break
                slot.failures = 0
                if not self.log.acknowledge(delivery):
                    # The lease ran out during the send: another worker may send it again.
                    self._stats.count(slot.consumer, "lease_lost")
                    logger.warning("sitemap push %s: lease lost while sending", slot.consumer)
            self._count_pending(slot, self.log.pending(slot.consumer))
        except Exception as error:  # the log itself failed: try again later
            logger.exception("sitemap push %s: the change log failed", slot.consumer)
            self._back_off(slot, Retry(reason=repr(error)))
        return done

    def _send(self, slot: _Slot, delivery: Delivery) -> Outcome:
        wants = slot.target.wants
        if not (("urls" in wants and delivery.changes) or ("pages" in wants and delivery.pages)):
            return Sent()  # nothing it wants: acknowledged, never sent
        try:
            outcome = slot.target.send(delivery, slot.site)
        except Exception as error:
            logger.exception("sitemap push %s: send failed", slot.consumer)
            outcome = Retry(reason=f"{type(error).__name__}: {error}")
        if isinstance(outcome, Sent):
            self._stats.count(slot.consumer, "sent")
            logger.info("sitemap push %s: sent %d changes", slot.consumer, len(delivery.changes))
        elif isinstance(outcome, Refused):
            self._stats.count(slot.consumer, "refused")
            logger.error("sitemap push %s: refused, not retried: %s", slot.consumer, _cap(outcome.reason))
        else:
            self._stats.count(slot.consumer, "retried")
        return outcome

    def _back_off(self, slot: _Slot, retry: Retry) -> None:
        slot.failures += 1
        delay = retry.after if retry.after is not None else self._push.backoff.delay(slot.failures)
        slot.due = time.monotonic() + delay
        logger.warning(
            "sitemap push %s: retrying in %.1f s (failure %d): %s",
            slot.consumer,
            delay,
            slot.failures,
            _cap(retry.reason) or "no answer",
        )

    def _count_pending(self, slot: _Slot, pending: int) -> None:
        # ``pending`` is a level, kept in the counters as the sum of its moves.
        self._stats.count(slot.consumer, "pending", pending - slot.pending)
        slot.pending = pending


def _seconds(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < float("inf"):
        raise ConfigurationError(f"{name} must be a number of seconds, not {value!r}")
    return float(value)


def _subscribe(log: ChangeLog, consumers: Sequence[str]) -> None:
    """Subscribe ``consumers`` on a thread of its own, whose backend connection (SQLite's
    are per thread) ends with it: none is opened in a process that may fork next."""
    failed: list[BaseException] = []

    def run() -> None:
        try:
            for consumer in consumers:
                log.subscribe(consumer)
        except BaseException as error:
            failed.append(error)
        finally:
            close = getattr(log.backend, "close", None)  # a capability: this thread's connection
            if callable(close):
                close()

    thread = threading.Thread(target=run, name="sitemap-push-subscribe")
    thread.start()
    thread.join()
    if failed:
        raise failed[0]
