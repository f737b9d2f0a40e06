"""Sync work off the event loop, for the ASGI adapter: threads, limits, deadlines, waiting.

Providers and rendering are synchronous Python. Under ASGI they run in worker threads,
within two limits per event loop (`Capacity`): how many threads compute at once, and how
many documents are being rendered at once (a `Slot` each, held while a page renders).
A deadline cuts a thread only when its provider stops making progress (`deadlines`), and
a request waiting for another one's render waits here, on the loop, never in a thread::

    capacities = LoopCapacities(threads=4, renders=16)
    capacity = capacities.current()                          # this event loop's limits
    slot = Slot(capacities)
    if await slot.acquire(timeout):                          # False: every slot stayed busy
        reply = await in_thread(render, capacity.threads, timeout)   # TimeoutError: a stall
    calls = ThreadCalls(capacity.threads, timeout)           # a page's chunks: one keeper for all
    await wait_for(wait)                                     # another request's render
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, NoReturn, TypeVar

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
from anyio.lowlevel import RunVar

from .deadlines import Abandon, Heartbeat, drop_unclaimed, thread_deadline, within
from .steps import Busy, Wait

__all__ = [
    "STORE_THREADS",
    "Capacity",
    "LoopCapacities",
    "Slot",
    "ThreadCalls",
    "in_thread",
    "on_loop",
    "raise_unwrapped",
    "wait_for",
]

T = TypeVar("T")


# Threads per event loop for calls to a store that waits on the network (`steps.Call`):
# apart from render threads (a hit never queues behind renders) and from anyio's default
# pool (a silent Redis never takes the threads of the app's own sync endpoints).
STORE_THREADS = 16


@dataclass(frozen=True, slots=True)
class Capacity:
    """Per event loop: threads rendering at once, documents being rendered at once, and
    threads calling a store that waits on the network (`steps.Call`)."""

    threads: anyio.CapacityLimiter
    renders: anyio.Semaphore
    calls: anyio.CapacityLimiter


class LoopCapacities:
    """The `Capacity` of whichever event loop asks: anyio's primitives must not cross loops."""

    def __init__(self, threads: int, renders: int) -> None:
        self._threads = threads
        self._renders = renders
        self._current: RunVar[Capacity] = RunVar(f"sitemap_capacity_{id(self)}")

    def current(self) -> Capacity:
        try:
            return self._current.get()
        except LookupError:
            threads, renders = anyio.CapacityLimiter(self._threads), anyio.Semaphore(self._renders)
            capacity = Capacity(threads, renders, anyio.CapacityLimiter(STORE_THREADS))
            self._current.set(capacity)
            return capacity


class Slot:
    """One request's claim on a render slot of its event loop: taken before it renders,
    given back when it is done rendering (or waits on its client, and then taken again).
    Nothing is looked up until it is taken: most answers never render."""

    __slots__ = ("_capacities", "_held")

    def __init__(self, capacities: LoopCapacities) -> None:
        self._capacities = capacities
        self._held: anyio.Semaphore | None = None

    @property
    def held(self) -> bool:
        return self._held is not None

    async def acquire(self, timeout: float | None) -> bool:
        if self._held is None:
            renders = self._capacities.current().renders
            with anyio.move_on_after(timeout):
                await renders.acquire()
                self._held = renders
        return self._held is not None

    def release(self) -> None:
        renders = self._held
        if renders is not None:
            self._held = None
            renders.release()


async def wait_for(wait: Wait) -> None:
    """Wait for another request's render without taking a worker thread from it.

    Polling, not a thread blocked on the event: hundreds of followers must never hold
    every token of the pool the leader needs to finish. `Wait.block` is the blocking twin.
    """
    delay = 0.001
    while not wait.over():
        await anyio.sleep(delay)
        delay = min(delay * 2, 0.05)


async def in_thread(func: Callable[[], T], limiter: anyio.CapacityLimiter, timeout: float | None) -> T:
    """``func()`` in a worker thread, once ``limiter`` lends one; abandoned if it stalls.

    One call, with a deadline keeper of its own; a page that makes one call per chunk
    shares one keeper between them instead (`ThreadCalls`).
    """
    calls = ThreadCalls(limiter, timeout)
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(calls.keep)
            result = await calls.run(func)
            group.cancel_scope.cancel()
        return result
    except BaseExceptionGroup as errors:
        raise_unwrapped(errors)


