"""One site's answers: from the store, or rendered; what each failure answers; robots.txt.

The service never waits and never decides who renders: `flow` does, calling these in
order. `lookup` calls no provider (the event loop may call it, unless the store waits on
the network: ``blocking``, then `flow.Call`); `resolve` and `render` may call providers,
so adapters run them where blocking is allowed (`flow.Offload`)::

    service.lookup(route, request)       # a Reply (hit, 404, 405), a Resource (miss), or None
    service.resolve(route, request, run_async)          # the same, calling version/count
    service.render(resource, route, request, flight, run_async)        # a cold document

Validators: a document's ETag is a hash of its uncompressed bytes, so every process
and machine serving the same data agrees on it; the gzip representation gets its own
tag. A section that declares a ``version`` gets tags derived from that version
instead, so conditional and cold requests are answered before any URL is iterated.
"""

from __future__ import annotations

import hashlib
import threading
import time
import weakref
from collections.abc import Awaitable, Callable, Hashable, Iterator, Mapping
from functools import partial
from typing import Any

from cachetools import LRUCache
from werkzeug.http import http_date

from .caching.resources import Resource, Resources, version_etag
from .caching.stores import CacheStore, Document, MemoryStore
from .concurrency.flights import Flight
from .engine import Engine, PagePlan, index_files
from .errors import ProviderError
from .flow import AppAnswer, Call, Offload, Step, Wait, run_blocking, single_flight
from .providers import AsyncRunner, Section
from .sources import Key
from .stats import Stats, logger
from .web import rules
from .web.compress import Gzip
from .web.headers import DocumentHeaders, HeaderPolicy, is_not_modified, representation, wants_gzip
from .web.overview import Overview, PageRow, SectionRow, render_overview
from .web.replies import Origin, Reply, Request, early, plain, unavailable
from .web.robots import RobotsAnswer, merged_robots
from .web.rules import Validators

__all__ = ["MAX_ROBOTS_INDEX_FILES", "Service"]

# Pages of each section whose cache state the overview shows (each costs a store lookup).
_OVERVIEW_CACHE_CHECKS = 1000
# robots.txt merges remembered (`Service.robots`), of app answers up to this size.
_MERGES_KEPT_BYTES = 64 * 1024

# robots.txt names at most this many index files (50 million sitemap files): Google reads
# the first 500 KiB of a robots.txt, and a count of rows must never size one without bound.
MAX_ROBOTS_INDEX_FILES = 1_000


