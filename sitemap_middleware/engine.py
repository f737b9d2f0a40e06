"""What every shape of section shares: a page's writer and stream, the provider's batches, the index.

How a section is planned and which page starts where is its shape's (`plans`: measured,
counted or keyed); the engine writes the pages they locate, within the protocol's limits,
and the index of every plan::

    engine = Engine(site, on_skip=stats.skip)
    writer = engine.writer(section, prefix="")
    chunks = engine.stream(writer, engine.pull(section, 0, run_async))  # None: no valid entry
    body = engine.index([(section, plan)], prefix="")           # index file 1
    body = engine.index([(section, plan)], prefix="", number=2)  # past 50,000 pages

Synchronous by design: it runs on the WSGI server's thread, or in a worker thread
under ASGI, so neither a slow provider nor CPU-bound rendering blocks an event loop.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Generator, Iterable, Iterator

from .concurrency.deadlines import beat
from .errors import EntryError, ProviderError
from .plans import PagePlan
from .protocol.entries import Normaliser
from .protocol.hreflang import Localised
from .protocol.lastmods import FUTURE, Plausible
from .protocol.render import (
    MAX_BYTES,
    MAX_NEWS,
    MAX_SITEMAPS,
    IndexEntry,
    Limits,
    PageWriter,
    render_index,
)
from .protocol.uris import Site
from .protocol.xmltext import escape
from .providers import AsyncRunner, Batches, Section
from .sources import Key
from .stats import logger

__all__ = ["DEFAULT_MEASURE_TIMEOUT", "Engine", "MismatchListener", "SkipListener", "index_files", "where"]

SkipListener = Callable[[str, EntryError, object], None]
MismatchListener = Callable[[str, str], None]  # (section name, what did not hold)
CountListener = Callable[[str, str], None]  # (section name, counter): an event that is no error

# Measuring 10M URLs takes tens of seconds; a provider that never ends takes forever.
DEFAULT_MEASURE_TIMEOUT = 300.0


class Engine:
    """Renders pages and indexes for one site; holds no per-request state.

    ``clock`` (wall time) places a section's news window; ``on_count`` hears of news left
    outside it (``news_outside_window``), from page renders only, like skips.
    """

    def __init__(
        self,
        site: Site,
        *,
        on_skip: SkipListener,
        strict: bool = False,
        max_bytes: int = MAX_BYTES,
        measure_timeout: float | None = DEFAULT_MEASURE_TIMEOUT,
        timer: Callable[[], float] = time.monotonic,
        on_mismatch: MismatchListener | None = None,
        clock: Callable[[], float] = time.time,
        on_count: CountListener | None = None,
    ) -> None:
        self.site = site
        self._clock = clock
        self._on_count = on_count
        self._lastmod_logged: set[tuple[str, str]] = set()  # (section, reason): sections are few
        self._normalisers: dict[str, Normaliser] = {}
        self._on_skip = on_skip
        self._on_mismatch = on_mismatch
        self._strict = strict
        self._max_bytes = max_bytes
        # A measured plan's bounds (`plans.measured`): its deadline, and the timer it is read by.
        self.measure_timeout = measure_timeout
        self.timer = timer

    def _normaliser(self, prefix: str) -> Normaliser:
        normaliser = self._normalisers.get(prefix)
        if normaliser is None:
            normaliser = Normaliser(self.site, prefix)
            if len(self._normalisers) < 64:  # mount points are few; never grow without bound
                self._normalisers[prefix] = normaliser
        return normaliser

    def writer(
        self, section: Section, prefix: str, *, quiet: bool = False, max_urls: int | None = None
    ) -> PageWriter:
        """A page's writer: at most ``max_urls`` URLs (the section's ``page_size`` unless said)."""
        urls = section.page_size if max_urls is None else max_urls

        def skip(error: EntryError, raw: object) -> None:
            if self._strict:
                raise error
            if type(raw) is Localised:
                if raw.language:
                    return  # an entry is refused whole, in every language: reported once
                raw = raw.entry
            if not quiet:
                self._on_skip(section.name, error, raw)

        def unbelievable(reason: str, lastmod: str, raw: object) -> None:
            if not quiet or self._strict:  # measuring counts nothing, but strict refuses there too
                self.lastmod_fault(section.name, reason, lastmod)

        now = self._clock()
        plausible = Plausible.at(now)  # one clock reading per page
        declared = section.extensions
        if not declared.names:
            return PageWriter(
                self._normaliser(prefix),
                limits=Limits(max_urls=urls, max_bytes=self._max_bytes),
                on_skip=skip,
                plausible=plausible,
                on_lastmod=unbelievable,
            )

        def outside_window() -> None:
            if not quiet and self._on_count is not None:
                self._on_count(section.name, "news_outside_window")

        # A section with extensions gets a normaliser per page: it holds the page's news
        # window and the entry its languages are expanding.
        normaliser = Normaliser(
            self.site, prefix, extensions=declared, now=now, on_outside_window=outside_window
        )
        max_news = MAX_NEWS if "news" in declared.names else None
        return PageWriter(
            normaliser,
            limits=Limits(max_urls=urls, max_bytes=self._max_bytes, max_news=max_news),
            on_skip=skip,
            head=declared.head,
            plausible=plausible,
            on_lastmod=unbelievable,
        )

    def plausible(self) -> Plausible:
        """The lastmods believable now, by this engine's clock."""
        return Plausible.at(self._clock())

    def lastmod_fault(self, section: str, reason: str, lastmod: str) -> None:
        """A lastmod not published (`protocol.lastmods`): counted, logged once per section and
        reason in this process (never once per URL); with ``strict``, an `EntryError`."""
        if self._strict:
            raise EntryError(reason.replace("_", " "), lastmod)
        self.count(section, reason)
        key = (section, reason)
        if key in self._lastmod_logged:
            return
        self._lastmod_logged.add(key)
        why = "later than the clock allows" if reason == FUTURE else "earlier than the web (1991)"
        logger.warning(
            "sitemap section %r: lastmod %s is %s: its URLs are published without it "
            "(counted as %s; logged once per section)",
            section,
            lastmod,
            why,
            reason,
            extra={"sitemap_section": section, "sitemap_reason": reason},
        )

    def pull(
        self,
        section: Section,
        start: Key | None,
        run_async: AsyncRunner,
        limit: int | None = None,
        *,
        end: Key | None = None,
    ) -> Batches:
        """The section's batches from ``start`` (at most ``limit`` entries, up to key ``end``),
        with anything its provider raises turned into a `ProviderError`."""
        return _pull(section, start, run_async, limit, base_url=self.site.root, end=end)

    def stream(
        self, writer: PageWriter, batches: Batches, *, on_full: Callable[[], None] | None = None
    ) -> Iterator[bytes] | None:
        """The page ``writer`` writes from ``batches``, as a stream; ``None`` if it is empty.

        ``on_full()`` is called if the writer fills up before the batches end. The first
        chunk is produced before returning, so a missing page is known before any header
        is sent, and a provider that fails at once fails here.
        """
        stream = _write_page(writer, batches, on_full=on_full)
        try:
            first = next(stream, None)
        except BaseException:
            stream.close()
            raise
        if first is None:
            return None
        return _prepend(first, stream)

    def mismatch(self, section: str, problem: str) -> None:
        """A plan that did not hold (its shape logged why): heard by ``on_mismatch``."""
        if self._on_mismatch is not None:
            self._on_mismatch(section, problem)

    def count(self, section: str, counter: str) -> None:
        """An event that is no error (``empty_pages``), heard by ``on_count``."""
        if self._on_count is not None:
            self._on_count(section, counter)

    def skipped(self, section: str, error: EntryError, raw: object) -> None:
        """A value left out of a plan (a keyed page's bad lastmod), heard by ``on_skip``."""
        self._on_skip(section, error, raw)

    def overflow(self, section: Section, start: Key | None, writer: PageWriter) -> None:
        """A page of a fixed number of raw entries (a counted window, a keyed page) held more
        bytes than a file may: its tail cannot be served; logged and counted as a skip."""
        error = EntryError(
            "page over max_page_bytes",
            f"entries past the first {writer.consumed:,} of the page from {where(start)} "
            f"do not fit in a page of "
            f"{self._max_bytes:,} bytes; lower page_size for section {section.name!r}",
        )
        if self._strict:
            raise error
        logger.error("sitemap section %r: %s", section.name, error)
        self._on_skip(section.name, error, None)

    def index(self, plans: Iterable[tuple[Section, PagePlan]], prefix: str, number: int = 1) -> bytes | None:
        """Index file ``number`` (from 1) of the pages of every planned section, in order.

        Google does not follow an index that lists another index, so past `MAX_SITEMAPS`
        pages the index is split: file ``number`` lists the pages at positions
        ``(number - 1) * MAX_SITEMAPS`` up to the next multiple, counting every section's
        pages in order (`index_files` says how many files there are). Only those pages
        are read from the plans (`PagePlan.lastmod`), so file 400 of a counted section of
        20,000,000 pages costs what 50,000 entries cost.

        ``None`` when it lists nothing: past the last file, or no section has a URL
        (siteindex.xsd requires at least one child).
        """
        if number < 1:
            return None
        first = (number - 1) * MAX_SITEMAPS
        entries = _index_entries(plans, escape(self.site.root + prefix), first, first + MAX_SITEMAPS)
        head = next(entries, None)
        return None if head is None else render_index(itertools.chain((head,), entries))


