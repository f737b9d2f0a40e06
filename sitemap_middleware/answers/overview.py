"""One site's HTML overview: its index files and every section's pages, with their state.

Built from the same stored plans as the index (`plan`), and never stored itself, since
it shows the cache's state; with a change log, each section's last refresh (the end of
its last pass) and its changes of the last day. The markup is `web.overview`'s::

    page = OverviewPage(root, sections, resources, store, plan=service.plan)
    page.answer(request, run_async)          # a Reply: text/html, Cache-Control: no-store
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime

from werkzeug.http import http_date

from ..caching.resources import Resources
from ..caching.stores import CacheStore
from ..changes.log import ChangeLog
from ..engine import index_files
from ..errors import ProviderError
from ..plans import PagePlan
from ..providers import AsyncRunner, Section
from ..web import rules
from ..web.overview import Logged, Overview, PageRow, SectionRow, render_overview
from ..web.replies import Reply, Request

__all__ = ["OverviewPage"]

_DAY = 86_400.0  # "changes in the last day", in seconds

# Pages of each section whose cache state the overview shows (each costs a store lookup).
_CACHE_CHECKS = 1000

Plan = Callable[[Section, str, AsyncRunner], PagePlan]


class OverviewPage:
    """The overview of the site at ``root``; ``plan(section, prefix, run_async)`` is the index's."""

    def __init__(
        self,
        root: str,
        sections: Mapping[str, Section],
        resources: Resources,
        store: CacheStore | None,
        *,
        plan: Plan,
        clock: Callable[[], float] = time.time,
        changes: ChangeLog | None = None,
    ) -> None:
        self._root = root
        self._sections = sections
        self._resources = resources
        self._store = store
        self._plan = plan
        self._clock = clock
        self._changes = changes

    def answer(self, request: Request, run_async: AsyncRunner) -> Reply:
        plans: list[tuple[Section, PagePlan]] = []
        rows: list[SectionRow] = []
        for section in self._sections.values():
            logged = self._logged(section, request.prefix)
            try:
                plan = self._plan(section, request.prefix, run_async)
            except ProviderError as error:
                rows.append(SectionRow(section.name, [], f"cannot be planned: {error}", logged))
                continue
            plans.append((section, plan))
            rows.append(
                SectionRow(section.name, self._pages(section, plan, request, run_async), None, logged)
            )
        root = self._root + request.prefix
        index_urls = [f"{root}{rules.index_path(n)}" for n in range(1, index_files(plans) + 1)]
        generated = http_date(int(self._clock()))
        body = render_overview(Overview(root, index_urls, rows, generated))
        headers = [
            ("Content-Type", rules.HTML_TYPE),
            ("Content-Length", str(len(body))),
            ("Cache-Control", "no-store"),  # it shows the cache's state, which changes
            ("X-Robots-Tag", "noindex"),
        ]
        return Reply(200, headers, b"" if request.method == "HEAD" else body)

    def _logged(self, section: Section, prefix: str) -> Logged | None:
        """When the log last saw the section's pass end, and its changes of the last day."""
        if self._changes is None or not section.recorded:
            return None
        scope = self._root + prefix
        state = self._changes.state(scope, section.name)
        completed = None if state is None else state.completed
        refreshed = None if completed is None else datetime.fromtimestamp(completed, UTC).isoformat()
        return Logged(refreshed, self._changes.counts(self._clock() - _DAY, scope, section.name))

    def _pages(
        self, section: Section, plan: PagePlan, request: Request, run_async: AsyncRunner
    ) -> list[PageRow]:
        root = f"{self._root}{request.prefix}/sitemap-{section.name}-"
        rows = []
        for number in range(1, plan.pages + 1):
            cached = None
            if number <= _CACHE_CHECKS and self._store is not None:
                # A declared version is asked once per page here: checked for a few pages only.
                route = rules.Route("page", section.name, number)
                resource = self._resources.resource(route, request.prefix, run_async)
                cached = self._store.get(resource.key) is not None
            rows.append(
                PageRow(number, f"{root}{number}.xml", plan.lastmod(number), plan.url_count(number), cached)
            )
        return rows
