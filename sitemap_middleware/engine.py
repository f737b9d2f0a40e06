"""Sections to documents: where each page starts, a page's XML stream, and the index.

Pages are cut over *valid* entries, by count and by bytes, so page n starts wherever
page n-1 filled up. Finding that start means measuring the pages before it (the
`plan`); page 1 needs no plan at all, and the index needs the whole plan::

    engine = Engine(site, on_skip=stats.skip)
    plan = engine.plan(section, run_async)
    chunks = engine.page(section, plan.start(2), run_async)    # page 2, streamed
    body = engine.index([(section, plan)], prefix="")           # index file 1
    body = engine.index([(section, plan)], prefix="", number=2)  # past 50,000 pages

Synchronous by design: it runs on the WSGI server's thread, or in a worker thread
under ASGI, so neither a slow provider nor CPU-bound rendering blocks an event loop.
"""

from __future__ import annotations

import itertools
import json
import math
import time
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from contextlib import closing
from dataclasses import dataclass
from functools import partial

from .concurrency.deadlines import beat
from .errors import EntryError, MeasureLimitError, ProviderError
from .protocol.entries import Normaliser, w3c_datetime
from .protocol.hreflang import Localised
from .protocol.render import (
    MAX_BYTES,
    MAX_NEWS,
    MAX_SITEMAPS,
    MAX_URLS,
    IndexEntry,
    Limits,
    PageWriter,
    render_index,
)
from .protocol.uris import Site
from .protocol.xmltext import escape
from .providers import AsyncRunner, Batches, Section, resolve
from .sources import Key
from .stats import logger

__all__ = ["DEFAULT_MEASURE_TIMEOUT", "Engine", "MismatchListener", "PagePlan", "SkipListener", "index_files"]

SkipListener = Callable[[str, EntryError, object], None]
MismatchListener = Callable[[str, str], None]  # (section name, what did not hold)
CountListener = Callable[[str, str], None]  # (section name, counter): an event that is no error

# Measuring 10M URLs takes tens of seconds; a provider that never ends takes forever.
DEFAULT_MEASURE_TIMEOUT = 300.0


