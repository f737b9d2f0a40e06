"""How ``provider_timeout`` is kept: a deadline on each step of a provider, not on a whole render.

A provider is slow in two very different ways. Planning a section of 10M URLs pulls
10,000 batches and takes a minute, every batch arriving in milliseconds: that is
progress, and must never be cut. A database that stops answering produces nothing: that
is a stall, and must be cut after ``timeout`` seconds. So the deadline counts from the
last sign of progress:

- an async provider's call is awaited `within` the deadline, on its event loop;
- code that calls providers in another thread (ASGI worker threads, WSGI helpers) runs
  under a `Heartbeat` that every batch pulled renews (`beat`), and the waiting side
  gives up only when the heartbeat is older than the deadline (plus `THREAD_GRACE`)::

      heartbeat = Heartbeat()
      worker = threading.Thread(target=heartbeat.context().run, args=(render,))
      ...                                       # render() calls beat() per batch
      if heartbeat.silent_for() > thread_deadline(timeout):
          ...                                   # a stall: give up on the thread

Time the work spends waiting on something else is not the provider's: a store's round
trips (a Redis lookup, a lock claim, a write), made inside a render, run `off_the_clock`,
and no heartbeat watching them counts it as silence::

    with off_the_clock():
        store.get(key)                          # however slow, never the provider's stall
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

import anyio

from ..errors import ProviderError

__all__ = ["THREAD_GRACE", "Heartbeat", "beat", "off_the_clock", "thread_deadline", "within"]

T = TypeVar("T")

# A thread's deadline is this much longer than the providers' own: an async provider's
# deadline fires inside the thread first and is reported once, and the thread's deadline
# catches only a sync provider that never returns.
THREAD_GRACE = 0.5

# Every heartbeat watching the code running in this context: a thread's deadline, and the
# single-flight whose followers wait on the same render.
_CURRENT: contextvars.ContextVar[tuple[Heartbeat, ...]] = contextvars.ContextVar(
    "sitemap_heartbeats", default=()
)


def thread_deadline(timeout: float | None) -> float | None:
    """How long a thread that calls providers under ``timeout`` may go without progress."""
    return None if timeout is None else timeout + THREAD_GRACE


async def within(timeout: float | None, func: Callable[..., Awaitable[T]], /, *args: Any) -> T:
    """Await ``func(*args)``, raising `TimeoutError` after ``timeout`` seconds (``None``: never).

    A provider that raises ``CancelledError`` itself (a bug, or a cancelled task of its
    own leaking out) is a provider failure, not our cancellation: left alone it would
    look like the server cancelling the request (uvicorn answers 500; gunicorn's
    worker dies).
    """
    with anyio.fail_after(timeout):
        try:
            return await func(*args)
        except asyncio.CancelledError as exc:
            if _cancelling():
                raise
            raise ProviderError(f"the provider raised {exc!r}") from exc


def _cancelling() -> bool:
    """Whether the running asyncio task has really been asked to stop."""
    try:
        task = asyncio.current_task()
    except RuntimeError:  # pragma: no cover - not under asyncio
        return True
    return task is None or task.cancelling() > 0


class Heartbeat:
    """When the work it watches last made progress (`time.monotonic` seconds), and
    since when that work has been waiting on something else (`off_the_clock`)."""

    __slots__ = ("_away", "last")

    def __init__(self) -> None:
        self.last = time.monotonic()
        self._away: float | None = None

    def context(self) -> contextvars.Context:
        """A copy of the current context in which `beat` renews this heartbeat too."""
        context = contextvars.copy_context()
        context.run(_CURRENT.set, (*_CURRENT.get(), self))
        return context

    def silent_for(self) -> float:
        """Seconds without progress, not counting time spent `off_the_clock`."""
        away = self._away
        return (time.monotonic() if away is None else away) - self.last


@contextlib.contextmanager
def off_the_clock() -> Iterator[None]:
    """The time spent inside is not the provider's: the heartbeats watching this context
    stop counting silence until it ends (a store's round trip, however slow it is)."""
    stopped = [heartbeat for heartbeat in _CURRENT.get() if heartbeat._away is None]
    now = time.monotonic()
    for heartbeat in stopped:
        heartbeat._away = now
    try:
        yield
    finally:
        now = time.monotonic()
        for heartbeat in stopped:
            away = heartbeat._away
            if away is not None:
                heartbeat.last += now - away  # the silence before it goes on counting
            heartbeat._away = None


def beat() -> None:
    """Progress: called for every batch a provider yields. A no-op outside a `Heartbeat`."""
    heartbeats = _CURRENT.get()
    if heartbeats:
        now = time.monotonic()
        for heartbeat in heartbeats:
            heartbeat.last = now
