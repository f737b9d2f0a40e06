"""A few helper threads that run calls under a deadline, for the WSGI adapter.

A WSGI request thread cannot be interrupted: a sync provider that stops answering holds
it forever (gunicorn's worker timeout does not see a stuck gthread request). With
``sitemaps.wsgi(app, helper_threads=4)``, renders run here instead, and the request thread
waits at most ``timeout`` for a helper to start, then as long as the provider keeps
producing batches, but no more than ``timeout`` (and a grace) without one::

    helpers = Helpers(size=4)
    helpers.run(render_next_chunk, timeout=120)   # its result, or TimeoutError

A helper stuck in a hung provider stays stuck (Python cannot stop a thread), but it is
a daemon, never joined at exit, and at most ``size`` of them exist: once all are stuck,
cold renders get a 503 after the deadline while cached documents are still served. What
an abandoned helper is blocked in is cancelled where it can be (`deadlines.Abandon`: a
keyset's statement), so it comes back soon.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any, Generic, TypeVar

from ..errors import ProviderError
from ..web.replies import Reply
from .deadlines import Abandon, Heartbeat, drop_unclaimed, thread_deadline

__all__ = ["HelperStream", "Helpers"]

T = TypeVar("T")


class _Job(Generic[T]):
    __slots__ = ("abandoned", "cancelled", "done", "error", "func", "lock", "result", "started")

    def __init__(self, func: Callable[[], T]) -> None:
        self.func = func
        self.lock = threading.Lock()
        self.started = threading.Event()
        self.done = threading.Event()
        self.cancelled = False
        self.abandoned = False  # the caller gave up waiting: what it returns is dropped
        self.result: T | None = None
        self.error: BaseException | None = None

    def claim(self) -> bool:
        """Called by a helper: ``False`` if the caller stopped waiting for a thread."""
        with self.lock:
            if self.cancelled:
                return False
            self.started.set()
            return True

    def abandon(self) -> None:
        """Called by the caller that stops waiting: if the job is done already, its result
        is dropped here, else by the helper when it returns (`deadlines.drop_unclaimed`)."""
        with self.lock:
            self.abandoned = True
            done = self.done.is_set()
        if done:
            drop_unclaimed(self.result)

    def finished(self) -> None:
        """Called by the helper once the job returned or raised."""
        with self.lock:
            self.done.set()
            abandoned = self.abandoned
        if abandoned:
            drop_unclaimed(self.result)

    def cancel(self) -> bool:
        """Called by the caller: ``True`` if no helper took the job (and none ever will)."""
        with self.lock:
            if self.started.is_set():
                return False
            self.cancelled = True
            return True


class Helpers:
    """At most ``size`` daemon threads, started on first use, running calls in order."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._jobs: queue.SimpleQueue[_Job[Any]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads = 0

    def run(self, func: Callable[[], T], timeout: float | None) -> T:
        """``func()`` on a helper thread; `TimeoutError` if no helper starts it within
        ``timeout`` (all busy or stuck), or if it then makes no progress for ``timeout``
        (the provider's batches renew a `Heartbeat`; see `deadlines`).

        Queueing gets its own allowance: a busy server must not answer 503 to a request
        that merely waited its turn, nor wait forever when every helper is stuck.
        """
        heartbeat = Heartbeat()
        abandon = Abandon()
        job = _Job(partial(abandon.enter(heartbeat.context()).run, func))
        self._jobs.put(job)
        self._start_thread()
        if not job.started.wait(timeout) and job.cancel():
            raise TimeoutError("no helper thread became free")
        heartbeat.last = time.monotonic()  # the deadline starts with the work, not the queue
        deadline = thread_deadline(timeout)
        if deadline is None:
            job.done.wait()
        else:
            while not job.done.wait(deadline - heartbeat.silent_for()):
                if heartbeat.silent_for() >= deadline:
                    abandon.abandon()
                    job.abandon()
                    raise TimeoutError(f"no progress for {deadline} s")
        if job.error is not None:
            raise job.error
        return job.result  # type: ignore[return-value]

    def _start_thread(self) -> None:
        with self._lock:
            if self._threads >= self._size:
                return
            self._threads += 1
        threading.Thread(target=self._work, name="sitemap-helper", daemon=True).start()

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            if not job.claim():
                continue
            try:
                job.result = job.func()
            except BaseException as error:  # handed to the waiting request thread
                job.error = error
            finally:
                job.finished()
                del job


_DONE = object()


class HelperStream:
    """A page body rendered by helpers, each chunk within the deadline or the page aborted.

    Closing happens on a helper too: the provider's ``finally`` (a cursor's close) runs
    where its other code ran, as under ASGI. After a stall the render is abandoned.
    """

    def __init__(
        self, reply: Reply, helpers: Helpers, timeout: float | None, on_close: Callable[[], None]
    ) -> None:
        assert isinstance(reply.body, Iterator)  # a stream: a growing document is read otherwise
        self._reply = reply
        self._chunks: Iterator[bytes] = reply.body
        self._helpers = helpers
        self._timeout = timeout
        self._on_close = on_close
        self._stalled = False

    @classmethod
    def wrap(
        cls, reply: Reply, helpers: Helpers, timeout: float | None, on_close: Callable[[], None]
    ) -> Reply:
        # Finishing the wrapper closes this body, which finishes the reply on a helper.
        return Reply(reply.status, reply.headers, cls(reply, helpers, timeout, on_close))

    def __iter__(self) -> HelperStream:
        return self

    def __next__(self) -> bytes:
        try:
            chunk = self._helpers.run(partial(next, self._chunks, _DONE), self._timeout)
        except TimeoutError:
            self._stalled = True
            raise ProviderError.stalled(self._timeout) from None
        if chunk is _DONE:
            raise StopIteration
        assert isinstance(chunk, bytes)
        return chunk

    def close(self) -> None:
        if self._stalled:
            # The helper is still inside the provider: give up what the render holds now
            # (the generator is closed once that call returns and drops it).
            self._reply.finish()
            return
        try:
            self._helpers.run(self._reply.finish, self._timeout)
        except TimeoutError:
            self._reply.finish()  # a provider's cleanup that hangs: release the rest here
            return
        self._on_close()
