"""The counted shape: a section that declares a ``count``, its pages fixed windows of raw entries.

What the index promises with a count: ``ceil(count / page_size)`` files, each a window of
``page_size`` raw entries, none of them a 404 and no entry left out. Whether the count is
trusted is decided here, per site, by four rules:

- where the provider takes ``offset``/``limit`` (``windowed``), the count is checked at
  its edges before its windows are listed (`Counted.plan`);
- where it can only be iterated, it is trusted, and its last page checks it as it is
  served: it reads one entry past the count (`Counted.page`);
- a middle window found empty when its page is served distrusts the count;
- a distrusted count stays so until the count changes: its section is measured meanwhile.

Every mismatch is logged and reported (``count_mismatch``), and the section is measured
(`measured.Measured`), so the index stays exact while the count is fixed::

    shape = Counted()
    plan = shape.plan(engine, section, count=1_000_000, run_async=run_async)
    plan.window    # page_size: trusted; None: measured instead
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import closing
from functools import partial

from ..caching.resources import Resources
from ..engine import Engine, where
from ..providers import AsyncRunner, Batches, Section
from ..sources import Key
from ..stats import logger
from . import PagePlan
from .measured import Measured, measured_page
from .shape import Planner, PlanUntil

__all__ = ["Counted"]

_MEASURED = Measured()


class Counted:
    """Plans a section from its declared count; its plan depends on that count.

    Holds, per site, the count the section last declared and a count under which a page
    render found a window empty or entries past it (not trusted again until it changes):
    one entry per site each.
    """

    word = "counted"
    by_position = True

    def __init__(self) -> None:
        self._declared: dict[str, int] = {}
        self._distrusted: dict[str, int] = {}

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
        count = resources.count(section, run_async)

        def make(run_async: AsyncRunner, until: int | None) -> PagePlan:
            return self.plan(engine, section, count, run_async, prefix=prefix, until=until)

        return Planner(f"count:{count}", make)

    def plan(
        self,
        engine: Engine,
        section: Section,
        count: int,
        run_async: AsyncRunner,
        *,
        prefix: str = "",
        until: int | None = None,
    ) -> PagePlan:
        """The plan of a section that declares ``count``: windows if the count holds, else measured.

        Checked cheaply at the edges before the windows are trusted, where a provider can
        be asked for a window (``offset``/``limit``): nothing lies at raw position
        ``count`` (``offset=count, limit=1``) and the last window holds a valid entry (read
        up to the first one). A provider that can only be iterated is trusted: checking
        would read it whole, which is what declaring a count avoids (benchmarks/HISTORY.md,
        "Found while re-measuring, and fixed"). When either fails, or a page render has
        found a middle window empty or entries past this same count (`page`), the mismatch
        is logged and reported to the engine's ``on_mismatch``, and the section is measured
        (the exact plan, as for a section without a count, up to ``until``).
        """
        count *= section.extensions.urls_per_entry  # pages count URLs: entries times languages
        site = engine.site.root
        self._declared[site] = count
        windows = PagePlan.counted(count, section.page_size)
        if self._distrusted.get(site) == count:
            return _MEASURED.plan(engine, section, run_async, prefix=prefix, until=until)
        if not section.provider.windowed:
            return windows
        problem = self._check(engine, section, windows, run_async, prefix)
        if problem is None:
            return windows
        _mismatch(engine, section, problem)
        return _MEASURED.plan(engine, section, run_async, prefix=prefix, until=until)

    def _check(
        self, engine: Engine, section: Section, windows: PagePlan, run_async: AsyncRunner, prefix: str
    ) -> str | None:
        """What does not hold about a declared count at its edges, or ``None``."""
        count = windows.count
        assert count is not None
        with closing(engine.pull(section, count, run_async, 1)) as past:
            if next(past, None) is not None:
                return _past_count_text(count)
        if windows.pages == 0:
            return None
        last = windows.start(windows.pages)
        assert isinstance(last, int)  # counted windows start at raw positions
        writer = engine.writer(section, prefix, quiet=True)
        taken = 0
        with closing(engine.pull(section, last, run_async, count - last)) as window:
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
        """The window of page ``number``, exactly ``window`` raw entries; a measured page
        when the count was not trusted. A window found empty is a 404 and distrusts the count."""
        located = plan(number)
        if located.pages < number:
            return None
        start = located.start(number)
        assert isinstance(start, int)  # counted and measured pages start at raw positions
        window = located.window
        if window is None:
            return measured_page(engine, section, start, run_async, prefix)
        writer = engine.writer(section, prefix)
        batches: Batches
        if self._trusted_last_window(engine, section, start, window):
            # A trusted count's last page reads one entry past it: more would be left out.
            pulled = engine.pull(section, start, run_async, window + 1)
            batches = _up_to(pulled, window, partial(self._past_count, engine, section))
        else:
            batches = engine.pull(section, start, run_async, window)
        # In a fixed window the count cannot overflow, so a full writer means bytes did.
        on_full: Callable[[], None] = partial(engine.overflow, section, start, writer)
        stream = engine.stream(writer, batches, on_full=on_full)
        if stream is None:
            self._empty_window(engine, section, start, window)
        return stream

    def _trusted_last_window(self, engine: Engine, section: Section, start: int, window: int) -> bool:
        """Whether this is the last window of a count `plan` trusted unchecked."""
        count = self._declared.get(engine.site.root)
        return count is not None and not section.provider.windowed and start + window >= count

    def _past_count(self, engine: Engine, section: Section) -> None:
        """Entries past a trusted count, found by its last page: measured from now on."""
        count = self._declared.get(engine.site.root)
        if count is not None:
            self._distrusted[engine.site.root] = count
            _mismatch(engine, section, _past_count_text(count))

    def _empty_window(self, engine: Engine, section: Section, start: int, window: int) -> None:
        """A listed window with no valid entry: its section is measured from now on, under this count.

        `plan` checks only the edges (checking every window is measuring), so a middle
        window is found empty here, when its page is asked for. Its page is a 404 (there
        is no URL in it to lose); the mismatch is reported, and every plan after it
        measures the section until its count changes, so no index lists that file again.
        """
        count = self._declared.get(engine.site.root)
        if count is not None:
            self._distrusted[engine.site.root] = count
        _mismatch(engine, section, f"{_window_text(start, window)} holds no valid entry")


def _mismatch(engine: Engine, section: Section, problem: str) -> None:
    logger.warning(
        "sitemap section %r: %s; measuring its pages instead: fix its count", section.name, problem
    )
    engine.mismatch(section.name, problem)


def _past_count_text(count: int) -> str:
    return f"count() is {count:,} but the provider has entries past it, which would be left out"


def _window_text(start: Key, size: int) -> str:
    return f"the window of {size:,} raw entries from {where(start)}"


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
