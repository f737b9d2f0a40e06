"""The settings Django's faces read: ``SITEMAPS``, the dotted path to a `Sitemaps`, and
``SITEMAPS_CONCURRENCY``, the options of the adapter the middleware builds::

    # settings.py
    SITEMAPS = "myproject.sitemaps.sitemaps"
    SITEMAPS_CONCURRENCY = {"helper_threads": 2}  # optional: as sitemaps.wsgi(...) / .asgi(...) take

Read once, by the middleware when Django builds its chain and by ``manage.py sitemaps``;
what it names is imported then (after ``django.setup()``: models may be imported there).
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.utils.module_loading import import_string

from ..asgi import SitemapASGIMiddleware
from ..errors import ConfigurationError
from ..sitemaps import Sitemaps
from ..wsgi import SitemapWSGIMiddleware

__all__ = ["concurrency", "configured_sitemaps"]


def _options(adapter: type) -> frozenset[str]:
    """An adapter's own options: its keyword-only parameters but ``sitemaps``."""
    parameters = inspect.signature(adapter).parameters.values()
    return frozenset(p.name for p in parameters if p.kind is p.KEYWORD_ONLY and p.name != "sitemaps")


# Read off the adapters, so a new option of theirs is a setting at once.
SYNC_OPTIONS = _options(SitemapWSGIMiddleware)
ASYNC_OPTIONS = _options(SitemapASGIMiddleware)


def configured_sitemaps() -> Sitemaps:
    """The `Sitemaps` that ``settings.SITEMAPS`` names; `ConfigurationError` if it names none."""
    path = getattr(settings, "SITEMAPS", None)
    if isinstance(path, Sitemaps):
        return path
    if not isinstance(path, str) or "." not in path:
        raise ConfigurationError(
            "settings.SITEMAPS must be the dotted path to a Sitemaps "
            f'("myproject.sitemaps.sitemaps"), not {path!r}'
        )
    try:
        found = import_string(path)
    except ImportError as error:
        raise ConfigurationError(f"settings.SITEMAPS = {path!r}: {error}") from error
    if not isinstance(found, Sitemaps):
        raise ConfigurationError(f"settings.SITEMAPS = {path!r} is a {type(found).__name__}, not a Sitemaps")
    return found


def concurrency(*, asynchronous: bool) -> dict[str, Any]:
    """The options of ``settings.SITEMAPS_CONCURRENCY`` that a sync (or async) stack's adapter
    takes; `ConfigurationError` for one that neither takes (their values are the adapter's
    to check). A project may run under both: the other stack's options are left to it."""
    given = getattr(settings, "SITEMAPS_CONCURRENCY", None)
    if given is None:
        return {}
    if not isinstance(given, Mapping):
        raise ConfigurationError(f"settings.SITEMAPS_CONCURRENCY must be a dict, not {given!r}")
    unknown = set(given) - SYNC_OPTIONS - ASYNC_OPTIONS
    if unknown:
        raise ConfigurationError(
            f"settings.SITEMAPS_CONCURRENCY: unknown options {sorted(map(str, unknown))}, "
            f"use {sorted(SYNC_OPTIONS)} (sync stacks) and {sorted(ASYNC_OPTIONS)} (async ones)"
        )
    taken = ASYNC_OPTIONS if asynchronous else SYNC_OPTIONS
    return {name: value for name, value in given.items() if name in taken}
