"""One site's HTML overview: its index files and every section's pages, with their state.

Built from the same stored plans as the index (`plan`), and never stored itself, since
it shows the cache's state; the markup is `web.overview`'s::

    page = OverviewPage(root, sections, resources, store, plan=service.plan)
    page.answer(request, run_async)          # a Reply: text/html, Cache-Control: no-store
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from werkzeug.http import http_date

from ..caching.resources import Resources
from ..caching.stores import CacheStore
from ..engine import index_files
from ..errors import ProviderError
from ..plans import PagePlan
from ..providers import AsyncRunner, Section
from ..web import rules
from ..web.overview import Overview, PageRow, SectionRow, render_overview
from ..web.replies import Reply, Request

__all__ = ["OverviewPage"]

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
    ) -> None:
        self._root = root
        self._sections = sections
        self._resources = resources
        self._store = store
        self._plan = plan
        self._clock = clock

    def answer(self, request: Request, run_async: AsyncRunner) -> Reply:
        plans: list[tuple[Section, PagePlan]] = []
        rows: list[SectionRow] = []
        for section in self._sections.values():
            try:
                plan = self._plan(section, request.prefix, run_async)
            except ProviderError as error:
                rows.append(SectionRow(section.name, [], error=f"cannot be planned: {error}"))
                continue
            plans.append((section, plan))
            rows.append(SectionRow(section.name, self._pages(section, plan, request, run_async)))
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
