"""A section as registered: its name, provider and options checked once, and its shape picked.

`Sitemaps.add_provider` documents the options; this is where each is held to its rule,
so a mistake is a `ConfigurationError` at startup, never a 500 at the first crawl.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import timedelta

from .errors import ConfigurationError
from .plans.counted import Counted
from .plans.keyed import Keyed
from .plans.measured import Measured
from .plans.shape import Shape
from .protocol.extensions import Extensions
from .providers import Call, Provider, ProviderFunc, Section
from .sources import PagedSource
from .web.rules import INDEX_SECTION

__all__ = ["CountFunc", "VersionFunc", "registered"]

VersionFunc = Callable[[], object]
CountFunc = Callable[[], object]
_SECTION_NAME = re.compile(r"[a-z0-9_]+(?:-[a-z0-9_]+)*")


def registered(
    name: str,
    func: ProviderFunc | PagedSource,
    *,
    page_size: int,
    version: VersionFunc | None,
    count: CountFunc | None,
    extensions: Iterable[str],
    languages: Sequence[str] | Mapping[str, str] | None,
    x_default: str | None,
    news_window: timedelta | None,
) -> tuple[Section, Shape]:
    """Section ``name`` of ``func`` (``page_size`` already checked), and its shape."""
    if not isinstance(name, str) or _SECTION_NAME.fullmatch(name) is None:
        raise ConfigurationError(f"invalid section name {name!r}: use [a-z0-9_] words joined by '-'")
    if name == INDEX_SECTION:
        raise ConfigurationError(
            f"section name {name!r} is reserved: /sitemap-{name}-<n>.xml are the index files"
        )
    paged = isinstance(func, PagedSource) and not callable(func)
    if not callable(func) and not paged:
        raise ConfigurationError(
            f"provider for {name!r} must be callable or a paged source, not {type(func).__name__}"
        )
    if paged and count is not None:
        raise ConfigurationError(f"provider for {name!r} is a paged source: it knows its pages, so no count")
    if paged and languages is not None:
        # Its pages are ranges of its own keys; a language expansion would cut them anew.
        raise ConfigurationError(
            f"provider for {name!r} is a paged source: give entries alternates, not languages"
        )
    for what, declared in (("version", version), ("count", count)):
        if declared is not None and not callable(declared):
            raise ConfigurationError(f"{what} for {name!r} must be callable, not {type(declared).__name__}")
    if paged and not extensions:
        # A paged source may say which extensions its entries carry (`sources.PagedSource`).
        extensions = getattr(func, "extensions", ())
    carried = Extensions.declare(
        extensions, languages=languages, x_default=x_default, news_window=news_window
    )
    section = Section(
        name,
        Provider.wrap(name, func),
        page_size,
        None if version is None else Call.of(version),
        None if count is None else Call.of(count),
        carried,
    )
    # Its shape, picked once (`plans`): what plans its pages and finds each one.
    shape: Shape = Keyed() if paged else Measured() if count is None else Counted()
    return section, shape
