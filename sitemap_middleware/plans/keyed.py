"""The keyed shape: a paged source (`sources.PagedSource`) that knows its own pages.

Its plan is what ``pages(page_size)`` lists (each page's first key, newest lastmod and
size: one query, no iterating); page n is the entries from its first key on, read with
``entries(first, limit)``. A source whose ``entries`` takes ``end`` (`Provider.ranged`)
reads whole key ranges instead: page n is every entry from its key up to page n+1's,
and page 1 is read from below its first key::

    shape = Keyed()
    plan = shape.plan(engine, section, run_async)   # source.pages(section.page_size)
    chunks = shape.page(engine, section, 2, plan_until, run_async, prefix="")
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial

from ..caching.resources import Resources
from ..concurrency.deadlines import beat
from ..engine import Engine
from ..errors import EntryError, ProviderError
from ..protocol.entries import w3c_datetime
from ..protocol.lastmods import Plausible
from ..protocol.render import MAX_URLS, PageWriter
from ..providers import AsyncRunner, Section, resolve
from ..sources import Key
from ..stats import logger
from . import PagePlan
from .shape import Planner, PlanUntil, versioned

__all__ = ["Keyed"]


class Keyed:
    """Plans a section from its paged source's listing; its plan depends on its declared version."""

    word = "keyed"
    by_position = False

    def planner(
        self,
        engine: Engine,
        section: Section,
        resources: Resources,
        run_async: AsyncRunner,
        *,
        prefix: str,
        stored: bool,
    ) -> Planner:
        def make(run_async: AsyncRunner, until: int | None) -> PagePlan:
            return self.plan(engine, section, run_async)  # one query lists every page: no ``until``

        return Planner(versioned(section, resources, run_async, stored), make)

    def plan(self, engine: Engine, section: Section, run_async: AsyncRunner) -> PagePlan:
        """The plan a paged source gives: its pages' first keys and lastmods, one query, no iterating.

        Keys must be ints, strings or floats (a plan is stored as JSON); lastmods are
        written by the one W3C Datetime rule, and a bad one is left out (and counted) rather
        than failing the index.
        """
        source = section.provider.source
        assert source is not None
        plausible = engine.plausible()
        try:
            listed = resolve(source.pages(section.page_size), run_async)
            starts: list[Key] = []
            lastmods: list[str | None] = []
            urls: list[int | None] = []
            for first, *rest in listed:  # type: ignore[attr-defined]
                if isinstance(first, bool) or not isinstance(first, int | str | float):
                    raise TypeError(f"page key {first!r} is not an int, str or float")
                starts.append(first)
                lastmods.append(_lastmod(engine, section, rest[0] if rest else None, plausible))
                told = rest[1] if len(rest) > 1 else None
                urls.append(told if isinstance(told, int) and not isinstance(told, bool) else None)
                beat()
        except ProviderError:
            raise
        except Exception as exc:
            raise ProviderError(f"pages() of section {section.name!r} raised {exc!r}") from exc
        known = tuple(urls) if any(count is not None for count in urls) else ()
        return PagePlan(tuple(starts), tuple(lastmods), window=section.page_size, urls=known)

    def page(
        self,
        engine: Engine,
        section: Section,
        number: int,
        plan: PlanUntil,
        run_async: AsyncRunner,
        *,
        prefix: str,
    ) -> Iterator[bytes] | None:
        """Page ``number``: the entries from its first key on, or its whole key range.

        A ranged page reads up to the next page's first key (``None``: the last page, read
        to the end), as page 1 reads from below its own: a row inserted before the first
        planned key, or after the last, shows at once. A range may have grown past
        ``page_size`` since its plan: it is held to the protocol's limits instead
        (sitemaps.org: 50,000 URLs and ``max_page_bytes`` per file; `_outgrown`). A page
        found empty is a 404 and leaves the plan as it is (`_empty_range`).
        """
        located = plan(number)
        if located.pages < number:
            return None
        start: Key | None = located.start(number)
        window = located.window
        assert window is not None  # a keyed plan records the page size it was cut for
        on_full: Callable[[], None]
        if section.provider.ranged:
            end = located.start(number + 1) if number < located.pages else None
            if number == 1:
                start = None
            writer = engine.writer(section, prefix, max_urls=MAX_URLS)
            # One entry past what a file holds, so a range that outgrew it is known.
            batches = engine.pull(section, start, run_async, MAX_URLS + 1, end=end)
            on_full = partial(_outgrown, engine, section, start, window, writer)
        else:
            writer = engine.writer(section, prefix)
            batches = engine.pull(section, start, run_async, window)
            on_full = partial(engine.overflow, section, start, writer)
        stream = engine.stream(writer, batches, on_full=on_full)
        if stream is None:
            _empty_range(engine, section, start)
        return stream


def _lastmod(engine: Engine, section: Section, value: object, plausible: Plausible) -> str | None:
    """A page's newest lastmod as its plan tells it, if it can be believed (`protocol.lastmods`):
    a newest in the future says nothing true of the page's other rows, so the index gives
    that page no lastmod rather than a false one."""
    if value is None:
        return None
    try:
        text = w3c_datetime(value)
    except EntryError as error:
        engine.skipped(section.name, error, value)
        return None
    fault = plausible.fault(text)
    if fault is not None:
        engine.lastmod_fault(section.name, fault, text)
        return None
    return text


def _empty_range(engine: Engine, section: Section, start: Key | None) -> None:
    """A keyed page found with no valid entry: a 404, logged and counted; the plan stands.

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
    engine.count(section.name, "empty_pages")


def _outgrown(engine: Engine, section: Section, start: Key | None, window: int, writer: PageWriter) -> None:
    """A key range that holds more than one file: served up to the file's limits, its
    section planned again at the next request.

    Rows inserted inside a planned range are read with it, so page n grows rather than
    push its last rows out of sight, onto no page, until the next plan. Up to a file's
    limits (50,000 URLs, ``max_page_bytes``) the page simply holds them all, and the plan
    stands: replanning after each insert would read the whole key index every time. A
    range that outgrew a file cannot be served whole: its plan is what must go, and the
    next request plans pages that fit. A planned page of ``window`` rows that does not
    fit a file by itself is no growth: that is ``page_size`` set too high for the bytes
    (`Engine.overflow`).
    """
    if writer.consumed < window:
        engine.overflow(section, start, writer)
        return
    problem = (
        f"the page from {_from_key(start)} holds more than one file (rows added since the plan?): "
        f"its first {writer.count:,} URLs are served"
    )
    logger.warning("sitemap section %r: %s; planning its pages again", section.name, problem)
    engine.mismatch(section.name, problem)


def _from_key(start: Key | None) -> str:
    """Where a keyed page starts: a key, whatever its type."""
    return "the first key" if start is None else f"key {start!r}"