@dataclass(frozen=True, slots=True)
class PagePlan:
    """Where each page of one section starts (raw position), and its newest lastmod.

    Two shapes behind one interface (`pages`, `start`, `lastmod`, `window`):

    - measured (`Engine.plan`): every start and lastmod, found by iterating; at most
      `MAX_SITEMAPS` pages, since measuring stops there;
    - counted (`uniform`): ``count`` raw entries cut into fixed windows, so a page's start
      is arithmetic. Nothing is stored per page: locating page 20,000,000 of a
      trillion-entry section costs what locating page 1 does.
    """

    # A tuple when measured (raw positions) or paged (first keys), a range when counted:
    # O(1) to index either way.
    starts: Sequence[Key]
    lastmods: tuple[str | None, ...]  # one per measured page; empty when counted (none was measured)
    window: int | None = None  # raw entries per page, when pages are fixed windows
    count: int | None = None  # raw entries in all, when pages are fixed windows
    urls: tuple[int | None, ...] = ()  # URLs on each page, where known (measured, or told by a source)

    @classmethod
    def uniform(cls, count: int, page_size: int) -> PagePlan:
        """Fixed windows of ``page_size`` raw entries, from a declared count: no iteration.

        Entries skipped as invalid make their page shorter rather than shifting the
        pages after it; the index carries no lastmod, since none was measured.
        """
        return cls(range(0, count, page_size), (), window=page_size, count=count)

    @property
    def pages(self) -> int:
        return len(self.starts)

    def start(self, number: int) -> Key:
        """Where page ``number`` (1-based, at most `pages`) starts: a raw position, or a key."""
        return self.starts[self._index(number)]

    def lastmod(self, number: int) -> str | None:
        """The newest lastmod on page ``number``; ``None`` when none was measured."""
        index = self._index(number)
        return self.lastmods[index] if self.lastmods else None

    def url_count(self, number: int) -> int | None:
        """URLs on page ``number``: measured, told, or at most its window (counted)."""
        index = self._index(number)
        if index < len(self.urls):
            return self.urls[index]
        if self.count is not None and self.window is not None:
            return min(self.window, self.count - index * self.window)
        return None

    def _index(self, number: int) -> int:
        if not 1 <= number <= self.pages:
            raise IndexError(f"no page {number} in a plan of {self.pages:,}")
        return number - 1

    def to_bytes(self) -> bytes:
        """A compact serialisation, so a plan can live in any `CacheStore` (a counted one in ~40 bytes)."""
        if self.count is not None:
            return json.dumps({"count": self.count, "window": self.window}).encode()
        return json.dumps([list(self.starts), self.lastmods, self.window, self.urls]).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> PagePlan:
        loaded = json.loads(data)
        if isinstance(loaded, dict):
            return cls.uniform(loaded["count"], loaded["window"])
        starts, lastmods, window, urls = loaded
        return cls(tuple(starts), tuple(lastmods), window, urls=tuple(urls))


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
        self._normalisers: dict[str, Normaliser] = {}
        self._on_skip = on_skip
        self._on_mismatch = on_mismatch
        # Per section: the count it last declared, and a count under which a page render
        # found a window empty (not trusted again until it changes). One entry per section.
        self._declared: dict[str, int] = {}
        self._distrusted: dict[str, int] = {}
        self._strict = strict
        self._max_bytes = max_bytes
        self._measure_timeout = measure_timeout
        self._timer = timer

    def _normaliser(self, prefix: str) -> Normaliser:
        normaliser = self._normalisers.get(prefix)
        if normaliser is None:
            normaliser = Normaliser(self.site, prefix)
            if len(self._normalisers) < 64:  # mount points are few; never grow without bound
                self._normalisers[prefix] = normaliser
        return normaliser

    def _writer(
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

        declared = section.extensions
        if not declared.names:
            return PageWriter(
                self._normaliser(prefix),
                limits=Limits(max_urls=urls, max_bytes=self._max_bytes),
                on_skip=skip,
            )

        def outside_window() -> None:
            if not quiet and self._on_count is not None:
                self._on_count(section.name, "news_outside_window")

        # A section with extensions gets a normaliser per page: it holds the page's news
        # window and the entry its languages are expanding.
        normaliser = Normaliser(
            self.site, prefix, extensions=declared, now=self._clock(), on_outside_window=outside_window
        )
        max_news = MAX_NEWS if "news" in declared.names else None
        return PageWriter(
            normaliser,
            limits=Limits(max_urls=urls, max_bytes=self._max_bytes, max_news=max_news),
            on_skip=skip,
            head=declared.head,
        )

    def plan(
        self, section: Section, run_async: AsyncRunner, *, prefix: str = "", until: int | None = None
    ) -> PagePlan:
        """Measure the section's pages; with ``until``, stop once page ``until`` is located.

        Skips are not reported here (the page render reports them), so planning and
        serving the same page never count one bad entry twice. Measuring has bounds of
        its own, so a provider that never ends cannot hold a thread (and memory) forever:
        a `MeasureLimitError` once the section needs more files than an index can list,
        or once ``measure_timeout`` has passed, however steadily entries still arrive.
        """
        starts: list[int] = []  # the three lists stay under MAX_SITEMAPS + 1 entries
        lastmods: list[str | None] = []
        urls: list[int | None] = []
        writer = self._writer(section, prefix, quiet=True)
        position = 0
        begun = self._timer()
        deadline = math.inf if self._measure_timeout is None else begun + self._measure_timeout
        # Closed on every way out, the early return included: cursors are released at once.
        with closing(_pull(section, 0, run_async, base_url=self.site.root)) as batches:
            for batch in batches:
                if self._timer() > deadline:
                    raise MeasureLimitError.timed_out(section.name, deadline - begun, len(lastmods))
                while batch:
                    if writer.count == 0 and writer.consumed == 0:
                        starts.append(position)
                        if until is not None and until <= len(starts) <= MAX_SITEMAPS:
                            return PagePlan(tuple(starts), tuple(lastmods))
                    before = writer.consumed
                    writer.feed(batch)
                    if writer.count and len(starts) > MAX_SITEMAPS:
                        # Google: at most 50,000 sitemaps per index. Only a page with a URL
                        # counts: trailing invalid entries make no file.
                        raise MeasureLimitError.too_many_files(section.name, MAX_SITEMAPS, section.page_size)
                    taken = writer.consumed - before
                    position += taken
                    if not writer.full:
                        break
                    lastmods.append(writer.lastmod)
                    urls.append(writer.count)
                    batch = batch[taken:]
                    writer = self._writer(section, prefix, quiet=True)
        if writer.count == 0 and starts and len(starts) > len(lastmods):
            starts.pop()  # the last page held only skipped entries
        elif len(starts) > len(lastmods):
            lastmods.append(writer.lastmod)
            urls.append(writer.count)
        return PagePlan(tuple(starts), tuple(lastmods), urls=tuple(urls))

    def keyed_plan(self, section: Section, run_async: AsyncRunner) -> PagePlan:
        """The plan a paged source gives: its pages' first keys and lastmods, one query, no iterating.

        Keys must be ints, strings or floats (a plan is stored as JSON); lastmods are
        written by the one W3C Datetime rule, and a bad one is left out (and counted) rather
        than failing the index.
        """
        source = section.provider.source
        assert source is not None
        try:
            listed = resolve(source.pages(section.page_size), run_async)
            starts: list[Key] = []
            lastmods: list[str | None] = []
            urls: list[int | None] = []
            for first, *rest in listed:  # type: ignore[attr-defined]
                if isinstance(first, bool) or not isinstance(first, int | str | float):
                    raise TypeError(f"page key {first!r} is not an int, str or float")
                starts.append(first)
                lastmods.append(self._lastmod(section, rest[0] if rest else None))
                told = rest[1] if len(rest) > 1 else None
                urls.append(told if isinstance(told, int) and not isinstance(told, bool) else None)
                beat()
        except ProviderError:
            raise
        except Exception as exc:
            raise ProviderError(f"pages() of section {section.name!r} raised {exc!r}") from exc
        known = tuple(urls) if any(count is not None for count in urls) else ()
        return PagePlan(tuple(starts), tuple(lastmods), window=section.page_size, urls=known)

    def _lastmod(self, section: Section, value: object) -> str | None:
        if value is None:
            return None
        try:
            return w3c_datetime(value)
        except EntryError as error:
            self._on_skip(section.name, error, value)
            return None

    def counted_plan(
        self,
        section: Section,
        count: int,
        run_async: AsyncRunner,
        *,
        prefix: str = "",
        until: int | None = None,
    ) -> PagePlan:
        """The plan of a section that declares ``count``: windows if the count holds, else measured.

        What the index promises with a count: ``ceil(count / page_size)`` files, each a
        window of ``page_size`` raw entries, none of them a 404 and no entry left out.
        Checked cheaply at the edges before the windows are trusted, where a provider can
        be asked for a window (``offset``/``limit``): nothing lies at raw position
        ``count`` (``offset=count, limit=1``) and the last window holds a valid entry (read
        up to the first one). A provider that can only be iterated is trusted: checking
        would read it whole, which is what declaring a count avoids (the index benchmark's
        10M-URL section pulled 19,950,001 entries per index when it was checked). When either fails,
        or a page render has found a middle window empty under this same count (`page`),
        the mismatch is logged and reported to ``on_mismatch``, and the section is
        measured (the exact plan, as for a section without a count, up to ``until``).
        """
        count *= section.extensions.urls_per_entry  # pages count URLs: entries times languages
        self._declared[section.name] = count
        windows = PagePlan.uniform(count, section.page_size)
        if self._distrusted.get(section.name) == count:
            return self.plan(section, run_async, prefix=prefix, until=until)
        if not section.provider.windowed:
            return windows
        problem = self._check_count(section, windows, run_async, prefix)
        if problem is None:
            return windows
        self._mismatch(section, problem)
        return self.plan(section, run_async, prefix=prefix, until=until)

    def _check_count(
        self, section: Section, windows: PagePlan, run_async: AsyncRunner, prefix: str
    ) -> str | None:
        """What does not hold about a declared count at its edges, or ``None``."""
        count = windows.count
        assert count is not None
        with closing(_pull(section, count, run_async, 1, base_url=self.site.root)) as past:
            if next(past, None) is not None:
                return _past_count_text(count)
        if windows.pages == 0:
            return None
        last = windows.start(windows.pages)
        assert isinstance(last, int)  # counted windows start at raw positions
        writer = self._writer(section, prefix, quiet=True)
        taken = 0
        with closing(_pull(section, last, run_async, count - last, base_url=self.site.root)) as window:
            for batch in window:
                taken += len(batch)
                writer.feed(batch)
                if writer.count:
                    return None
        if taken == 0:
            return (
                f"count() is {count:,} but the provider has nothing from raw position {last:,} on: "
                f"file {windows.pages:,} (at least) would be a 404"
            )
        return f"{_window_text(last, count - last)} holds no valid entry: its file would be a 404"

    def _mismatch(self, section: Section, problem: str) -> None:
        logger.warning(
            "sitemap section %r: %s; measuring its pages instead: fix its count", section.name, problem
        )
        if self._on_mismatch is not None:
            self._on_mismatch(section.name, problem)

    def page(
        self,
        section: Section,
        start: Key | None,
        run_async: AsyncRunner,
        *,
        prefix: str = "",
        window: int | None = None,
        end: Key | None = None,
    ) -> Iterator[bytes] | None:
        """The page that starts at raw position ``start``, as a stream; ``None`` if it is empty.

        With ``window``, the page is exactly that many raw entries (a counted section).
        A paged section's page whose source reads key ranges (`Provider.ranged`) is instead
        every entry from key ``start`` (``None``: from below its first key, page 1) to the
        next page's first key, ``end`` (``None``: the last page), within one file's limits
        (`_outgrown`). The first chunk is produced before returning, so a missing page is
        known before any header is sent, and a provider that fails at once fails here.
        """
        ranged = window is not None and section.paged and section.provider.ranged
        # A key range may have grown past page_size since its plan: it is held to the
        # protocol's limits instead (sitemaps.org: 50,000 URLs and max_page_bytes per file).
        writer = self._writer(section, prefix, max_urls=MAX_URLS if ranged else None)
        if ranged:
            assert window is not None
            # One entry past what a file holds, so a range that outgrew it is known.
            limit = MAX_URLS + 1
            batches = _pull(section, start, run_async, limit, base_url=self.site.root, end=end)
            on_full: Callable[[], None] | None = partial(self._outgrown, section, start, window, writer)
        else:
            assert start is not None  # only a ranged page may start below its first key
            if window is not None and self._trusted_last_window(section, start, window):
                # A trusted count's last page reads one entry past it: more would be left out.
                pulled = _pull(section, start, run_async, window + 1, base_url=self.site.root)
                batches = _up_to(pulled, window, partial(self._past_count, section))
            else:
                batches = _pull(section, start, run_async, window, base_url=self.site.root)
            # In a fixed window the count cannot overflow, so a full writer means bytes did.
            on_full = None if window is None else partial(self._overflow, section, start, writer)
        stream = _write_page(writer, batches, on_full=on_full)
        try:
            first = next(stream, None)
        except BaseException:
            stream.close()
            raise
        if first is None:
            if section.paged:
                self._empty_range(section, start)
            elif window is not None and start is not None:
                self._empty_window(section, start, window)
            return None
        return _prepend(first, stream)

    def _trusted_last_window(self, section: Section, start: Key, window: int) -> bool:
        """Whether this is the last window of a count `counted_plan` trusted unchecked."""
        count = self._declared.get(section.name)
        return (
            count is not None
            and not section.provider.windowed
            and isinstance(start, int)
            and start + window >= count
        )

    def _past_count(self, section: Section) -> None:
        """Entries past a trusted count, found by its last page: measured from now on."""
        count = self._declared.get(section.name)
        if count is not None:
            self._distrusted[section.name] = count
            self._mismatch(section, _past_count_text(count))

    def _empty_range(self, section: Section, start: Key | None) -> None:
        """A paged source's page found with no valid entry: a 404, logged and counted; the plan stands.

        Rows deleted since the plan never make a keyed plan wrong: every row left still lies
        in exactly one planned range, so the other pages are right as they are, and a page
        found empty has no URL to lose (sitemap.xsd: a ``<urlset>`` holds one ``<url>`` at
        least). Planning again now would move the ranges under a crawl that began from the
        old index: its later pages would be the new plan's, and rows between the two plans'
        starts on no page it fetches. The plan is made again by its usual triggers (the
        TTL, ``invalidate()``, a declared version, a range that outgrew a file).
        """
        logger.warning(
            "sitemap section %r: the page from %s lists no URL now (its rows deleted since the plan?): "
            "a 404; the other pages keep their ranges",
            section.name,
            _from_key(start),
        )
        if self._on_count is not None:
            self._on_count(section.name, "empty_pages")

    def _empty_window(self, section: Section, start: Key, window: int) -> None:
        """A listed window with no valid entry: its section is measured from now on, under this count.

        `counted_plan` checks only the edges (checking every window is measuring), so a
        middle window is found empty here, when its page is asked for. Its page is a 404
        (there is no URL in it to lose); the mismatch is reported, and every plan after it
        measures the section until its count changes, so no index lists that file again.
        """
        count = self._declared.get(section.name)
        if count is not None:
            self._distrusted[section.name] = count
        self._mismatch(section, f"{_window_text(start, window)} holds no valid entry")

    def _outgrown(self, section: Section, start: Key | None, window: int, writer: PageWriter) -> None:
        """A key range that holds more than one file: served up to the file's limits, its
        section planned again at the next request.

        Rows inserted inside a planned range are read with it, so page n grows rather than
        push its last rows out of sight, onto no page, until the next plan. Up to a file's
        limits (50,000 URLs, ``max_page_bytes``) the page simply holds them all, and the plan
        stands: replanning after each insert would read the whole key index every time. A
        range that outgrew a file cannot be served whole: its plan is what must go, and the
        next request plans pages that fit. A planned page of ``window`` rows that does not
        fit a file by itself is no growth: that is ``page_size`` set too high for the bytes
        (`_overflow`).
        """
        if writer.consumed < window:
            self._overflow(section, start, writer)
            return
        problem = (
            f"the page from {_from_key(start)} holds more than one file (rows added since the plan?): "
            f"its first {writer.count:,} URLs are served"
        )
        logger.warning("sitemap section %r: %s; planning its pages again", section.name, problem)
        if self._on_mismatch is not None:
            self._on_mismatch(section.name, problem)

    def _overflow(self, section: Section, start: Key | None, writer: PageWriter) -> None:
        """A fixed window held more bytes than a file may: its tail cannot be served."""
        error = EntryError(
            "page over max_page_bytes",
            f"entries past the first {writer.consumed:,} of the page from {_where(start)} "
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


def _past_count_text(count: int) -> str:
    return f"count() is {count:,} but the provider has entries past it, which would be left out"


def _window_text(start: Key, size: int) -> str:
    return f"the window of {size:,} raw entries from {_where(start)}"


def _where(start: Key | None) -> str:
    if start is None:
        return "the first key"  # a ranged page 1, read from below its planned first key
    return f"raw position {start:,}" if isinstance(start, int) else f"key {start!r}"


def _from_key(start: Key | None) -> str:
    """Where a paged source's page starts: a key, whatever its type."""
    return "the first key" if start is None else f"key {start!r}"


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


def _up_to(batches: Batches, limit: int, on_more: Callable[[], None]) -> Batches:
    """The first ``limit`` entries of ``batches``; ``on_more()`` if any entry follows them."""
    left = limit
    for batch in batches:
        if len(batch) > left:
            if left:
                yield batch[:left]
            on_more()
            return
        left -= len(batch)
        yield batch


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
