"""The interface every shape of section offers: what its plan depends on, its plan, its page.

The service keeps plans (stored, under single-flight) and asks a section's shape for the
rest, never which shape it is::

    planner = shape.planner(engine, section, resources, run_async, prefix="", stored=True)
    key = f"plan|...|{generation}|{planner.basis}"   # the plan is stored under this
    plan = planner.make(run_async, None)             # the whole plan (``until``: up to a page)
    chunks = shape.page(engine, section, 2, plan_until, run_async, prefix="")
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Protocol

from ..caching.resources import Resources
from ..engine import Engine
from ..providers import AsyncRunner, Section
from . import PagePlan

__all__ = ["PlanUntil", "Planner", "Shape", "versioned"]

# The section's plan, located at least up to page ``until`` (the service's, stored or not).
PlanUntil = Callable[[int], PagePlan]


@dataclass(frozen=True, slots=True)
class Planner:
    """One plan to make: what it depends on, and how it is made.

    ``basis`` is the part of the plan's store key past the site, the section and its
    generation (its declared count, or its version's token); ``make(run_async, until)``
    plans the section (``until``: a measured plan may stop once that page is located).
    """

    basis: str
    make: Callable[[AsyncRunner, int | None], PagePlan]


class Shape(Protocol):
    """One way of planning a section and finding one of its pages (measured, counted, keyed)."""

    @property
    def word(self) -> str:
        """The shape's one name: ``"measured"``, ``"counted"`` or ``"keyed"``."""
        ...

    @property
    def by_position(self) -> bool:
        """Whether its pages are cut by position, so that rows deleted before a URL move it
        back onto the page before (measured, counted); a keyed page is a range of its key."""
        ...

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
        """What the section's plan depends on, asked of its callables now, and how it is made.

        ``stored``: whether the plan will be stored (a basis is only needed then).
        """
        ...

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
        """Page ``number`` as a stream, or ``None`` if there is none (a 404).

        The first chunk is produced before returning, so a missing page is known before any
        header is sent, and a provider that fails at once fails here.
        """
        ...


def versioned(section: Section, resources: Resources, run_async: AsyncRunner, stored: bool) -> str:
    """A plan's basis when it depends on the section's declared version (none declared: ``"None"``)."""
    if not stored:
        return ""
    version = resources.version(section, run_async)
    return str(version and version.token)
