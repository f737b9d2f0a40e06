"""`Sitemaps`: the configuration object users create, register providers on, and wrap apps with.

sitemaps = Sitemaps(base_url="https://shop.example")

@sitemaps.provider("products")
def products():
    for p in db.products():
        yield Url(f"/p/{p.slug}", lastmod=p.updated_at)

app.wsgi_app = sitemaps.wsgi(app.wsgi_app)     # Flask, Django's WSGIHandler, any WSGI app
asgi_app = sitemaps.asgi(starlette_app)         # Starlette, FastAPI, Django's ASGI app
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Literal, TypeVar

from .asgi import ASGIApp, SitemapASGIMiddleware
from .caching.replays import Replays
from .caching.stores import CacheStore, MemoryStore, replayable
from .changes.log import ChangeLog
from .changes.recent import DAYS_2, RecentChanges
from .concurrency.deadlines import THREAD_GRACE
from .config import check_overview_path, check_page_size, check_timeout
from .engine import DEFAULT_MEASURE_TIMEOUT, Engine
from .errors import ConfigurationError, InvalidationError
from .gateway import Gateway
from .plans.shape import Shape
from .plans.shrinking import DEFAULT_MAX_SHRINK, ShrinkGuard, check_max_shrink
from .protocol.render import MAX_BYTES, MAX_URLS
from .providers import ProviderFunc, Section
from .push.dispatch import Dispatcher, Push, Target
from .push.methods import PushMethods
from .refresh import Refreshed, refresh
from .registration import CountFunc, VersionFunc, registered
from .service import Service
from .sources import PagedSource
from .stats import Stats, logger
from .web import tags
from .web.compress import Gzip
from .web.headers import HeaderPolicy
from .web.sites import Hosts, Sites
from .wsgi import SitemapWSGIMiddleware

if TYPE_CHECKING:
    from _typeshed.wsgi import WSGIApplication
    from flask import Flask

__all__ = ["Sitemaps"]

F = TypeVar("F", bound=ProviderFunc)
# Crawlers re-read sitemaps rarely; CDNs may keep one 10 minutes and serve it stale while
# refreshing for an hour more (RFC 5861).
# Generous: measuring a 10M-URL section takes tens of seconds; a hang takes forever.
DEFAULT_PROVIDER_TIMEOUT = 120.0
DEFAULT_CACHE_CONTROL = "public, max-age=600, stale-while-revalidate=3600"


class Sitemaps(PushMethods):
    """The sitemap tree of one site: its origin, its sections and how files are cut.

    Example::

        sitemaps = Sitemaps(base_url="https://shop.example", page_size=10_000)
        sitemaps.provider("pages")(lambda: ["/", "/about"])

    - ``base_url``: the canonical origin (optionally with a path) of the site; relative
      locs are joined to it and every URL we emit starts with it. Never taken from the
      request's Host header.
    - ``page_size``: URLs per file for sections that do not set their own (at most 50,000).
    - ``max_page_bytes``: uncompressed bytes per file (at most 50 MiB, the default).
    - ``strict``: raise `EntryError` on the first bad entry instead of skipping and
      logging it; for tests and CI.
    - ``cache``: where rendered documents are kept: ``True`` for an in-process
      `MemoryStore` (256 MiB, 10 minutes), a `CacheStore` of your own (such as
      ``sitemap_middleware.redis.RedisStore``, one cache for several workers), or ``None``
      to render every request (a CDN-only setup, benchmarks).
    - ``cache_control``: the ``Cache-Control`` of sitemap documents (``None`` omits it).
    - ``robots_tag``: the ``X-Robots-Tag`` of sitemap documents (keeps them out of results; ``None``: none).
    - ``cache_tags``: a header naming the tags CDNs purge by (``"Cache-Tag"``, ``"Surrogate-Key"``; docs).
    - ``hosts``: serve several sites from one app: a `Hosts` (the allow-list, and whether
      to reject other hosts or trust forwarded headers), or just its list of host names
      or mapping of host name to base URL. Any other ``Host`` gets ``base_url``'s site.
      Without ``hosts``, ``Host`` is never read.
    - ``provider_timeout``: seconds a provider may take to produce its next batch (or a
      version or count) before the request gets a 503, or an aborted page once
      streaming. Enforced for async providers everywhere and for sync providers under
      ASGI; under WSGI, for sync providers only with ``sitemaps.wsgi(app,
      helper_threads=...)`` (a request thread cannot be interrupted: rely on your
      server's worker timeout). ``None`` waits forever.
    - ``measure_timeout``: seconds measuring one section's pages (a section without a
      ``count``) may take in all, however steadily its entries arrive: past it, or past
      50,000 files in the section, the index answers 503 (a provider that never
      ends). ``None``: only the file limit.
    - ``overview_path``: serve an HTML overview of the tree at this path (e.g.
      ``"/sitemaps/"``): every section, its files and URLs, each file's newest lastmod
      and cache state. Off by default; ``noindex``, and built from ``base_url``, never
      from the request.
    - ``compressor``: how gzip bodies are made (every cached page is stored gzipped):
      ``"auto"`` (ISA-L when the ``isal`` package is installed, as
      ``sitemap-middleware[fast]`` does, else zlib), ``"isal"`` (raises when it is
      missing) or ``"zlib"`` (the standard library, level 6). ETags never depend on
      it; the gzip bytes do, so run one choice across a deployment (docs/caching.md).
    - ``changes``: a `ChangeLog` (``ChangeLog.sqlite(path)``, ``ChangeLog.redis(url)``) in
      which every page rendered completely is recorded: what was added, changed or removed
      since, read with ``sitemaps.changes.since(when)`` (docs/changes.md).
    - ``max_shrink``: the share of its URLs a section may lose at once (in (0, 1]; ``None``:
      any); past it the last published documents are served until ``accept_shrink`` or it
      grows back (docs/changes.md, "When a section shrinks").
    - ``push``: where the log's changes go, off every request (``[IndexNow(...)]``, a ``Push``;
      `sitemap_middleware.push`, docs/push.md), with ``on_change``.
    - ``clock``: wall clock for ``Last-Modified`` and the change log; inject a fake one in tests.
    - ``app``: a Flask app to serve in front of at once (`init_app`).

    Concurrency belongs to the adapter that has it: ``sitemaps.asgi(app,
    render_threads=4, max_renders=16, send_timeout=10)`` and ``sitemaps.wsgi(app,
    helper_threads=0)``.
    """

    def __init__(
        self,
        *,
        base_url: str,
        page_size: int = MAX_URLS,
        max_page_bytes: int = MAX_BYTES,
        strict: bool = False,
        cache: CacheStore | bool | None = True,
        cache_control: str | None = DEFAULT_CACHE_CONTROL,
        robots_tag: str | None = "noindex",
        cache_tags: str | None = None,
        hosts: Hosts | Sequence[str] | Mapping[str, str] | None = None,
        provider_timeout: float | None = DEFAULT_PROVIDER_TIMEOUT,
        measure_timeout: float | None = DEFAULT_MEASURE_TIMEOUT,
        overview_path: str | None = None,
        compressor: Literal["auto", "isal", "zlib"] = "auto",
        changes: ChangeLog | None = None,
        max_shrink: float | None = DEFAULT_MAX_SHRINK,
        push: Push | Sequence[Target] | None = None,
        clock: Callable[[], float] = time.time,
        app: Flask | None = None,
    ) -> None:
        self.sites = Sites(base_url, hosts)
        self.site = self.sites.default
        self.page_size = check_page_size(page_size)
        if isinstance(max_page_bytes, bool) or not isinstance(max_page_bytes, int):
            raise ConfigurationError(f"max_page_bytes must be an int, not {max_page_bytes!r}")
        if not 1024 <= max_page_bytes <= MAX_BYTES:
            raise ConfigurationError(
                f"max_page_bytes must be from 1,024 to {MAX_BYTES:,}, not {max_page_bytes:,}"
            )
        self.strict = strict
        if provider_timeout is not None:
            provider_timeout = check_timeout("provider_timeout", provider_timeout)
        self.provider_timeout = provider_timeout
        if measure_timeout is not None:
            measure_timeout = check_timeout("measure_timeout", measure_timeout)
        self.stats = Stats()
        if changes is not None and not isinstance(changes, ChangeLog):
            raise ConfigurationError(f"changes must be a ChangeLog, not {type(changes).__name__}")
        self.changes = changes
        self._clock = clock
        self._push, recorder = Dispatcher.wire(changes, push, self.sites.all, self.stats, clock)
        compression = Gzip.named(compressor)
        self.compressor = compression.name  # the one in use: "isal" or "zlib"
        self._sections: dict[str, Section] = {}
        self._shapes: dict[str, Shape] = {}
        if cache is True:
            cache = MemoryStore()
        elif cache is False:
            cache = None
        self.cache: CacheStore | None = cache
        self._policy = policy = HeaderPolicy(cache_control, robots_tag, tags.named(cache_tags))
        # One guard for every site: its records are keyed by site and mount prefix.
        self._shrink = ShrinkGuard(check_max_shrink(max_shrink), cache, self.stats, changes)
        # A follower gives up on a leader whose provider stayed silent past its deadline.
        stall_after = None if provider_timeout is None else provider_timeout + THREAD_GRACE
        # One service per site: each renders with its own base_url; they share the
        # sections, the counters and the cache (whose keys name the site).
        services = {
            site: Service(
                engine=Engine(
                    site,
                    on_skip=self.stats.skip,
                    strict=strict,
                    max_bytes=max_page_bytes,
                    measure_timeout=measure_timeout,
                    on_mismatch=self._count_mismatch,
                    clock=clock,
                    on_count=self.stats.count,
                ),
                sections=self._sections,
                shapes=self._shapes,
                stats=self.stats,
                store=cache,
                policy=policy,
                clock=clock,
                stall_after=stall_after,
                compression=compression,
                recorder=recorder,
                shrink=self._shrink,
            )
            for site in self.sites.all
        }
        # Repeated conditional requests are replayed without routing or a cache lookup;
        # only over a store whose state can be checked per request for free.
        store = replayable(cache)
        replays = None if store is None else Replays(store, self.stats)
        self.gateway = Gateway(
            self.sites,
            services,
            replays,
            provider_timeout=provider_timeout,
            overview_path=check_overview_path(overview_path),
            clock=clock,
            push=self._push,
        )
        self._push.bind(self)  # targets that read the tree (a purge's index cutting)
        if app is not None:
            self.init_app(app)

    @property
    def sections(self) -> tuple[str, ...]:
        """Registered section names, in registration order (the index lists them so)."""
        return tuple(self._sections)

    def provider(
        self,
        name: str,
        *,
        page_size: int | None = None,
        version: VersionFunc | None = None,
        count: CountFunc | None = None,
        extensions: Iterable[str] = (),
        languages: Sequence[str] | Mapping[str, str] | None = None,
        x_default: str | None = None,
        news_window: timedelta | None = None,
    ) -> Callable[[F], F]:
        """Register the decorated callable as the provider of section ``name``.

        - ``name``: lowercase letters, digits and ``_``, single ``-`` between words
          (``blog-posts``), not ``index``; it becomes ``/sitemap-<name>-<n>.xml``.
        - ``page_size``: URLs per file for this section.
        - ``version``: an optional cheap callable (sync or async) whose value changes
          whenever the section does, e.g. ``SELECT MAX(updated_at)``. With it, a
          changed section is re-rendered at once, and conditional requests are
          answered without iterating a single URL.
        - ``count``: an optional cheap callable (sync or async) returning how many
          entries the provider yields (``SELECT COUNT(*)``). Pages become fixed windows
          of ``page_size`` entries, so the index is answered without iterating, and a
          provider taking ``offset`` and ``limit`` is asked for one page's rows only.
        - ``extensions``: which of ``"alternates"``, ``"images"``, ``"videos"``, ``"news"``
          its `Url` entries carry. Their namespaces are declared on this section's pages
          only; an entry using one its section does not declare is skipped (counted as
          ``skipped:undeclared extension``). Pages of a section with news are cut at
          1,000 news entries.
        - ``languages``: the section's languages (``["en", "de"]``, or a mapping of tag to
          path prefix, ``{"en": "", "de": "/de"}``; by default ``/<tag>``). Each entry is
          served once per language, below that language's prefix, each URL carrying the
          whole hreflang group. ``x_default``: the language whose URL is x-default.
        - ``news_window``: how old a news article may be (Google News reads two days:
          ``timedelta(days=2)``). An older one keeps its URL and loses its ``<news:news>``,
          counted as ``news_outside_window``.
        """

        def register(func: F) -> F:
            self.add_provider(
                name,
                func,
                page_size=page_size,
                version=version,
                count=count,
                extensions=extensions,
                languages=languages,
                x_default=x_default,
                news_window=news_window,
            )
            return func

        return register

    def add_provider(
        self,
        name: str,
        func: ProviderFunc | PagedSource,
        *,
        page_size: int | None = None,
        version: VersionFunc | None = None,
        count: CountFunc | None = None,
        extensions: Iterable[str] = (),
        languages: Sequence[str] | Mapping[str, str] | None = None,
        x_default: str | None = None,
        news_window: timedelta | None = None,
    ) -> None:
        """Register ``func`` as the provider of section ``name`` (the non-decorator form).

        ``func`` may also be a `sources.PagedSource` (``keyset(...)`` of
        `sitemap_middleware.django` or `sitemap_middleware.sqlalchemy`): an object that
        knows its own pages, so it takes no ``count``.
        """
        section, shape = registered(
            name,
            func,
            page_size=self.page_size if page_size is None else check_page_size(page_size),
            version=version,
            count=count,
            extensions=extensions,
            languages=languages,
            x_default=x_default,
            news_window=news_window,
        )
        if name in self._sections:
            raise ConfigurationError(f"section {name!r} is already registered")
        tags.check_section(self._policy.cache_tags, name)
        self._sections[name], self._shapes[name] = section, shape

    def recent(self, name: str, *, window: timedelta = DAYS_2, page_size: int | None = None) -> None:
        """Register section ``name``: the URLs added or changed within ``window`` (`changes.recent`)."""
        made = RecentChanges.of(self.changes, name, window, self._clock)
        self.add_provider(name, made.entries, page_size=page_size, version=made.version)
        self._sections[name].recorded = False  # its URLs are changes of the sections they belong to

    def _count_mismatch(self, section: str, detail: str) -> None:
        """A section's declared count did not hold (the engine logged it): counted, and the
        section dropped from the cache, so an index listing a page that 404s goes at once."""
        self.stats.count(section, "count_mismatch")
        if self.cache is not None:
            try:
                self.cache.invalidate(section)
            except InvalidationError as error:
                # Inside a render: its answer stands; the other workers replan at their TTL.
                logger.warning("sitemap section %r: %s", section, error)

    def invalidate(self, section: str | None = None) -> None:
        """Drop ``section`` (or, with no argument, everything) from the cache.

        The next request renders from fresh data and gets a new ETag. Call it from
        your save hooks (a Django ``post_save`` receiver, an SQLAlchemy ``after_commit``).
        With a store that waits on the network (`RedisStore`) it is a round trip: from
        async code, call it in a thread (``await anyio.to_thread.run_sync(sitemaps.invalidate)``).
        Such a store raises `InvalidationError` when it cannot record it (Redis
        unreachable): the other workers have not heard it; make it again later, or let
        the TTL catch up (docs/caching.md, "When your data changes").
        """
        if section is not None and section not in self._sections:
            raise ConfigurationError(f"no section named {section!r}")
        if self.cache is not None:
            self.cache.invalidate(section)

    def accept_shrink(self, section: str) -> None:
        """Publish ``section``'s next plan however much it shrank (``max_shrink``), once, on
        every worker sharing the cache: the section is invalidated, so it is planned afresh."""
        if section not in self._sections:
            raise ConfigurationError(f"no section named {section!r}")
        self._shrink.accept(section)
        self.invalidate(section)

    def refresh(self, section: str | None = None) -> Refreshed:
        """Render every page of ``section`` (or of every section) now, off any request.

        Its cached documents and plan are dropped first, then each page is rendered from
        fresh data, stored, and recorded in the change log (``changes``), as a crawler's
        request would be; a page a crawler is rendering at that moment is rendered once.
        For a periodic job or a management command; blocking (from async code, call it in
        a thread). Raises `ProviderError` at the first page that does not render.
        """
        if section is not None and section not in self._sections:
            raise ConfigurationError(f"no section named {section!r}")
        refreshed = refresh(self, self.sections if section is None else (section,))
        if self.changes is not None:
            self.changes.flush()  # what it rendered is recorded when it returns
        return refreshed

    def init_app(self, app: Flask, *, helper_threads: int = 0) -> None:
        """Serve in front of the Flask ``app``, and add ``flask sitemaps`` (`sitemap_middleware.flask`)."""
        from .flask import init_app

        init_app(self, app, helper_threads=helper_threads)

    def wsgi(self, app: WSGIApplication, *, helper_threads: int = 0) -> SitemapWSGIMiddleware:
        """Wrap a WSGI app; every request that is not ours reaches it untouched.

        ``helper_threads``: see `SitemapWSGIMiddleware`.
        """
        return SitemapWSGIMiddleware(app, sitemaps=self, helper_threads=helper_threads)

    def asgi(
        self,
        app: ASGIApp,
        *,
        render_threads: int = 4,
        max_renders: int = 16,
        send_timeout: float = 10.0,
    ) -> SitemapASGIMiddleware:
        """Wrap an ASGI app; every request that is not ours reaches it untouched.

        ``render_threads``, ``max_renders``, ``send_timeout``: see `SitemapASGIMiddleware`.
        """
        return SitemapASGIMiddleware(
            app,
            sitemaps=self,
            render_threads=render_threads,
            max_renders=max_renders,
            send_timeout=send_timeout,
        )
