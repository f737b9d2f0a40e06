"""The one way a request is answered: the policy, as a sans-I/O flow of steps both adapters drive.

A flow is a generator that yields `concurrency.steps` (run blocking work, call a store,
wait for another request's render, ask the app) and holds the whole policy: follow the
leader, or read its render as it grows, take over a stalled one, render alone as a last
resort, and what each failure answers. The adapter only performs the steps::

    flow = gateway.respond(route, request)           # a Reply at once, or a Flow
    reply = run_blocking(flow, perform)              # WSGI
    reply = await run_async(flow, perform)           # ASGI

A claim the flow takes (a single-flight) is released on every way out: in the flow's
own ``try`` when it fails or is closed, else by the `Reply` (or the render) that
carries it, which the adapter finishes in its ``finally``.
"""

from __future__ import annotations

import enum
from functools import partial
from typing import TYPE_CHECKING

from .caching.resources import Resource
from .concurrency.steps import FETCH_APP, Busy, Call, Flow, Offload, single_flight
from .errors import ProviderError
from .web.replies import Reply, Request
from .web.rules import OVERVIEW, Route

if TYPE_CHECKING:
    from .service import Service

__all__ = ["UNLOOKED", "answer", "overview", "robots"]


class Unlooked(enum.Enum):
    """`answer` was not told what a lookup found: it looks itself."""

    UNLOOKED = enum.auto()


UNLOOKED = Unlooked.UNLOOKED


def answer(
    service: Service, route: Route, request: Request, looked: Resource | Unlooked | None = UNLOOKED
) -> Flow[Reply]:
    """An index or a page: from the store, else rendered once for all who ask at once.

    ``looked``: what the caller's own `Service.lookup` found, a miss (the `Resource` to
    render) or ``None`` (only ``resolve`` can tell); by default the flow looks itself.
    """
    try:
        found = (yield from _lookup(service, route, request)) if looked is UNLOOKED else looked
        if found is None:
            found = yield Offload(partial(service.resolve, route, request))
        if isinstance(found, Reply):
            return found
        resource: Resource = found
        render = partial(service.render, resource, route, request)
        if service.flights is None:
            alone: Reply = yield Offload(partial(render, None), render=True)
            return alone
        lookup = partial(service.stored, resource, route, request)
        followed = partial(service.stats.count, resource.section, "flight_waits")
        ready = partial(service.documents.growing, resource.key)
        reply, flight = yield from single_flight(
            service.flights,
            resource.key,
            lookup,
            render,
            service.stall_after,
            followed,
            service.blocking,
            ready,
            # Every way here read the store for this very resource (the caller's lookup,
            # `_lookup`, or `resolve`): the first step claims at once.
            looked=True,
        )
        if flight is not None and reply.growing is None:
            reply.hold(flight.release)  # else the render releases it when it ends
        return reply
    except ProviderError as error:
        return service.failed(route, request, error)
    except TimeoutError:
        return service.timed_out(route, request)
    except Busy:
        return service.busy(route, request)


def _lookup(service: Service, route: Route, request: Request) -> Flow[Reply | Resource | None]:
    """`Service.lookup`, its store call a step of its own when the store waits on the network."""
    if not service.blocking:
        return service.lookup(route, request)
    found = service.locate(route, request)
    if not isinstance(found, Resource):
        return found
    document = yield service.fetch(found)
    return service.answer_from(document, found, route, request) or found


def overview(service: Service, request: Request) -> Flow[Reply]:
    """The HTML overview: built from the section plans, where blocking is allowed."""
    try:
        page: Reply = yield Offload(partial(service.overview, request))
        return page
    except TimeoutError:
        return service.timed_out(OVERVIEW, request)
    except Busy:
        return service.busy(OVERVIEW, request)


def robots(service: Service, request: Request) -> Flow[Reply]:
    """robots.txt: the app's own answer, with our ``Sitemap:`` line where it belongs."""
    app_answer = yield FETCH_APP
    merge = partial(service.robots, request, app_answer)
    reply: Reply = (yield Call(merge)) if service.blocking else merge()
    return reply
