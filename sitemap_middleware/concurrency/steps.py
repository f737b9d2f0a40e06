"""The steps a request's answer may need of its adapter, and the two drivers that perform them.

Answering may need four things only an adapter can do: run blocking work (providers,
rendering) where it may block (`Offload`), call a store that waits on the network
(`Call`: Redis), wait for another request's render of the same document (`Wait`), and ask
the wrapped app for its own answer (`FetchApp`: robots.txt). A flow (`flow.answer`) is a
generator that *yields* these steps and is sent their results; an adapter only performs
them, blocking or awaiting, with one of the two drivers here::

    reply = run_blocking(flow, perform)              # WSGI, or inside a render
    reply = await run_async(flow, perform)           # ASGI

`single_flight` is the one step-level policy every cold thing shares (documents and
section plans): look, else claim, then lead or follow. It lives here, below everything
that uses it, so the store implementations (`redis.link`) and the adapters' helpers
(`concurrency.offload`, `concurrency.sending`) drive and name steps without reaching up
into the answer's policy.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from .flights import Flight, SingleFlight

if TYPE_CHECKING:
    from ..providers import AsyncRunner
    from .loop_clients import LoopClients

__all__ = [
    "AppAnswer",
    "Busy",
    "Call",
    "FetchApp",
    "Flow",
    "Offload",
    "Step",
    "Wait",
    "run_async",
    "run_blocking",
    "single_flight",
]

T = TypeVar("T")
S = TypeVar("S")


@dataclass(frozen=True, slots=True)
class Offload:
    """Run ``func(run_async)`` where blocking is allowed, within the provider deadline.

    ``render``: the work renders a document; under ASGI it takes a render slot first,
    held until the response is sent.
    """

    func: Callable[[AsyncRunner], Any]
    render: bool = False


@dataclass(frozen=True, slots=True)
class Call:
    """``func()``, a call to a store that may wait on the network (`CacheStore.blocking`).

    Under ASGI in a worker thread, so a slow or silent store never stalls the event loop
    (the store's own timeouts bound it, not the provider deadline, and it never waits for
    a render thread); under WSGI, and inside a render, in place. An in-process store is
    called directly instead, at no cost.

    ``on_loop``: the same call through an asyncio client, which the ASGI adapter awaits on
    the loop instead, where it can close what that makes (`concurrency.loop_clients`):
    no thread hop. Only the request's lookup has one (`Service.fetch`).
    """

    func: Callable[[], Any]
    on_loop: Callable[[LoopClients], Awaitable[Any]] | None = None


@dataclass(frozen=True, slots=True)
class Wait:
    """Wait until another request's render of the same document is over (done or stalled),
    or ``ready()``: its first bytes can be read as they grow (`caching.growing`)."""

    flight: Flight
    stall_after: float | None
    ready: Callable[[], bool] | None = None

    def over(self) -> bool:
        return self.flight.over(self.stall_after) or (self.ready is not None and self.ready())

    def block(self) -> None:
        """Wait on this thread (WSGI, or inside a render); `offload.wait_for` is the async twin."""
        while not self.over():
            self.flight.done.wait(_POLL)


@dataclass(frozen=True, slots=True)
class FetchApp:
    """Ask the wrapped app the same request, as a GET; send back its `AppAnswer`."""


@dataclass(frozen=True, slots=True)
class AppAnswer:
    status: int
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""


class Busy(Exception):
    """No render slot came free within the deadline (thrown into a flow by the ASGI adapter)."""


Step = Offload | Call | Wait | FetchApp
Flow = Generator[Step, Any, T]
FETCH_APP = FetchApp()
# Follow a render in flight (or take over a stalled one) this many times, then render alone.
ATTEMPTS = 3
# How often a blocked follower checks whether its leader stalled.
_POLL = 0.05


def single_flight(
    flights: SingleFlight,
    key: str,
    lookup: Callable[[], T | None],
    work: Callable[[Flight | None, AsyncRunner], T],
    stall_after: float | None,
    on_follow: Callable[[], None] | None = None,
    blocking: bool = False,
    ready: Callable[[], bool] | None = None,
    looked: bool = False,
) -> Flow[tuple[T, Flight | None]]:
    """``lookup()``, or ``work`` once for every request that needs it at the same time.

    Returns the result and, when this request led, its flight: the caller releases it
    (at once, or once the reply it went into is sent). ``blocking``: ``lookup`` and
    ``flights`` wait on the network, so each look-and-claim is one `Call`. ``ready``:
    a follower stops waiting once it says ``lookup`` can answer (a render it can read).
    ``looked``: the caller has just looked and found nothing, so the first step claims
    at once (one store read per request, not two).
    """
    stale: Flight | None = None
    for attempt in range(ATTEMPTS - 1):
        first_look = _nothing if looked and attempt == 0 else lookup
        look = partial(_look_or_claim, flights, key, first_look, stale)
        found, claimed = (yield Call(look)) if blocking else look()
        if found is not None:
            return found, None
        assert claimed is not None
        lead, flight = claimed
        if lead:
            try:
                result = yield Offload(partial(work, flight), render=True)
            except BaseException:
                flight.release()
                raise
            return result, flight
        if on_follow is not None:
            on_follow()
        yield Wait(flight, stall_after, ready)
        stale = None if flight.done.is_set() else flight
    found = (yield Call(lookup)) if blocking else lookup()
    if found is not None:
        return found, None
    # Two leaders in a row failed or stalled: answer this request on its own.
    return (yield Offload(partial(work, None), render=True)), None


def _nothing() -> None:
    return None


def _look_or_claim(
    flights: SingleFlight, key: str, lookup: Callable[[], T | None], stale: Flight | None
) -> tuple[T | None, tuple[bool, Flight] | None]:
    """``lookup()``, else a claim on ``key``: what one `Call` does for a shared store."""
    found = lookup()
    return (found, None) if found is not None else (None, flights.claim(key, replacing=stale))


def run_blocking(flow: Generator[S, Any, T], perform: Callable[[S], Any]) -> T:
    """Drive ``flow`` to its result on this thread; ``perform`` does each step.

    What a step raises is thrown into the flow, which decides what it answers. Any
    sans-I/O generator drives the same way (a Redis exchange: `redis.link`).
    """
    try:
        step = flow.send(None)
        while True:
            try:
                value = perform(step)
            except BaseException as error:
                step = flow.throw(error)
            else:
                step = flow.send(value)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]
    finally:
        flow.close()


async def run_async(flow: Generator[S, Any, T], perform: Callable[[S], Awaitable[Any]]) -> T:
    """`run_blocking`'s twin on the event loop: ``perform`` awaits each step."""
    try:
        step = flow.send(None)
        while True:
            try:
                value = await perform(step)
            except BaseException as error:
                step = flow.throw(error)
            else:
                step = flow.send(value)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]
    finally:
        flow.close()
