"""One site's answers: from the store, or rendered; what each failure answers.

The service never waits and never decides who renders: `flow` does, calling these in
order. `lookup` calls no provider (the event loop may call it, unless the store waits on
the network: ``blocking``, then `steps.Call`); `resolve` and `render` may call providers,
so adapters run them where blocking is allowed (`steps.Offload`)::

    service.lookup(route, request)       # a Reply (hit, 404, 405), a Resource (miss), or None
    service.resolve(route, request, run_async)          # the same, calling version/count
    service.render(resource, route, request, flight, run_async)        # a cold document

Its other jobs are modules of their own, which it composes: the documents (`documents`:
validators, answers from a stored one, renders read as they grow), the section plans
(`plan`), robots.txt (`answers.robots`) and the HTML overview (`answers.overview`).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from functools import partial
from typing import Any

from .answers.overview import OverviewPage
from .answers.robots import RobotsTxt
from .caching.resources import Resource, Resources, page_key
from .caching.stores import CacheStore, Document
from .changes.watch import PageWatch, Recorder
from .concurrency.flights import Flight
from .concurrency.steps import AppAnswer, Call, Offload, Step, Wait, run_blocking, single_flight
from .documents import Documents
from .engine import Engine, index_files
from .errors import ProviderError
from .plans import PagePlan
from .plans.shape import Shape
from .plans.shrinking import ShrinkGuard
from .protocol.render import MAX_SITEMAPS
from .providers import AsyncRunner, Section
from .stats import Stats, logger
from .web import rules
from .web.compress import Gzip
from .web.headers import DocumentHeaders, HeaderPolicy, is_not_modified, wants_gzip
from .web.replies import Reply, Request, early, plain, unavailable

__all__ = ["Service"]


class Service:
    """Answers the index and pages of one site (one `Sitemaps` has one per site)."""

    def __init__(
        self,
        *,
        engine: Engine,
        sections: Mapping[str, Section],
        shapes: Mapping[str, Shape],
        stats: Stats,
        store: CacheStore | None,
        policy: HeaderPolicy,
        clock: Callable[[], float] = time.time,
        stall_after: float | None = None,
        compression: Gzip | None = None,
        recorder: Recorder | None = None,
        shrink: ShrinkGuard | None = None,
    ) -> None:
        self.engine = engine
        self.compression = compression or Gzip.named("zlib")
        self.sections = sections
        self.shapes = shapes  # each section's, picked when it was registered (`plans`)
        self.resources = Resources(engine.site, sections, store)
        self.stats = stats
        self.store = store
        self.flights = None if store is None else store.flights
        # Whether store calls may wait on the network: `flow` then makes them as `Call`s.
        self.blocking = store is not None and getattr(store, "blocking", True)
        # Its `get` through an asyncio client, awaited on the event loop (`RedisStore.aget`).
        self._aget = getattr(store, "aget", None) if self.blocking else None
        # A follower stops waiting for a leader whose provider is silent this long.
        self.stall_after = stall_after
        self.headers = DocumentHeaders(policy)
        self.documents = Documents(store, stats, self.headers, self.compression, clock)
        # Every page rendered completely goes to the change log, when there is one.
        self.recorder = recorder
        # The pages of each section's newest whole plan in this process, by mount prefix:
        # when a page is recorded, whether its section's pass has ended (`changes.ledger`).
        self._pages: dict[tuple[str, str], int] = {}
        # Each whole plan is held against the section's last published one (`plans.shrinking`).
        self.shrink = shrink or ShrinkGuard(None, store, stats, None)
        tags = None if policy.cache_tags is None else policy.cache_tags.robots()
        self._robots = RobotsTxt(engine.site.root, store, tags, published=self._published_index_files)
        self._overview = OverviewPage(
            engine.site.root,
            sections,
            self.resources,
            store,
            plan=self.plan,
            clock=clock,
            changes=None if recorder is None else recorder.log,
        )

    # -- answering ---------------------------------------------------------------------------

    def lookup(self, route: rules.Route, request: Request) -> Reply | Resource | None:
        """Without calling a provider: a `Reply` (a hit, 404, 405), the `Resource` to
        render (a miss), or ``None`` when only `resolve` can tell (a section with a
        declared version). It blocks only on a ``blocking`` store."""
        found = self.locate(route, request)
        if isinstance(found, Resource):
            return self.stored(found, route, request) or found
        return found

    def locate(self, route: rules.Route, request: Request) -> Reply | Resource | None:
        """`lookup` without its store call: the `Resource` whose document answers."""
        answered = early(route, request)
        if answered is not None:
            return answered
        if self.resources.declares_version(route):
            return None
        return self.resources.resource(route, request.prefix, _no_async)

    def fetch(self, resource: Resource) -> Call:
        """The store's document for ``resource`` as one `steps.Call` (``blocking`` stores),
        awaited on the event loop where the store has an asyncio client (``aget``)."""
        assert self.store is not None
        get = partial(self.store.get, resource.key)
        return Call(get, None if self._aget is None else partial(self._aget, resource.key))

    def resolve(self, route: rules.Route, request: Request, run_async: AsyncRunner) -> Reply | Resource:
        """`lookup`, calling declared versions and counts: a 304 before any URL is iterated."""
        resource = self.resources.resource(route, request.prefix, run_async)
        if resource.version is not None:
            validators = self.documents.validators(resource, route, request)
            if is_not_modified(validators, request):
                self.stats.count(resource.section, "not_modified")
                return Reply(304, self.headers.not_modified(validators, route))
        return self.stored(resource, route, request) or resource

    def stored(self, resource: Resource, route: rules.Route, request: Request) -> Reply | None:
        """The answer from the stored document, if the store holds one, or from the render
        of it in progress here, read as it grows."""
        if self.store is None:
            return None
        return self.documents.joined(resource, route, request) or self.answer_from(
            self.store.get(resource.key), resource, route, request
        )

    def answer_from(
        self, document: Document | None, resource: Resource, route: rules.Route, request: Request
    ) -> Reply | None:
        """The answer from ``document`` as the store returned it (``None``: none stored)."""
        return None if document is None else self.documents.reply(document, resource, route, request)

    def failed(self, route: rules.Route, request: Request, error: ProviderError) -> Reply:
        """A provider failed before the document started: logged, counted, and a 503."""
        self.stats.count(route.section, "provider_errors")
        logger.error("sitemap %s: %s", request.path, error, exc_info=error.__cause__ or error)
        if route.kind == "index":
            # RFC 5861 stale-if-error: the last good index, never one that silently
            # drops the failing section (crawlers would read its URLs as gone).
            stale = self.documents.last_good_index(request.prefix, route.number)
            if stale is not None:
                self.stats.count(route.section, "stale_served")
                resource = Resource("index", "", "", f"index|{request.prefix}|{route.number}", None)
                return self.documents.reply(stale, resource, route, request, hit=False)
        return unavailable()

    def busy(self, route: rules.Route, request: Request) -> Reply:
        """No render slot came free within the deadline: logged, counted, and a 503."""
        self.stats.count(route.section, "busy")
        logger.warning("sitemap %s: every render slot stayed busy; answered 503", request.path)
        return unavailable()

    def timed_out(self, route: rules.Route, request: Request) -> Reply:
        """A render that outlived the provider deadline: logged, counted, and a 503."""
        self.stats.count(route.section, "provider_errors")
        logger.error("sitemap %s: no answer from the provider within the deadline", request.path)
        return unavailable()

    # -- rendering ---------------------------------------------------------------------------

    def render(
        self,
        resource: Resource,
        route: rules.Route,
        request: Request,
        flight: Flight | None,
        run_async: AsyncRunner,
    ) -> Reply:
        """Render a cold document; ``flight`` is this request's single-flight, if it leads."""
        self.stats.count(resource.section, "renders")
        if resource.kind == "index":
            # Every index file is built from the same stored plans: a section is planned
            # once (under its own single-flight), however many index files ask for it.
            plans = [(s, self.plan(s, request.prefix, run_async)) for s in self.sections.values()]
            self._robots.built(request.prefix, index_files(plans))
            xml = self.engine.index(plans, request.prefix, route.number)
            if xml is None:
                return plain(404, b"Not Found\n")
            document = self.documents.made(
                resource, request, self.compression.compress(xml), hashlib.sha256(xml), len(xml)
            )
            if flight is not None and self.store is not None:
                self.store.set(resource.key, document)
            self.documents.keep_index(request.prefix, route.number, document)
            return self.documents.reply(document, resource, route, request, hit=False)
        kept = self._refused_page(resource, route, request, run_async)
        if kept is not None:
            return kept
        stream = self._page_stream(self.sections[resource.section], route.number, request.prefix, run_async)
        watch = self._watch(resource.section, route.number, request.prefix)
        if stream is None:
            if watch is not None:
                watch.empty()
            return plain(404, b"Not Found\n")
        gzip_out = wants_gzip(route, request)
        headers = self.documents.cold_headers(resource, route, request)
        self.stats.count(resource.section, "served")
        if request.method == "HEAD":
            stream.close()  # type: ignore[attr-defined]
            return Reply(200, headers)
        if flight is None:  # nothing is stored: the page streams to this one client
            if watch is not None:
                stream = watch.stream(stream)
            body = self.compression.stream(stream) if gzip_out else stream
            return Reply(200, headers, body)
        completed = None if watch is None else watch.stored
        growing = self.documents.grow(resource, request, stream, flight, completed)
        return Reply(200, headers, growing.reader(gzip=gzip_out), growing=growing)

    def _refused_page(
        self, resource: Resource, route: rules.Route, request: Request, run_async: AsyncRunner
    ) -> Reply | None:
        """While a shrink of the section is refused, its page as last published (still stored
        under the generation it was published at), or a 503 where none is kept: never the
        shrunken page (`plans.shrinking`)."""
        section = self.sections[resource.section]
        if self.shrink.max_shrink is None or not section.recorded:
            return None
        scope = self.engine.site.root + request.prefix
        planned = self.store is not None and (
            route.number > 1 or self.shapes[section.name].word != "measured"
        )
        if planned:
            # The page needs its section's whole plan anyway: held against the last published
            # one before the page renders. Page 1 of a measured section needs none, and is not
            # measured twice for this: a shrink is caught there once anything plans it.
            self.plan(section, request.prefix, run_async)
        refused = self.shrink.refused(scope, section.name)
        if refused is not None and not planned:
            # Refused until now: planned afresh, it may have grown back or been accepted.
            self.plan(section, request.prefix, run_async)
            refused = self.shrink.refused(scope, section.name)
        if refused is None:
            return None
        if refused.plan is not None and route.number > refused.plan.pages:
            return plain(404, b"Not Found\n")
        document = key = None
        if self.store is not None and refused.plan is not None and refused.generation is not None:
            key = page_key(scope, resource.section, refused.generation, route.number, None)
            document = self.store.get(key)
        if document is None or key is None:
            self.stats.count(resource.section, "shrink_unavailable")
            return unavailable()
        self.stats.count(resource.section, "stale_served")
        kept = Resource("page", resource.section, key, resource.stable, None)
        return self.documents.reply(document, kept, route, request, hit=False)

    def _watch(self, section: str, number: int, prefix: str) -> PageWatch | None:
        if self.recorder is None or not self.sections[section].recorded:
            return None
        scope = self.engine.site.root + prefix
        pages = partial(self._pages.get, (prefix, section))
        return PageWatch(
            self.recorder, scope, section, number, pages, by_position=self.shapes[section].by_position
        )

    def _page_stream(
        self, section: Section, number: int, prefix: str, run_async: AsyncRunner
    ) -> Iterator[bytes] | None:
        def plan(until: int) -> PagePlan:
            return self.plan(section, prefix, run_async, until=until)

        shape = self.shapes[section.name]
        return shape.page(self.engine, section, number, plan, run_async, prefix=prefix)

    # -- the HTML overview -------------------------------------------------------------------

    def overview(self, request: Request, run_async: AsyncRunner) -> Reply:
        """The HTML overview of this site's tree (`answers.overview`)."""
        return self._overview.answer(request, run_async)

    def plan(
        self, section: Section, prefix: str, run_async: AsyncRunner, *, until: int | None = None
    ) -> PagePlan:
        """The section's page plan (`plans`): stored whole when there is a store, else made up to ``until``.

        Its shape says what the plan depends on (a declared count, or version) and makes
        it. Measuring a big section is the costliest thing we do, and every cold page but
        the first asks for it at once: it runs under the same single-flight as documents.
        """
        store = self.store
        shape = self.shapes[section.name]
        planner = shape.planner(
            self.engine, section, self.resources, run_async, prefix=prefix, stored=store is not None
        )
        scope = self.engine.site.root + prefix
        if store is None:
            made = planner.make(run_async, until)
            if until is None:
                made = self._published(scope, section, made)
                self._planned(prefix, section.name, made)
            return made
        generation = store.generation(section.name)
        key = f"plan|{self.engine.site.root}{prefix}|{section.name}|{generation}|{planner.basis}"

        def lookup() -> PagePlan | None:
            stored = store.get(key)
            return None if stored is None else PagePlan.from_bytes(stored.body)

        def measure(flight: Flight | None, run_async: AsyncRunner) -> PagePlan:
            measuring = partial(planner.make, run_async, None)
            plan = measuring() if flight is None else flight.heartbeat.context().run(measuring)
            body = plan.to_bytes()
            store.set(key, Document(body, "", 0, len(body)))
            return plan

        followed = partial(self.stats.count, section.name, "flight_waits")
        flow = single_flight(store.flights, key, lookup, measure, self.stall_after, followed)
        plan, flight = run_blocking(flow, partial(_perform_here, run_async))
        if flight is not None:
            flight.release()
        plan = self._published(scope, section, plan)
        self._planned(prefix, section.name, plan)
        return plan

    def _published(self, scope: str, section: Section, plan: PagePlan) -> PagePlan:
        """``plan``, or the last published one while a shrink is refused (`plans.shrinking`); a
        section made from the change log (a recent one) empties as its window slides: no fault."""
        return self.shrink.publish(scope, section.name, plan) if section.recorded else plan

    def planned_pages(self, prefix: str, section: str) -> int | None:
        """The pages of the section's newest whole plan in this process (``None``: none yet);
        no provider or store is asked (a CDN purge's index file, `push.indexes`)."""
        return self._pages.get((prefix, section))

    def index_files(self, prefix: str) -> int:
        """How many index files robots.txt names for ``prefix`` (the last index build's)."""
        return self._robots.known(prefix)

    def _planned(self, prefix: str, section: str, plan: PagePlan) -> None:
        if len(self._pages) >= 1024:  # mount prefixes come from the server: a handful
            self._pages.clear()
        self._pages[(prefix, section)] = plan.pages

    # -- robots.txt --------------------------------------------------------------------------

    def _published_index_files(self, prefix: str) -> int | None:
        """How many index files the sections' last published plans need (`plans.shrinking`:
        kept beside the store, or the change log's pages), calling no provider."""
        scope = self.engine.site.root + prefix
        known = [self.shrink.pages(scope, name) for name in self.sections]
        if all(pages is None for pages in known):
            return None
        return -(-sum(pages or 0 for pages in known) // MAX_SITEMAPS)

    def robots(self, request: Request, app: AppAnswer) -> Reply:
        """Our robots.txt given the app's answer to the same request (`answers.robots`)."""
        return self._robots.answer(request, app)


def _perform_here(run_async: AsyncRunner, step: Step) -> Any:
    """Steps of a flow run inside a render, on its own thread: it may block."""
    if isinstance(step, Offload):
        return step.func(run_async)
    if isinstance(step, Call):
        return step.func()
    if isinstance(step, Wait):
        return step.block()
    raise TypeError(f"a render cannot perform {step!r}")  # pragma: no cover


def _no_async(func: Callable[..., Awaitable[Any]], /, *args: Any) -> Any:
    raise RuntimeError("lookup never calls async code")  # pragma: no cover
