"""Checks for option values, shared by `Sitemaps` and the adapters: misconfiguration raises
`ConfigurationError` at construction, never at the first request."""

from __future__ import annotations

from .errors import ConfigurationError
from .protocol.render import MAX_URLS
from .web import rules

__all__ = ["check_count", "check_overview_path", "check_page_size", "check_timeout"]


def check_count(name: str, value: object) -> int:
    """An int of at least 1 (threads, slots)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigurationError(f"{name} must be an int >= 1, not {value!r}")
    return value


def check_timeout(name: str, value: object) -> float:
    """A positive number of seconds."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ConfigurationError(f"{name} must be a positive number of seconds, not {value!r}")
    return float(value)


def check_page_size(page_size: object) -> int:
    """URLs per file: an int from 1 to 50,000 (sitemaps.org's limit)."""
    if isinstance(page_size, bool) or not isinstance(page_size, int) or not 1 <= page_size <= MAX_URLS:
        raise ConfigurationError(f"page_size must be an int from 1 to {MAX_URLS:,}, not {page_size!r}")
    return page_size


def check_overview_path(path: object) -> str | None:
    """A path of our own for the HTML overview, or ``None`` (off)."""
    if path is None:
        return None
    if not isinstance(path, str) or not path.startswith("/") or any(c in path for c in "?#\x00 "):
        raise ConfigurationError(f"overview_path must be a path such as '/sitemaps/', not {path!r}")
    if rules.match_route(path, ()) is not None or path == rules.ROBOTS_PATH:
        raise ConfigurationError(f"overview_path {path!r} is one of our sitemap paths")
    return path
