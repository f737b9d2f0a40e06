"""Checks for option values, shared by `Sitemaps` and the adapters: misconfiguration raises
`ConfigurationError` at construction, never at the first request."""

from __future__ import annotations

from .errors import ConfigurationError

__all__ = ["check_count", "check_timeout"]


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
