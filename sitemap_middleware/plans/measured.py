"""The measured shape: a section without a count, its pages cut over its valid entries.

Pages are cut by count and by bytes, so page n starts wherever page n-1 filled up.
Finding that start means measuring the pages before it (the plan); page 1 needs no plan
at all, and the index needs the whole plan::

    shape = Measured()
    plan = shape.plan(engine, section, run_async, until=3)   # stops once page 3 is located
    chunks = shape.page(engine, section, 2, plan_until, run_async, prefix="")
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import closing

from ..caching.resources import Resources
from ..engine import Engine
from ..errors import MeasureLimitError
from ..protocol.render import MAX_SITEMAPS
from ..providers import AsyncRunner, Section
from . import PagePlan
from .shape import Planner, PlanUntil, versioned

__all__ = ["Measured", "measured_page"]


class Measured:
    """Plans a section by iterating its provider once; its plan depends on its declared version."""

    word = "measured"
    by_position = True

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
            return self.plan(engine, section, run_async, prefix=prefix, until=until)

        return Planner(versioned(section, resources, run_async, stored), make)

    def plan(
        self,
        engine: Engine,
        section: Section,
        run_async: AsyncRunner,
        *,
        prefix: str = "",
        until: int | None = None,
    ) -> PagePlan:
        """Measure the section's pages; with ``until``, stop once page ``until`` is located.

        Skips are not reported here (the page render reports them), so planning and
        serving the same page never count one bad entry twice. Measuring has bounds of
        its own, so a provider that never ends cannot hold a thread (and memory) forever:
        a `MeasureLimitError` once the section needs more files than an index can list,
        or once the engine's ``measure_timeout`` has passed, however steadily entries
        still arrive.
        """
        starts: list[int] = []  # the three lists stay under MAX_SITEMAPS + 1 entries
        lastmods: list[str | None] = []
        urls: list[int | None] = []
        writer = engine.writer(section, prefix, quiet=True)
        position = 0
        begun = engine.timer()
        deadline = math.inf if engine.measure_timeout is None else begun + engine.measure_timeout
        # Closed on every way out, the early return included: cursors are released at once.
        with closing(engine.pull(section, 0, run_async)) as batches:
            for batch in batches:
                if engine.timer() > deadline:
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
                    writer = engine.writer(section, prefix, quiet=True)
        if writer.count == 0 and starts and len(starts) > len(lastmods):
            starts.pop()  # the last page held only skipped entries
        elif len(starts) > len(lastmods):
            lastmods.append(writer.lastmod)
            urls.append(writer.count)
        return PagePlan(tuple(starts), tuple(lastmods), urls=tuple(urls))

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
        if number == 1:
            # Page 1 starts at 0: no plan needed.
            return measured_page(engine, section, 0, run_async, prefix)
        located = plan(number)
        if located.pages < number:
            return None
        start = located.start(number)
        assert isinstance(start, int)  # measured pages start at raw positions
        return measured_page(engine, section, start, run_async, prefix)


def measured_page(
    engine: Engine, section: Section, start: int, run_async: AsyncRunner, prefix: str
) -> Iterator[bytes] | None:
    """The page of valid entries from raw position ``start`` until the page is full (a
    measured plan's page, a counted section's too once its count is not trusted)."""
    return engine.stream(engine.writer(section, prefix), engine.pull(section, start, run_async))