def index_files(plans: Iterable[tuple[Section, PagePlan]]) -> int:
    """How many index files list every page of ``plans`` (`Engine.index`); 0 when there is none."""
    pages = sum(plan.pages for _, plan in plans)
    return -(-pages // MAX_SITEMAPS)


def _index_entries(
    plans: Iterable[tuple[Section, PagePlan]], root: str, first: int, end: int
) -> Iterator[IndexEntry]:
    """The index entries of the pages at positions ``first`` to ``end`` (excluded) of all sections."""
    offset = 0  # position of the section's first page among every section's pages
    for section, plan in plans:
        pages = plan.pages
        for position in range(max(first, offset), min(end, offset + pages)):
            page = position - offset + 1
            yield IndexEntry(f"{root}/sitemap-{section.name}-{page}.xml", plan.lastmod(page))
        offset += pages
        if offset >= end:
            return


def where(start: Key | None) -> str:
    """Where a page starts, for messages: a raw position, or a key."""
    if start is None:
        return "the first key"  # a ranged page 1, read from below its planned first key
    return f"raw position {start:,}" if isinstance(start, int) else f"key {start!r}"


def _pull(
    section: Section,
    start: Key | None,
    run_async: AsyncRunner,
    limit: int | None = None,
    *,
    base_url: str,
    end: Key | None = None,
) -> Batches:
    """The provider's batches, with anything it raises turned into a `ProviderError`."""
    batches = section.batches(start, run_async, limit, base_url=base_url, end=end)
    try:
        while True:
            try:
                batch = next(batches)
            except StopIteration:
                return
            except ProviderError:
                raise
            except Exception as exc:
                raise ProviderError(f"provider {section.name!r} raised {exc!r}") from exc
            beat()  # progress: a deadline counts from here (deadlines.py)
            yield batch
    finally:
        batches.close()


def _write_page(
    writer: PageWriter, batches: Batches, *, on_full: Callable[[], None] | None = None
) -> Generator[bytes, None, None]:
    """Head, entries and tail; yields nothing at all when no entry is valid."""
    pending = writer.head()
    try:
        for batch in batches:
            chunk = writer.feed(batch)
            if chunk:
                yield pending + chunk if pending else chunk
                pending = b""
            if writer.full:
                if on_full is not None:
                    on_full()
                break
    finally:
        batches.close()
    if writer.count:
        yield writer.tail()


def _prepend(first: bytes, stream: Generator[bytes, None, None]) -> Iterator[bytes]:
    try:
        yield first
        yield from stream
    finally:
        stream.close()