class Service:
    """Answers the index and pages of one site (one `Sitemaps` has one per site)."""

    def __init__(
        self,
        *,
        engine: Engine,
        sections: Mapping[str, Section],
        stats: Stats,
        store: CacheStore | None,
        policy: HeaderPolicy,
        clock: Callable[[], float] = time.time,
        stall_after: float | None = None,
        compression: Gzip | None = None,
    ) -> None:
        self.engine = engine
        self.compression = compression or Gzip.named("zlib")
        self.sections = sections
        self.resources = Resources(engine.site, sections, store)
        self.stats = stats
        self.store = store
        self.flights = None if store is None else store.flights
        # Whether store calls may wait on the network: `flow` then makes them as `Call`s.
        self.blocking = store is not None and getattr(store, "blocking", True)
        # Its `get` through an asyncio client, awaited on the event loop (`RedisStore.aget`).
        self._aget = getattr(store, "aget", None) if self.blocking else None
        # Identity copies beside stored documents, where the store keeps them.
        self._copies = store if isinstance(store, MemoryStore) else None
        # A follower stops waiting for a leader whose provider is silent this long.
        self.stall_after = stall_after
        self.headers = DocumentHeaders(policy)
        self._clock = clock
        # (etag, first-produced time) per resource: Last-Modified survives a re-render
        # that produced the same bytes (TTL expiry, another section's invalidation).
        self._first_seen: LRUCache[str, tuple[str, int]] = LRUCache(maxsize=100_000)
        # The newest rendering of each index file per mount prefix, served when a provider fails.
        self._last_good_index: LRUCache[tuple[str, int], Document] = LRUCache(maxsize=64)
        # How many index files there were at the last index build, per mount prefix.
        self._index_files: LRUCache[str, int] = LRUCache(maxsize=64)
        # robots.txt merges by the app's answer (never by the request: nothing is stored by Host).
        self._merged_robots: LRUCache[Hashable, RobotsAnswer | None] = LRUCache(maxsize=16)
        self._memory_lock = threading.Lock()

    @property
    def site_root(self) -> str:
        return self.engine.site.root

    def index_url(self, prefix: str, number: int = 1) -> str:
        return f"{self.engine.site.root}{prefix}{rules.index_path(number)}"

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
        """The store's document for ``resource`` as one `flow.Call` (``blocking`` stores),
        awaited on the event loop where the store has an asyncio client (``aget``)."""
        assert self.store is not None
        get = partial(self.store.get, resource.key)
        return Call(get, None if self._aget is None else partial(self._aget, resource.key))

    def resolve(self, route: rules.Route, request: Request, run_async: AsyncRunner) -> Reply | Resource:
        """`lookup`, calling declared versions and counts: a 304 before any URL is iterated."""
        resource = self.resources.resource(route, request.prefix, run_async)
        if resource.version is not None:
            validators = self._validators(resource, route, request)
            if is_not_modified(validators, request):
                self.stats.count(resource.section, "not_modified")
                return Reply(304, self.headers.not_modified(validators, route))
        return self.stored(resource, route, request) or resource

    def stored(self, resource: Resource, route: rules.Route, request: Request) -> Reply | None:
        """The answer from the stored document, if the store holds one."""
        if self.store is None:
            return None
        return self.answer_from(self.store.get(resource.key), resource, route, request)

    def answer_from(
        self, document: Document | None, resource: Resource, route: rules.Route, request: Request
    ) -> Reply | None:
        """The answer from ``document`` as the store returned it (``None``: none stored)."""
        return None if document is None else self._from_document(document, resource, route, request)

    def failed(self, route: rules.Route, request: Request, error: ProviderError) -> Reply:
        """A provider failed before the document started: logged, counted, and a 503."""
        self.stats.count(route.section, "provider_errors")
        logger.error("sitemap %s: %s", request.path, error, exc_info=error.__cause__ or error)
        if route.kind == "index":
            # RFC 5861 stale-if-error: the last good index, never one that silently
            # drops the failing section (crawlers would read its URLs as gone).
            with self._memory_lock:
                stale = self._last_good_index.get((request.prefix, route.number))
            if stale is not None:
                self.stats.count(route.section, "stale_served")
                resource = Resource("index", "", "", f"index|{request.prefix}|{route.number}", None)
                return self._from_document(stale, resource, route, request, hit=False)
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

    def _from_document(
        self,
        document: Document,
        resource: Resource,
        route: rules.Route,
        request: Request,
        *,
        hit: bool = True,
    ) -> Reply:
        gzip = wants_gzip(route, request)
        prepared = self.headers.prepare(document, resource.key, route, gzip)
        # A declared version decides afresh on every request: never replayed.
        replayable = resource.version is None and bool(resource.key)
        if is_not_modified(prepared.validators, request):
            self.stats.count(resource.section, "not_modified")
            origin = None
            if replayable:
                origin = Origin(resource.key, weakref.ref(document), resource.section, ("not_modified",))
            return Reply(304, prepared.not_modified, raw_headers=prepared.raw_not_modified, origin=origin)
        counters = ("cache_hits", "served") if hit else ("served",)
        for counter in counters:
            self.stats.count(resource.section, counter)
        if request.method == "HEAD" or gzip:
            sends_body = request.method != "HEAD"
            body = document.body if sends_body else b""
            origin = None
            if replayable:
                # Both can be answered again from the stored document alone (`replays`).
                origin = Origin(resource.key, weakref.ref(document), resource.section, counters, sends_body)
            return Reply(200, prepared.ok, body, raw_headers=prepared.raw_ok, origin=origin)
        copies = self._copies
        if copies is not None and resource.key:
            identity = copies.identity(resource.key, document)
            if identity is not None:
                return Reply(200, prepared.ok, identity, raw_headers=prepared.raw_ok)
            inflated = self._inflating(copies, resource.key, document)
        else:
            inflated = self.compression.inflate(document.body)
        return Reply(200, prepared.ok, inflated, raw_headers=prepared.raw_ok)

    def _inflating(self, copies: MemoryStore, key: str, document: Document) -> Iterator[bytes]:
        """A stored document's identity body, inflated where the adapter runs bodies (off
        the event loop): whole, and kept beside the document for the next identity request,
        when the store has room to spare for it; else piece by piece, never whole."""
        if not copies.claim_identity(key, document):
            yield from self.compression.inflate(document.body)
            return
        identity = None
        try:
            identity = self.compression.decompress(document.body, document.size)
        finally:
            copies.keep_identity(key, document, identity)  # ends the claim on every way out
        yield identity

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
            plans = [(s, self._plan(s, request.prefix, run_async)) for s in self.sections.values()]
            self._built_index(request.prefix, index_files(plans))
            xml = self.engine.index(plans, request.prefix, route.number)
            if xml is None:
                return plain(404, b"Not Found\n")
            document = self._document(
                resource, request, self.compression.compress(xml), hashlib.sha256(xml), len(xml)
            )
            if flight is not None and self.store is not None:
                self.store.set(resource.key, document)
            with self._memory_lock:
                self._last_good_index[(request.prefix, route.number)] = document
            return self._from_document(document, resource, route, request, hit=False)
        stream = self._page_stream(self.sections[resource.section], route.number, request.prefix, run_async)
        if stream is None:
            return plain(404, b"Not Found\n")
        gzip_out = wants_gzip(route, request)
        headers = self.headers.base(route, gzip_out)
        if resource.version is not None:
            headers += self._validators(resource, route, request).headers()
        self.stats.count(resource.section, "served")
        if request.method == "HEAD":
            stream.close()  # type: ignore[attr-defined]
            return Reply(200, headers)
        if flight is not None:
            body: Iterator[bytes] = self._recording(resource, request, stream, flight, gzip_out=gzip_out)
        else:
            body = self.compression.stream(stream) if gzip_out else stream
        return Reply(200, headers, body)

    def _page_stream(
        self, section: Section, number: int, prefix: str, run_async: AsyncRunner
    ) -> Iterator[bytes] | None:
        if number == 1 and section.count is None and not section.paged:
            # Page 1 starts at 0: no plan needed.
            return self.engine.page(section, 0, run_async, prefix=prefix)
        plan = self._plan(section, prefix, run_async, until=number)
        if plan.pages < number:
            return None
        start: Key | None = plan.starts[number - 1]
        # A paged source's page reads up to the next page's first key (`Engine.page`); one
        # that reads whole ranges reads page 1 from below its first key, as the last page
        # reads past its own: a row inserted before the first planned key shows at once.
        end = plan.starts[number] if section.paged and number < plan.pages else None
        if number == 1 and section.paged and section.provider.ranged:
            start = None
        return self.engine.page(section, start, run_async, prefix=prefix, window=plan.window, end=end)

    def _recording(
        self, resource: Resource, request: Request, chunks: Iterator[bytes], flight: Flight, *, gzip_out: bool
    ) -> Iterator[bytes]:
        """Stream ``chunks`` to the client while building the stored copy.

        The copy is stored only once the client has taken the last chunk: a failed
        render, or a client gone mid-page, leaves the store as it was. The time spent
        handing each chunk over is the client's, and the flight's followers see it.
        """
        writer = self.compression.writer()
        digest = hashlib.sha256()
        parts: list[bytes] = []
        size = 0
        try:
            for chunk in chunks:
                digest.update(chunk)
                size += len(chunk)
                piece = writer.compress(chunk)
                parts.append(piece)
                flight.sending()
                yield piece if gzip_out else chunk
                flight.sent()
            parts.append(tail := writer.finish())
            if gzip_out:
                flight.sending()
                yield tail
                flight.sent()
            if self.store is not None:
                document = self._document(resource, request, b"".join(parts), digest, size)
                self.store.set(resource.key, document)
            # Followers may go on now; the reply releases it too, on every other way out.
            flight.release()
        finally:
            chunks.close()  # type: ignore[attr-defined]

    def _document(
        self, resource: Resource, request: Request, body: bytes, digest: Any, size: int
    ) -> Document:
        if resource.version is not None:
            etag = version_etag(resource)
            last_modified = resource.version.time or self._first_produced(resource.stable, etag, request)
        else:
            etag = digest.hexdigest()[:32]
            last_modified = self._first_produced(resource.stable, etag, request)
        return Document(body, etag, last_modified, size)

    def _first_produced(self, stable: str, etag: str, request: Request) -> int:
        # RFC 9110 §8.8.2.1: Last-Modified is never later than the response's Date, which
        # servers take when the request arrives (uvicorn: at its last tick, up to a second
        # before): these bytes were read from data as of then anyway.
        now = int(min(self._clock(), request.received or self._clock()) - 1)
        with self._memory_lock:
            seen = self._first_seen.get(stable)
            if seen is not None and seen[0] == etag:
                return seen[1]
            self._first_seen[stable] = (etag, now)
            return now

    def _validators(self, resource: Resource, route: rules.Route, request: Request) -> Validators:
        """Version-derived validators, known before rendering (declared versions only)."""
        assert resource.version is not None
        etag = version_etag(resource)
        with self._memory_lock:
            seen = self._first_seen.get(resource.stable)
        last_modified = resource.version.time or (seen[1] if seen and seen[0] == etag else None)
        return representation(Validators(f'"{etag}"', last_modified), wants_gzip(route, request))

    # -- the HTML overview -------------------------------------------------------------------

    def overview(self, request: Request, run_async: AsyncRunner) -> Reply:
        """The HTML overview of this site's tree (`web.overview`), from the same stored plans
        as the index; never stored itself, since it shows the cache's state."""
        plans: list[tuple[Section, PagePlan]] = []
        rows: list[SectionRow] = []
        for section in self.sections.values():
            try:
                plan = self._plan(section, request.prefix, run_async)
            except ProviderError as error:
                rows.append(SectionRow(section.name, [], error=f"cannot be planned: {error}"))
                continue
            plans.append((section, plan))
            rows.append(SectionRow(section.name, self._overview_pages(section, plan, request, run_async)))
        index_urls = [self.index_url(request.prefix, n) for n in range(1, index_files(plans) + 1)]
        generated = http_date(int(self._clock()))
        body = render_overview(Overview(self.site_root + request.prefix, index_urls, rows, generated))
        headers = [
            ("Content-Type", rules.HTML_TYPE),
            ("Content-Length", str(len(body))),
            ("Cache-Control", "no-store"),  # it shows the cache's state, which changes
            ("X-Robots-Tag", "noindex"),
        ]
        return Reply(200, headers, b"" if request.method == "HEAD" else body)

    def _overview_pages(
        self, section: Section, plan: PagePlan, request: Request, run_async: AsyncRunner
    ) -> list[PageRow]:
        root = f"{self.site_root}{request.prefix}/sitemap-{section.name}-"
        rows = []
        for number in range(1, plan.pages + 1):
            cached = None
            if number <= _OVERVIEW_CACHE_CHECKS and self.store is not None:
                # A declared version is asked once per page here: checked for a few pages only.
                route = rules.Route("page", section.name, number)
                resource = self.resources.resource(route, request.prefix, run_async)
                cached = self.store.get(resource.key) is not None
            rows.append(
                PageRow(number, f"{root}{number}.xml", plan.lastmod(number), plan.url_count(number), cached)
            )
        return rows

    def _plan(
        self, section: Section, prefix: str, run_async: AsyncRunner, *, until: int | None = None
    ) -> PagePlan:
        """The section's page plan: stored whole when there is a store, else measured up to ``until``.

        A section with a declared count needs no measuring at all: its pages are windows.
        Measuring a big section is the costliest thing we do, and every cold page but the
        first asks for it at once: it runs under the same single-flight as documents.
        """
        store = self.store
        if section.count is not None:
            count = self.resources.count(section, run_async)
            if store is None:
                return self.engine.counted_plan(section, count, run_async, prefix=prefix, until=until)
            plan_of: Callable[[AsyncRunner], PagePlan] = partial(
                self.engine.counted_plan, section, count, prefix=prefix
            )
            generation = store.generation(section.name)
            key = f"plan|{self.engine.site.root}{prefix}|{section.name}|{generation}|count:{count}"
        else:
            if store is None:
                if section.paged:
                    return self.engine.keyed_plan(section, run_async)
                return self.engine.plan(section, run_async, prefix=prefix, until=until)
            version = self.resources.version(section, run_async)
            generation = store.generation(section.name)
            token = version and version.token
            key = f"plan|{self.engine.site.root}{prefix}|{section.name}|{generation}|{token}"
            if section.paged:
                plan_of = partial(self.engine.keyed_plan, section)
            else:
                plan_of = partial(self.engine.plan, section, prefix=prefix)

        def lookup() -> PagePlan | None:
            stored = store.get(key)
            return None if stored is None else PagePlan.from_bytes(stored.body)

        def measure(flight: Flight | None, run_async: AsyncRunner) -> PagePlan:
            measuring = partial(plan_of, run_async)
            plan = measuring() if flight is None else flight.heartbeat.context().run(measuring)
            body = plan.to_bytes()
            store.set(key, Document(body, "", 0, len(body)))
            return plan

        followed = partial(self.stats.count, section.name, "flight_waits")
        flow = single_flight(store.flights, key, lookup, measure, self.stall_after, followed)
        plan, flight = run_blocking(flow, partial(_perform_here, run_async))
        if flight is not None:
            flight.release()
        return plan

    # -- robots.txt --------------------------------------------------------------------------

    def robots(self, request: Request, app: AppAnswer) -> Reply:
        """Our robots.txt given the app's answer to the same request (its own, passed on,
        when we cannot merge into it). Never stored by request: the app's answer may
        depend on anything in the request (its Host, a cookie), and one client's answer
        must never reach another. Only the merge is remembered, keyed by the app's whole
        answer: the same answer merges the same way, whoever it was for."""
        files = self._known_index_files(request.prefix)
        key = (app.status, tuple(app.headers), app.body, request.prefix, files)
        with self._memory_lock:
            known = key in self._merged_robots
            merged = self._merged_robots[key] if known else None
        if not known:
            urls = [self.index_url(request.prefix, number) for number in range(1, files + 1)]
            merged = merged_robots(app.status, app.headers, app.body, urls)
            if len(app.body) <= _MERGES_KEPT_BYTES:
                with self._memory_lock:
                    self._merged_robots[key] = merged
        if merged is None:
            return Reply(app.status, app.headers, b"" if request.method == "HEAD" else app.body)
        headers = [("Content-Type", merged.content_type), ("Content-Length", str(len(merged.body)))]
        return Reply(200, headers, merged.body)

    def _index_files_key(self, prefix: str) -> str:
        return f"index-files|{self.engine.site.root}{prefix}"

    def _built_index(self, prefix: str, files: int) -> None:
        """Remember how many index files the plans just made: robots.txt names them."""
        with self._memory_lock:
            self._index_files[prefix] = files
        if self.store is not None:
            body = str(files).encode()
            self.store.set(self._index_files_key(prefix), Document(body, "", 0, len(body)))

    def _known_index_files(self, prefix: str) -> int:
        """How many index files robots.txt names: as many as the last index build made.

        robots.txt never calls a provider: a crawler treats a robots.txt that fails or
        times out as a server error and may stop crawling the whole site, so it must
        not depend on the health of the data behind the sitemaps. The count is what the
        last index build for this site and mount found: from the store (so a shared
        store carries other processes' builds), else as remembered here, which outlives
        the store's TTL and `invalidate`; before any build, only the first index file,
        where a crawler starts anyway. At least 1, at most `MAX_ROBOTS_INDEX_FILES`.
        """
        files: int | None = None
        if self.store is not None:
            try:
                stored = self.store.get(self._index_files_key(prefix))
                files = None if stored is None else int(stored.body)
            except Exception:  # robots.txt is never a 500 for want of a hint
                logger.exception("sitemap robots.txt: the store failed; naming the index files known here")
        if files is None:
            with self._memory_lock:
                files = self._index_files.get(prefix, 1)
        if files > MAX_ROBOTS_INDEX_FILES:
            logger.warning(
                "sitemap robots.txt names the first %d of %d index files: raise page_size",
                MAX_ROBOTS_INDEX_FILES,
                files,
            )
        return min(max(files, 1), MAX_ROBOTS_INDEX_FILES)


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