class ThreadCalls:
    """Calls into worker threads for one request, one at a time, each cut if its provider stalls.

    Waiting for a render thread is queueing, not a hung provider: it has a deadline of
    its own (``timeout``), so a request waits its turn, but not for threads stuck in a
    hung provider that may never come back. Once lent, the deadline counts
    from the provider's last batch (`deadlines.Heartbeat`): a long render that keeps
    producing, such as planning millions of URLs, is never cut; one that stalls is.
    One task (`keep`, started beside the calls) pushes the deadline of whichever call
    is running: a streamed page makes one call per chunk, and a task group and a
    keeper per call cost more than the call itself (benchmarks/HISTORY.md, "ASGI, per chunk")::

        calls = ThreadCalls(capacity.threads, timeout)
        group.start_soon(calls.keep)                       # once, for every call below
        chunk = await calls.run(partial(next, chunks))     # TimeoutError: a stall

    An abandoned thread keeps its token until it really returns: threads stuck in a
    hung provider never number more than the limiter's tokens; what it blocks in is
    cancelled where it can be (`deadlines.Abandon`), so it returns soon.
    """

    __slots__ = ("_abandon", "_context", "_deadline", "_heartbeat", "_limiter", "_scope", "_timeout")

    def __init__(self, limiter: anyio.CapacityLimiter, timeout: float | None) -> None:
        self._limiter = limiter
        self._timeout = timeout
        self._deadline = thread_deadline(timeout)
        self._heartbeat = Heartbeat()
        # One context for every call: the calls run one after another, never at once.
        self._abandon = Abandon()
        self._context = self._abandon.enter(self._heartbeat.context())
        self._scope: anyio.CancelScope | None = None

    async def keep(self) -> None:
        """Push the running call's deadline on while batches keep arriving: it fires on a stall."""
        deadline = self._deadline
        if deadline is None:
            return
        while True:
            await anyio.sleep(deadline / 4)
            scope = self._scope
            if scope is not None:
                scope.deadline = anyio.current_time() + deadline - self._heartbeat.silent_for()

    async def run(self, func: Callable[[], T]) -> T:
        """``func()`` in a worker thread; `steps.Busy` if none came free, `TimeoutError` if it stalled."""
        lease = _Lease(self._limiter)
        try:
            # Queueing has a deadline too: when every thread is stuck in a hung provider,
            # a request gets its 503 instead of waiting for one of them to come back.
            with anyio.fail_after(self._timeout):
                await lease.take()
        except TimeoutError:
            # Every thread busy (or stuck in a hung provider) for the whole deadline: a queue,
            # not a provider's fault, and answered (or a page aborted) as such.
            raise Busy("no render thread came free") from None
        try:
            deadline = self._deadline
            if deadline is None:
                return await anyio.to_thread.run_sync(func)
            self._heartbeat.last = time.monotonic()  # the deadline starts with the work, not the queue
            run = partial(lease.running, self._context, func)
            with anyio.CancelScope(deadline=anyio.current_time() + deadline) as scope:
                self._scope = scope
                try:
                    return await anyio.to_thread.run_sync(run, abandon_on_cancel=True)
                finally:
                    self._scope = None
            raise TimeoutError(f"no progress for {deadline} s")
        finally:
            if lease.give_back():
                # Past the deadline, or the request is gone: nobody takes this call's result.
                self._abandon.abandon()


class _Lease:
    """One limiter token for one thread's work, given back when both sides are done with it.

    The loop gives it back once the call returned; a thread the loop abandoned gives it
    back itself when it finally returns (on the loop, through anyio's token).
    """

    __slots__ = ("_abandoned", "_limiter", "_lock", "_running", "_token")

    def __init__(self, limiter: anyio.CapacityLimiter) -> None:
        self._limiter = limiter
        self._lock = threading.Lock()
        self._running = False
        self._abandoned = False
        self._token: Any = None

    async def take(self) -> None:
        await self._limiter.acquire_on_behalf_of(self)
        self._token = anyio.lowlevel.current_token()

    def running(self, context: Any, func: Callable[[], T]) -> T:
        with self._lock:
            if self._abandoned:  # given up before a thread took it: its token is back already
                raise TimeoutError("abandoned before it started")
            self._running = True
        result: Any = None  # what it returned, if it did
        try:
            result = context.run(func)
            return result  # type: ignore[no-any-return]
        finally:
            with self._lock:
                self._running = False
                abandoned = self._abandoned
            if abandoned:
                try:
                    drop_unclaimed(result)
                finally:
                    self._give_back_from_thread()

    def _give_back_from_thread(self) -> None:
        with contextlib.suppress(Exception):  # the loop may be gone by now
            anyio.from_thread.run_sync(self._limiter.release_on_behalf_of, self, token=self._token)

    def give_back(self) -> bool:
        """Done with on the loop's side; ``True`` if the thread is still running (abandoned)."""
        with self._lock:
            self._abandoned = True
            if self._running:
                return True  # the thread gives it back when it returns
        self._limiter.release_on_behalf_of(self)
        return False


def raise_unwrapped(errors: BaseExceptionGroup[BaseException]) -> NoReturn:
    """Raise the one error inside anyio's group (the provider's, with its cause), or the group."""
    if len(errors.exceptions) == 1:
        error = errors.exceptions[0]
        raise error from error.__cause__
    raise errors


def on_loop(timeout: float | None, func: Callable[..., Awaitable[T]], /, *args: Any) -> T:
    """Run ``func(*args)`` on the app's event loop, from a worker thread, within the deadline."""
    return anyio.from_thread.run(partial(within, timeout, func), *args)
