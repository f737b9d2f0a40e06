"""Sync work off the event loop, for the ASGI adapter: threads, limits, deadlines, waiting.

Providers and rendering are synchronous Python. Under ASGI they run in worker threads,
within two limits per event loop (`Capacity`): how many threads compute at once, and how
many documents are being rendered at once (a `Slot` each, held while the page streams).
A deadline cuts a thread only when its provider stops making progress (`deadlines`), and
a request waiting for another one's render waits here, on the loop, never in a thread::

    capacity = Capacity(anyio.CapacityLimiter(4), anyio.Semaphore(16))
    slot = Slot(capacity.renders)
    if await slot.acquire(timeout):                          # False: every slot stayed busy
        reply = await in_thread(render, capacity.threads, timeout)   # TimeoutError: a stall
    await wait_for(event)                                    # another request's render
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, NoReturn, TypeVar

import anyio
import anyio.from_thread
import anyio.to_thread

from .cache import FOLLOW_TIMEOUT
from .deadlines import Heartbeat, thread_deadline, within

__all__ = ["Capacity", "Slot", "in_thread", "on_loop", "raise_unwrapped", "wait_for"]

T = TypeVar("T")
_NO_LIMIT = contextlib.nullcontext()


@dataclass(frozen=True, slots=True)
class Capacity:
    """Per event loop: threads rendering at once, and documents being rendered at once."""

    threads: anyio.CapacityLimiter
    renders: anyio.Semaphore


class Slot:
    """One request's claim on a render slot: taken before it renders, given back once."""

    __slots__ = ("_held", "_semaphore")

    def __init__(self, semaphore: anyio.Semaphore) -> None:
        self._semaphore = semaphore
        self._held = False

    async def acquire(self, timeout: float | None) -> bool:
        if not self._held:
            with anyio.move_on_after(timeout):
                await self._semaphore.acquire()
                self._held = True
        return self._held

    def release(self) -> None:
        if self._held:
            self._held = False
            self._semaphore.release()


async def wait_for(event: threading.Event) -> None:
    """Wait for another request's render without taking a worker thread from it.

    Polling, not a thread blocked on the event: hundreds of followers must never hold
    every token of the pool the leader needs to finish.
    """
    delay = 0.001
    with anyio.move_on_after(FOLLOW_TIMEOUT):
        while not event.is_set():
            await anyio.sleep(delay)
            delay = min(delay * 2, 0.05)


async def in_thread(func: Callable[[], T], limiter: anyio.CapacityLimiter | None, timeout: float | None) -> T:
    """``func()`` in a worker thread, once ``limiter`` lends one; abandoned if it stalls.

    Waiting for a render thread is queueing, not a hung provider: a busy server must not
    answer 503 to requests that merely waited their turn. Once lent, the deadline counts
    from the provider's last batch (`deadlines.Heartbeat`): a long render that keeps
    producing, such as planning millions of URLs, is never cut; one that stalls is.
    """
    async with limiter if limiter is not None else _NO_LIMIT:
        deadline = thread_deadline(timeout)
        if deadline is None:
            return await anyio.to_thread.run_sync(func)
        heartbeat = Heartbeat()
        run = partial(heartbeat.context().run, func)
        try:
            with anyio.CancelScope(deadline=anyio.current_time() + deadline) as scope:
                async with anyio.create_task_group() as group:
                    group.start_soon(_keep_alive, scope, heartbeat, deadline)
                    result = await anyio.to_thread.run_sync(run, abandon_on_cancel=True)
                    group.cancel_scope.cancel()
                return result
        except BaseExceptionGroup as errors:
            raise_unwrapped(errors)
        raise TimeoutError(f"no progress for {deadline} s")


async def _keep_alive(scope: anyio.CancelScope, heartbeat: Heartbeat, deadline: float) -> None:
    """Push ``scope``'s deadline on while batches keep arriving: it fires on a stall."""
    while True:
        await anyio.sleep(deadline / 4)
        scope.deadline = anyio.current_time() + deadline - heartbeat.silent_for()


def raise_unwrapped(errors: BaseExceptionGroup[BaseException]) -> NoReturn:
    """Raise the one error inside anyio's group (the provider's, with its cause), or the group."""
    if len(errors.exceptions) == 1:
        error = errors.exceptions[0]
        raise error from error.__cause__
    raise errors


def on_loop(timeout: float | None, func: Callable[..., Awaitable[T]], /, *args: Any) -> T:
    """Run ``func(*args)`` on the app's event loop, from a worker thread, within the deadline."""
    return anyio.from_thread.run(partial(within, timeout, func), *args)
