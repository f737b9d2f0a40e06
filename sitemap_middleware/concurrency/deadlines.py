"""How ``provider_timeout`` is kept: a deadline on each step of a provider, not on a whole render.

A provider is slow in two very different ways. Planning a section of millions of URLs
pulls thousands of batches and may take a minute, every batch arriving in milliseconds:
that is progress, and must never be cut. A database that stops answering produces
nothing: that is a stall, and must be cut after ``timeout`` seconds. So the deadline
counts from the last sign of progress:

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

A thread given up on keeps running (Python cannot stop one), but what it waits on may be
stopped: a database can cancel the statement the thread is blocked in. The side that gives
up calls `Abandon.abandon`; code that blocks says how it can be stopped for as long as it
blocks, and is stopped if its thread is abandoned meanwhile::

    abandon = Abandon()
    context = abandon.enter(heartbeat.context())
    ...                                         # in the thread, under that context:
    with cancel_on_abandon(connection.interrupt):
        cursor.execute(sql)                     # interrupted if the thread is abandoned
    ...
    abandon.abandon()                           # the waiting side: a stall, it gives up
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import anyio

from ..errors import ProviderError
from ..stats import logger

__all__ = [
    "CANCEL_RETRIES",
    "THREAD_GRACE",
    "Abandon",
    "Heartbeat",
    "beat",
    "cancel_on_abandon",
    "drop_unclaimed",
    "off_the_clock",
    "thread_deadline",
    "within",
]

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


# Seconds between two cancels of work that has not ended yet: a cancel that lands just
# before its statement starts is lost (SQLite's interrupt, a PostgreSQL cancel request).
CANCEL_RETRIES = (0.05, 0.1, 0.2, 0.4, 0.8)

# Who stops waiting for the code running in this context, if anyone does (`Abandon`).
_ABANDON: contextvars.ContextVar[Abandon | None] = contextvars.ContextVar("sitemap_abandon", default=None)


def drop_unclaimed(result: object) -> None:
    """Abandon what a call nobody waits for any more returned (`web.replies.Reply.abandon`).

    A render cut at the deadline goes on in its thread, and once its provider answers it
    may make the page's growing document, held open for clients to join: nobody leads it,
    so every request of the page that joined it would wait for ever. Its thread calls
    this when it returns, once given up on (`offload`, `threads`).
    """
    abandon = getattr(result, "abandon", None)
    if callable(abandon):
        abandon()


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


class Abandon:
    """How the side waiting for a thread tells the work in it that nobody waits any more.

    Whatever the work registered (`cancel_on_abandon`) is called once it is abandoned, in
    a thread of its own: a cancel may be a network round trip (PostgreSQL's cancel request
    opens a connection), and the side that gives up may be an event loop. It is called
    again (`CANCEL_RETRIES`) while its block still runs. A cancel runs only while its block
    runs: the block cannot end, and its connection go back to a pool for another statement
    to meet the cancel, until the cancel has returned.
    """

    __slots__ = ("_abandoned", "_cancels", "_ended", "_lock")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ended = threading.Condition(self._lock)  # a block ended
        self._cancels: list[Callable[[], object]] = []
        self._abandoned = False

    def enter(self, context: contextvars.Context) -> contextvars.Context:
        """``context``, in which `cancel_on_abandon` registers with this one."""
        context.run(_ABANDON.set, self)
        return context

    def abandon(self) -> None:
        """Nobody waits for the work any more: cancel what it is blocked in (once)."""
        with self._lock:
            if self._abandoned:
                return
            self._abandoned = True
            if not self._cancels:
                return
        threading.Thread(target=self._cancel, name="sitemap-cancel", daemon=True).start()

    def _cancel(self) -> None:
        with self._lock:  # held while cancels run (released while waiting): no block ends meanwhile
            for delay in CANCEL_RETRIES:
                for cancel in self._cancels:
                    try:
                        cancel()
                    except Exception as error:  # the statement runs on; nothing else can be done
                        logger.warning("sitemap: cancelling an abandoned statement failed: %r", error)
                self._ended.wait_for(lambda: not self._cancels, delay)
                if not self._cancels:
                    return

    def _register(self, cancel: Callable[[], object]) -> None:
        with self._lock:
            if self._abandoned:
                raise TimeoutError("abandoned past its deadline: nothing more is started")
            self._cancels.append(cancel)

    def _unregister(self, cancel: Callable[[], object]) -> None:
        with self._lock:
            self._cancels.remove(cancel)
            self._ended.notify_all()


@contextmanager
def cancel_on_abandon(cancel: Callable[[], object] | None) -> Iterator[None]:
    """Within the block, ``cancel()`` is called if the thread running it is abandoned.

    Outside an abandonable thread (a WSGI request thread, an event loop), or with ``cancel``
    ``None`` (a driver that cannot cancel), it does nothing. In a thread already abandoned
    it raises `TimeoutError` instead of letting the block start.
    """
    abandon = _ABANDON.get()
    if abandon is None or cancel is None:
        yield
        return
    abandon._register(cancel)
    try:
        yield
    finally:
        abandon._unregister(cancel)
