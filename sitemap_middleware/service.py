"""One request for one of our resources in, one reply out: router → cache → renderer.

Adapters build a `Request`, try `Service.fast_reply` (no I/O, never blocks: answers
from the cache, or names the render in flight to wait for) and otherwise call
`Service.reply` (may call providers; the ASGI adapter runs it in a worker thread).
Bodies are sync iterators the adapter must close.

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
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import Any

from cachetools import LRUCache

from . import _http
from ._http import Validators
from .cache import FOLLOW_TIMEOUT, CacheStore, Document, Flights
from .compress import GzipWriter, gunzip_stream, gzip_bytes, gzip_stream
from .engine import Engine, PagePlan
from .errors import ProviderError
from .headers import DocumentHeaders, HeaderPolicy, is_not_modified, representation, wants_gzip
from .providers import AsyncRunner, Section
from .replies import Origin, Reply, Request, early, plain, unavailable
from .resources import Resource, Resources, version_etag
from .robots import default_robots, merge_robots
from .stats import Stats, logger

__all__ = ["Service"]


class Service:
    """Answers our routes for one `Sitemaps` configuration."""

    def __init__(
        self,
        *,
        engine: Engine,
        sections: Mapping[str, Section],
        stats: Stats,
        store: CacheStore | None,
        policy: HeaderPolicy,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.engine = engine
        self.sections = sections
        self.resources = Resources(engine.site, sections, store)
        self.stats = stats
        self.store = store
        self.headers = DocumentHeaders(policy)
        self._clock = clock
        self._flights = Flights()
        # (etag, first-produced time) per resource: Last-Modified survives a re-render
        # that produced the same bytes (TTL expiry, another section's invalidation).
        self._first_seen: LRUCache[str, tuple[str, int]] = LRUCache(maxsize=100_000)
        # The newest index rendered per mount prefix, served when a provider fails.
        self._last_good_index: LRUCache[str, Document] = LRUCache(maxsize=64)
        self._memory_lock = threading.Lock()

    def match(self, path: str) -> _http.Route | None:
        return _http.match_route(path, self.sections)

    def index_url(self, prefix: str) -> str:
        return f"{self.engine.site.root}{prefix}{_http.INDEX_PATH}"

    # -- answering ---------------------------------------------------------------------------

    def fast_reply(self, route: _http.Route, request: Request) -> Reply | threading.Event | None:
        """Answer without calling a provider, if possible; never blocks.

        A `Reply`; or the event of a render in flight that the request should await
        before calling `reply`; or ``None`` when `reply` must do the work.
        """
        answered = early(route, request)
        if answered is not None or self.store is None or self.resources.declares_version(route):
            return answered
        resource = self.resources.resource(route, request.prefix, _no_async)
        document = self.store.get(resource.key)
        if document is not None:
            return self._from_document(document, resource, route, request)
        pending = self._flights.pending(resource.key)
        if pending is not None:
            self.stats.count(resource.section, "flight_waits")
        return pending

    def reply(
        self,
        route: _http.Route,
        request: Request,
        run_async: AsyncRunner,
        *,
        wait: bool = True,
        alone: bool = False,
    ) -> Reply | threading.Event:
        """The answer for an index or page route (robots.txt goes through `robots`).

        When another request is rendering the same document, ``wait=True`` blocks this
        thread until it is done; ``wait=False`` returns that render's event instead, for
        callers whose threads are a shared pool the renderer itself needs (ASGI).
        ``alone=True`` renders without joining or leading any flight (a last resort).
        """
        answered = early(route, request)
        if answered is not None:
            return answered
        try:
            resource = self.resources.resource(route, request.prefix, run_async)
            if alone:
                return self._render(resource, route, request, run_async, flight=None)
            return self._reply(resource, route, request, run_async, wait=wait)
        except ProviderError as error:
            self.stats.count(route.section, "provider_errors")
            logger.error("sitemap %s: %s", request.path, error, exc_info=error.__cause__ or error)
            if route.kind == "index":
                # RFC 5861 stale-if-error: the last good index, never one that silently
                # drops the failing section (crawlers would read its URLs as gone).
                with self._memory_lock:
                    stale = self._last_good_index.get(request.prefix)
                if stale is not None:
                    self.stats.count(route.section, "stale_served")
                    resource = Resource("index", "", "", f"index|{request.prefix}", None)
                    return self._from_document(stale, resource, route, request, hit=False)
            return unavailable()

    def busy(self, route: _http.Route, request: Request) -> Reply:
        """No render slot came free within the deadline: logged, counted, and a 503."""
        self.stats.count(route.section, "busy")
        logger.warning("sitemap %s: every render slot stayed busy; answered 503", request.path)
        return unavailable()

    def timed_out(self, route: _http.Route, request: Request, timeout: float | None) -> Reply:
        """A render that outlived the provider deadline: logged, counted, and a 503."""
        self.stats.count(route.section, "provider_errors")
        logger.error("sitemap %s: no answer from the provider within %s s", request.path, timeout)
        return unavailable()

    def _reply(
        self, resource: Resource, route: _http.Route, request: Request, run_async: AsyncRunner, *, wait: bool
    ) -> Reply | threading.Event:
        if resource.version is not None:
            validators = self._validators(resource, route, request)
            if is_not_modified(validators, request):
                return self._not_modified(validators, resource, route)
        store = self.store
        if store is None:
            return self._render(resource, route, request, run_async, flight=None)
        for _ in range(2):
            document = store.get(resource.key)
            if document is not None:
                return self._from_document(document, resource, route, request)
            leader, event = self._flights.claim(resource.key)
            if leader:
                try:
                    return self._render(resource, route, request, run_async, flight=event)
                except BaseException:
                    self._flights.release(resource.key, event)
                    raise
            self.stats.count(resource.section, "flight_waits")
            if not wait:
                return event
            event.wait(FOLLOW_TIMEOUT)
        # The leaders failed or are stuck: answer this request on its own.
        return self._render(resource, route, request, run_async, flight=None)

    def _from_document(
        self,
        document: Document,
        resource: Resource,
        route: _http.Route,
        request: Request,
        *,
        hit: bool = True,
    ) -> Reply:
        gzip = wants_gzip(route, request)
        prepared = self.headers.prepare(document, resource.key, route, gzip)
        if is_not_modified(prepared.validators, request):
            origin = Origin(resource.key, weakref.ref(document), resource.section, ("not_modified",))
            self.stats.count(resource.section, "not_modified")
            return Reply(304, prepared.not_modified, raw_headers=prepared.raw_not_modified, origin=origin)
        counters = ("cache_hits", "served") if hit else ("served",)
        for counter in counters:
            self.stats.count(resource.section, counter)
        if request.method == "HEAD" or gzip:
            # Both can be answered again from the stored document alone (`replays`).
            sends_body = request.method != "HEAD"
            body = document.body if sends_body else b""
            origin = Origin(resource.key, weakref.ref(document), resource.section, counters, sends_body)
            return Reply(200, prepared.ok, body, raw_headers=prepared.raw_ok, origin=origin)
        return Reply(200, prepared.ok, gunzip_stream(document.body), raw_headers=prepared.raw_ok)

    def _not_modified(self, validators: Validators, resource: Resource, route: _http.Route) -> Reply:
        self.stats.count(resource.section, "not_modified")
        return Reply(304, self.headers.not_modified(validators, route))

    # -- rendering ---------------------------------------------------------------------------

    def _render(
        self,
        resource: Resource,
        route: _http.Route,
        request: Request,
        run_async: AsyncRunner,
        *,
        flight: threading.Event | None,
    ) -> Reply:
        """Render a cold document; with ``flight``, this request leads the key's render."""
        lead = flight is not None

        def release() -> None:
            if flight is not None:
                self._flights.release(resource.key, flight)

        self.stats.count(resource.section, "renders")
        if resource.kind == "index":
            plans = [(s, self._plan(s, request.prefix, run_async)) for s in self.sections.values()]
            xml = self.engine.index(plans, request.prefix)
            if xml is None:
                release()
                return plain(404, b"Not Found\n")
            document = self._document(resource, gzip_bytes(xml), hashlib.sha256(xml), len(xml))
            if lead and self.store is not None:
                self.store.set(resource.key, document)
            with self._memory_lock:
                self._last_good_index[request.prefix] = document
            release()
            return self._from_document(document, resource, route, request, hit=False)
        stream = self._page_stream(self.sections[resource.section], route.number, request.prefix, run_async)
        if stream is None:
            release()
            return plain(404, b"Not Found\n")
        gzip_out = wants_gzip(route, request)
        headers = self.headers.base(route, gzip_out)
        if resource.version is not None:
            headers += self._validators(resource, route, request).headers()
        self.stats.count(resource.section, "served")
        if request.method == "HEAD":
            stream.close()  # type: ignore[attr-defined]
            release()
            return Reply(200, headers)
        if lead:
            body: Iterator[bytes] = self._recording(resource, stream, gzip_out=gzip_out, release=release)
        else:
            body = gzip_stream(stream) if gzip_out else stream
        return Reply(200, headers, body, abandon=release)

    def _page_stream(
        self, section: Section, number: int, prefix: str, run_async: AsyncRunner
    ) -> Iterator[bytes] | None:
        if number == 1 and section.count is None:
            # Page 1 starts at 0: no plan needed.
            return self.engine.page(section, 0, run_async, prefix=prefix)
        plan = self._plan(section, prefix, run_async, until=number)
        if plan.pages < number:
            return None
        start = plan.starts[number - 1]
        return self.engine.page(section, start, run_async, prefix=prefix, window=plan.window)

    def _recording(
        self, resource: Resource, chunks: Iterator[bytes], *, gzip_out: bool, release: Callable[[], None]
    ) -> Iterator[bytes]:
        """Stream ``chunks`` to the client while building the cached copy.

        The copy is stored only once the client has taken the last chunk: a failed
        render, or a client gone mid-page, leaves the cache as it was.
        """
        writer = GzipWriter()
        digest = hashlib.sha256()
        parts: list[bytes] = []
        size = 0
        try:
            for chunk in chunks:
                digest.update(chunk)
                size += len(chunk)
                piece = writer.compress(chunk)
                parts.append(piece)
                yield piece if gzip_out else chunk
            parts.append(tail := writer.finish())
            if gzip_out:
                yield tail
            if self.store is not None:
                self.store.set(resource.key, self._document(resource, b"".join(parts), digest, size))
        finally:
            chunks.close()  # type: ignore[attr-defined]
            release()

    def _document(self, resource: Resource, body: bytes, digest: Any, size: int) -> Document:
        if resource.version is not None:
            etag = version_etag(resource)
            last_modified = resource.version.time or self._first_produced(resource.stable, etag)
        else:
            etag = digest.hexdigest()[:32]
            last_modified = self._first_produced(resource.stable, etag)
        return Document(body, etag, last_modified, size)

    def _first_produced(self, stable: str, etag: str) -> int:
        now = int(self._clock())
        with self._memory_lock:
            seen = self._first_seen.get(stable)
            if seen is not None and seen[0] == etag:
                return seen[1]
            self._first_seen[stable] = (etag, now)
            return now

    def _validators(self, resource: Resource, route: _http.Route, request: Request) -> Validators:
        """Version-derived validators, known before rendering (declared versions only)."""
        assert resource.version is not None
        etag = version_etag(resource)
        with self._memory_lock:
            seen = self._first_seen.get(resource.stable)
        last_modified = resource.version.time or (seen[1] if seen and seen[0] == etag else None)
        return representation(Validators(f'"{etag}"', last_modified), wants_gzip(route, request))

    # -- plans, keys and versions ------------------------------------------------------------

    def _plan(
        self, section: Section, prefix: str, run_async: AsyncRunner, *, until: int | None = None
    ) -> PagePlan:
        """The section's page plan: cached whole when there is a cache, else measured up to ``until``.

        A section with a declared count needs no measuring at all: its pages are windows.
        """
        if section.count is not None:
            return self.engine.counted_plan(
                section, self.resources.count(section, run_async), run_async, prefix=prefix, until=until
            )
        if self.store is None:
            return self.engine.plan(section, run_async, prefix=prefix, until=until)
        version = self.resources.version(section, run_async)
        generation = self.store.generation(section.name)
        key = f"plan|{self.engine.site.root}{prefix}|{section.name}|{generation}|{version and version.token}"
        for _ in range(2):
            stored = self.store.get(key)
            if stored is not None:
                return PagePlan.from_bytes(stored.body)
            # Single-flight here too: measuring a big section is the costliest thing we do,
            # and every cold page but the first asks for it at once.
            leader, event = self._flights.claim(key)
            if leader:
                try:
                    plan = self.engine.plan(section, run_async, prefix=prefix)
                    body = plan.to_bytes()
                    self.store.set(key, Document(body, "", 0, len(body)))
                    return plan
                finally:
                    self._flights.release(key, event)
            self.stats.count(section.name, "flight_waits")
            event.wait(FOLLOW_TIMEOUT)
        return self.engine.plan(section, run_async, prefix=prefix)

    # -- robots.txt --------------------------------------------------------------------------

    def cached_robots(self, request: Request) -> bytes | None:
        """Our last robots.txt for this mount, so a hit need not call the app."""
        if self.store is None or request.method not in _http.ALLOWED_METHODS:
            return None
        document = self.store.get(self._robots_key(request))
        return None if document is None else document.body

    def robots(
        self, request: Request, status: int, headers: list[tuple[str, str]], body: bytes
    ) -> bytes | None:
        """Our robots.txt given the app's answer to the same request, or ``None`` to pass it on.

        The result is cached unless the app's answer was personal (cookies, ``Vary``,
        ``private`` or ``no-store``) or encoded, which we could not merge into anyway.
        """
        names = {name.lower(): value.lower() for name, value in headers}
        if "content-encoding" in names:
            return None
        if status == 200:
            merged = merge_robots(body, self.index_url(request.prefix))
        elif status == 404:
            merged = default_robots(self.index_url(request.prefix))
        else:
            return None
        control = names.get("cache-control", "")
        personal = "set-cookie" in names or "vary" in names or "private" in control or "no-store" in control
        if self.store is not None and not personal:
            self.store.set(self._robots_key(request), Document(merged, "", 0, len(merged)))
        return merged

    def _robots_key(self, request: Request) -> str:
        assert self.store is not None
        return f"robots|{self.engine.site.root}{request.prefix}|{self.store.generation('')}"


def _no_async(func: Callable[..., Awaitable[Any]], /, *args: Any) -> Any:
    raise RuntimeError("fast_reply never calls async code")  # pragma: no cover
