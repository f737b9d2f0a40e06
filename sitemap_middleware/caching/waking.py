"""Tasks waiting on event loops for a growing document (`caching.growing`), and their wakes.

Each wake of a task on another thread's loop makes that loop's thread take the interpreter
from the render's, so a task is woken only once it has enough to send: a document's
waiting tasks are kept here, parted into those now due and the rest, and woken once the
document's lock is let go::

    waiting = Waiting()
    waiting.add(Waiter(loop, future, enough=made + WAKE_BYTES, due=now + WAKE_AFTER))
    woken = waiting.due(made, now, ended)       # under the document's lock
    wake(woken)                                 # after it is released

Why after: waking a loop writes to its socket, which lets the interpreter go, and a loop
woken under the lock would find it held by the render and wait for it (then for the
interpreter) before it could send a byte.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import NamedTuple

__all__ = ["Waiter", "Waiting", "wake", "wake_future"]


class Waiter(NamedTuple):
    """A task waiting on its loop, and the size and the time that wake it."""

    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[None]
    enough: int  # identity bytes made that wake it
    due: float  # the time that wakes it, whatever was made


class Waiting:
    """The tasks waiting for one document. Not thread-safe: the document calls it under its lock."""

    __slots__ = ("_waiters",)

    def __init__(self) -> None:
        self._waiters: list[Waiter] = []

    def add(self, waiter: Waiter) -> None:
        self._waiters.append(waiter)

    def remove(self, waiter: Waiter) -> None:
        if waiter in self._waiters:
            self._waiters.remove(waiter)

    def due(self, made: int, now: float, ended: bool) -> list[Waiter]:
        """The waiters to wake now (no longer waiting here): all of them once the document
        ended, else those ``made`` bytes or the time ``now`` wakes."""
        waiters = self._waiters
        if not waiters:
            return []
        if ended:
            self._waiters = []
            return waiters
        woken: list[Waiter] = []
        waiting: list[Waiter] = []
        for waiter in waiters:
            (woken if made >= waiter.enough or now >= waiter.due else waiting).append(waiter)
        if woken:
            self._waiters = waiting
        return woken


def wake(woken: list[Waiter]) -> None:
    """Wake ``woken`` on their loops; with no lock held (the module's docstring says why)."""
    for waiter in woken:
        with contextlib.suppress(RuntimeError):  # its loop has closed: nobody waits there
            waiter.loop.call_soon_threadsafe(wake_future, waiter.future)


def wake_future(woken: asyncio.Future[None]) -> None:
    """On the future's loop: let its task go on, unless a timer or a wake did already."""
    if not woken.done():
        woken.set_result(None)
