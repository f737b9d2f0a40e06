"""The exceptions sitemap-middleware raises, in one place so callers can catch them by name."""

from __future__ import annotations


class SitemapError(Exception):
    """Base class of every error this package raises on purpose."""


class ConfigurationError(SitemapError, ValueError):
    """A `Sitemaps` option or provider registration is invalid.

    Raised at construction or registration time, never at the first request, so a
    misconfigured app fails when it starts rather than when a crawler arrives.
    """


class EntryError(SitemapError, ValueError):
    """One provider entry breaks a protocol rule.

    Normally caught, logged and counted (the entry is skipped); with
    ``Sitemaps(strict=True)`` it propagates, so tests and CI fail loudly.
    """

    def __init__(self, reason: str, detail: str = "") -> None:
        self.reason = reason
        self.detail = detail
        super().__init__(f"{reason}: {detail}" if detail else reason)


class ProviderError(SitemapError, RuntimeError):
    """A provider raised or returned something that is not a source of entries."""

    @classmethod
    def stalled(cls, timeout: float | None) -> ProviderError:
        """A provider that produced nothing within the deadline while its page streamed."""
        return cls(f"the provider produced nothing for {timeout} s: page aborted")
