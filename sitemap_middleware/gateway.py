"""The front door both adapters share: is a path ours, and what answers a request.

    gateway = sitemaps.gateway
    route = gateway.match("GET", "/sitemap-products-2.xml")    # None: the app's path
    outcome = gateway.respond(route, request)                  # a Reply, or a steps.Flow

It picks the site a request is for, answers what needs no provider at once (a hit, a
304, a 404 or 405, a replayed answer) and hands back a `steps.Flow` for the rest.
Replays live here and nowhere else: adapters never see signatures or tickets.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Protocol

from . import flow
from .caching.replays import Replays
from .concurrency.steps import Flow
from .protocol.uris import Site
from .service import Service
from .web import rules
from .web.replies import REQUEST_HEADERS, Reply, Request, early, unknown_host
from .web.sites import HOST_HEADERS, Sites

__all__ = ["Configured", "Gateway"]

# Paths whose route is remembered (a few hundred bytes each).
_ROUTES_KEPT = 1024
_BASE_HEADERS = tuple(name for name in REQUEST_HEADERS if name not in HOST_HEADERS)


class Gateway:
    """Routes and answers our paths for one `Sitemaps` (a service per site).

    ``provider_timeout`` is the deadline adapters keep on the work they run for it.
    """

    def __init__(
        self,
        sites: Sites,
        services: Mapping[Site, Service],
        replays: Replays | None,
        *,
        provider_timeout: float | None,
        overview_path: str | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.provider_timeout = provider_timeout
        self._overview_path = overview_path
        self._sites = sites
        self._services = dict(services)
        self._default_site = sites.default
        self._default = self._services[sites.default]
        self._replays = replays
        self._clock = clock
        self._routes: dict[str, rules.Route] = {}  # our paths as matched, so a repeat skips the rules
        # The request headers adapters pass on (lowercase): Host and its forwarded kin
        # only when they choose a site, so nothing else a client sends is ever kept.
        self.request_headers: tuple[str, ...] = _BASE_HEADERS + (
            tuple(sorted(HOST_HEADERS)) if sites.reads_host else ()
        )

    @property
    def sites(self) -> Sites:
        return self._sites

    def service(self, site: Site) -> Service:
        """The service answering ``site`` (one of `sites`)."""
        return self._services[site]

    def match(self, method: str, path: str) -> rules.Route | None:
        """Our resource at ``path`` (below the mount), or ``None``: the app's request."""
        if path == self._overview_path:
            return rules.OVERVIEW
        route = self._routes.get(path)
        if route is None:
            route = rules.match_route(path, self._default.sections)
            if route is not None:
                if len(self._routes) >= _ROUTES_KEPT:
                    self._routes.clear()  # paths come from clients: start again rather than grow
                self._routes[path] = route
        if route is not None and route.kind == "robots" and method not in rules.ALLOWED_METHODS:
            return None  # a POST to robots.txt is the app's business
        return route

    def request(self, method: str, path: str, prefix: str, headers: Mapping[str, str]) -> Request:
        return Request(method, path, prefix, headers, self._clock())

    def respond(self, route: rules.Route, request: Request) -> Reply | Flow[Reply]:
        """The answer, when it needs no provider; else the flow that finds it."""
        site = self._sites.pick(request.headers)
        if site is None:
            return unknown_host()
        # A site hashes by its fields: most requests are for the default one, found without.
        service = self._default if site is self._default_site else self._services[site]
        if route.kind == "robots":
            return flow.robots(service, request)
        if route.kind == "overview":
            return early(route, request) or flow.overview(service, request)
        if service.blocking:
            # Its store waits on the network: even a hit is looked up where blocking is allowed.
            return early(route, request) or flow.answer(service, route, request)
        replays = self._replays
        if replays is None:
            found = service.lookup(route, request)
            return found if isinstance(found, Reply) else flow.answer(service, route, request, found)
        replayed = replays.find(site.root, request)
        if replayed is not None:
            return replayed
        ticket = replays.ticket()
        found = service.lookup(route, request)
        if isinstance(found, Reply):
            replays.remember(site.root, request, found, ticket)
            return found
        return self._remembering(flow.answer(service, route, request, found), site, request, ticket)

    def _remembering(self, answering: Flow[Reply], site: Site, request: Request, ticket: int) -> Flow[Reply]:
        reply = yield from answering
        assert self._replays is not None
        self._replays.remember(site.root, request, reply, ticket)
        return reply


class Configured(Protocol):
    """What an adapter takes: anything with a gateway (a `Sitemaps`)."""

    @property
    def gateway(self) -> Gateway: ...
