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

import re
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, TypeVar

from .cache import CacheStore, MemoryStore
from .engine import Engine
from .errors import ConfigurationError
from .headers import HeaderPolicy
from .providers import Call, Provider, ProviderFunc, Section
from .render import MAX_BYTES, MAX_URLS
from .replays import Replays
from .service import Service
from .sites import Sites
from .stats import Stats

if TYPE_CHECKING:
    from .asgi import ASGIApp, SitemapASGIMiddleware
    from .wsgi import SitemapWSGIMiddleware, WSGIApplication

__all__ = ["Sitemaps"]

F = TypeVar("F", bound=ProviderFunc)
VersionFunc = Callable[[], object]
CountFunc = Callable[[], object]
# Crawlers re-read sitemaps rarely; CDNs may keep one 10 minutes and serve it stale while
# refreshing for an hour more (RFC 5861).
# Generous: measuring a 10M-URL section takes tens of seconds; a hang takes forever.
DEFAULT_PROVIDER_TIMEOUT = 120.0
DEFAULT_CACHE_CONTROL = "public, max-age=600, stale-while-revalidate=3600"
_SECTION_NAME = re.compile(r"[a-z0-9_]+(?:-[a-z0-9_]+)*")


class Sitemaps:
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
      `MemoryStore` (256 MiB, 10 minutes), a `CacheStore` of your own, or ``None`` to
      render every request (a CDN-only setup, benchmarks).
    - ``cache_control``: the ``Cache-Control`` of sitemap documents (``None`` omits it).
    - ``robots_tag``: the ``X-Robots-Tag`` of sitemap documents, so the XML files
      themselves stay out of search results (``None`` omits it).
    - ``hosts``: serve several sites from one app: a list of host names (same scheme and
      path as ``base_url``) or a mapping of host name to base URL. Only listed hosts
      are ever used; any other ``Host`` gets ``base_url``'s site, or a 400 with
      ``reject_unknown_hosts=True``. Without ``hosts``, ``Host`` is never read.
    - ``trust_forwarded``: pick the site from ``Forwarded``/``X-Forwarded-Host`` (only
      behind a proxy you run, which overwrites them).
    - ``provider_timeout``: seconds a provider may take to produce its next batch (or a
      version or count) before the request gets a 503, or an aborted page once
      streaming. Enforced for async providers everywhere and for sync providers under
      ASGI; under WSGI, for sync providers only with ``wsgi_helper_threads`` (without
      it, a request thread cannot be interrupted: rely on your server's worker
      timeout). ``None`` waits forever.
    - ``render_threads``: under ASGI, how many worker threads may render (or run sync
      providers) at once per event loop. Rendering holds the GIL, so more threads
      only slow the app's own requests; raise it for providers that mostly wait on I/O.
      Under WSGI with ``wsgi_helper_threads``, the number of helper threads.
    - ``max_renders``: under ASGI, how many cold documents may be in the middle of
      rendering at once per event loop (a streamed page holds its slot until its client
      has read it). Each holds about 1 MB, so this bounds memory beyond the cache under
      any load; a request that finds no free slot within ``provider_timeout`` gets a
      503 with ``Retry-After``. Under WSGI the server's threads bound it already.
    - ``wsgi_helper_threads``: under WSGI, render cold documents in ``render_threads``
      helper threads instead of the request thread, so that ``provider_timeout`` cuts
      a hung sync provider as well (a 503, or an aborted page). The catch, and why it
      is off by default: your provider then runs outside the request thread, as under
      ASGI. Django gives each helper its own database connection, kept open, and a
      test's uncommitted transaction (or an in-memory SQLite database) is invisible there.
    - ``clock``: wall clock for ``Last-Modified``; inject a fake one in tests.
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
        hosts: Sequence[str] | Mapping[str, str] | None = None,
        reject_unknown_hosts: bool = False,
        trust_forwarded: bool = False,
        provider_timeout: float | None = DEFAULT_PROVIDER_TIMEOUT,
        render_threads: int = 4,
        max_renders: int = 16,
        wsgi_helper_threads: bool = False,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.sites = Sites(
            base_url, hosts, reject_unknown=reject_unknown_hosts, trust_forwarded=trust_forwarded
        )
        self.site = self.sites.default
        self.page_size = _check_page_size(page_size)
        if isinstance(max_page_bytes, bool) or not isinstance(max_page_bytes, int):
            raise ConfigurationError(f"max_page_bytes must be an int, not {max_page_bytes!r}")
        if not 1024 <= max_page_bytes <= MAX_BYTES:
            raise ConfigurationError(
                f"max_page_bytes must be from 1,024 to {MAX_BYTES:,}, not {max_page_bytes:,}"
            )
        self.strict = strict
        if provider_timeout is not None and not (
            isinstance(provider_timeout, int | float)
            and not isinstance(provider_timeout, bool)
            and provider_timeout > 0
        ):
            raise ConfigurationError(
                f"provider_timeout must be a positive number or None, not {provider_timeout!r}"
            )
        self.provider_timeout = provider_timeout
        self.render_threads = _at_least_one("render_threads", render_threads)
        self.max_renders = _at_least_one("max_renders", max_renders)
        self.wsgi_helper_threads = bool(wsgi_helper_threads)
        self.stats = Stats()
        self._sections: dict[str, Section] = {}
        if cache is True:
            cache = MemoryStore()
        elif cache is False:
            cache = None
        self.cache: CacheStore | None = cache
        policy = HeaderPolicy(cache_control=cache_control, robots_tag=robots_tag)
        # One service per site: each renders with its own base_url; they share the
        # sections, the counters and the cache (whose keys name the site).
        self._services = {
            site: Service(
                engine=Engine(site, on_skip=self.stats.skip, strict=strict, max_bytes=max_page_bytes),
                sections=self._sections,
                stats=self.stats,
                store=cache,
                policy=policy,
                clock=clock,
            )
            for site in self.sites.all
        }
        self.service = self._services[self.site]
        # Repeated conditional requests are replayed without routing or a cache lookup;
        # only over a store whose state can be checked per request for free.
        self.replays = Replays(cache, self.stats) if isinstance(cache, MemoryStore) else None

    def service_for(self, headers: Mapping[str, str]) -> Service | None:
        """The service of the site a request is for (``None``: an unknown host, rejected)."""
        site = self.sites.pick(headers)
        return None if site is None else self._services[site]

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
    ) -> Callable[[F], F]:
        """Register the decorated callable as the provider of section ``name``.

        - ``name``: lowercase letters, digits and ``_``, single ``-`` between words
          (``blog-posts``); it becomes ``/sitemap-<name>-<n>.xml``.
        - ``page_size``: URLs per file for this section.
        - ``version``: an optional cheap callable (sync or async) whose value changes
          whenever the section does, e.g. ``SELECT MAX(updated_at)``. With it, a
          changed section is re-rendered at once, and conditional requests are
          answered without iterating a single URL.
        - ``count``: an optional cheap callable (sync or async) returning how many
          entries the provider yields (``SELECT COUNT(*)``). Pages become fixed windows
          of ``page_size`` entries, so the index is answered without iterating, and a
          provider taking ``offset`` and ``limit`` is asked for one page's rows only.
        """

        def register(func: F) -> F:
            self.add_provider(name, func, page_size=page_size, version=version, count=count)
            return func

        return register

    def add_provider(
        self,
        name: str,
        func: ProviderFunc,
        *,
        page_size: int | None = None,
        version: VersionFunc | None = None,
        count: CountFunc | None = None,
    ) -> None:
        """Register ``func`` as the provider of section ``name`` (the non-decorator form)."""
        if not isinstance(name, str) or _SECTION_NAME.fullmatch(name) is None:
            raise ConfigurationError(f"invalid section name {name!r}: use [a-z0-9_] words joined by '-'")
        if name in self._sections:
            raise ConfigurationError(f"section {name!r} is already registered")
        if not callable(func):
            raise ConfigurationError(f"provider for {name!r} must be callable, not {type(func).__name__}")
        for what, declared in (("version", version), ("count", count)):
            if declared is not None and not callable(declared):
                raise ConfigurationError(
                    f"{what} for {name!r} must be callable, not {type(declared).__name__}"
                )
        size = self.page_size if page_size is None else _check_page_size(page_size)
        self._sections[name] = Section(
            name,
            Provider.wrap(name, func),
            size,
            None if version is None else Call.of(version),
            None if count is None else Call.of(count),
        )

    def invalidate(self, section: str | None = None) -> None:
        """Drop ``section`` (or, with no argument, everything) from the cache.

        The next request renders from fresh data and gets a new ETag. Call it from
        your save hooks (a Django ``post_save`` receiver, an SQLAlchemy ``after_commit``).
        """
        if section is not None and section not in self._sections:
            raise ConfigurationError(f"no section named {section!r}")
        if self.cache is not None:
            self.cache.invalidate(section)

    def wsgi(self, app: WSGIApplication) -> SitemapWSGIMiddleware:
        """Wrap a WSGI app; every request that is not ours reaches it untouched."""
        from .wsgi import SitemapWSGIMiddleware

        return SitemapWSGIMiddleware(app, sitemaps=self)

    def asgi(self, app: ASGIApp) -> SitemapASGIMiddleware:
        """Wrap an ASGI app; every request that is not ours reaches it untouched."""
        from .asgi import SitemapASGIMiddleware

        return SitemapASGIMiddleware(app, sitemaps=self)


def _at_least_one(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigurationError(f"{name} must be an int >= 1, not {value!r}")
    return value


def _check_page_size(page_size: object) -> int:
    if isinstance(page_size, bool) or not isinstance(page_size, int) or not 1 <= page_size <= MAX_URLS:
        raise ConfigurationError(f"page_size must be an int from 1 to {MAX_URLS:,}, not {page_size!r}")
    return page_size
