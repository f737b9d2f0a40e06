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


class InvalidationError(SitemapError, RuntimeError):
    """An ``invalidate()`` the shared store could not record: the other workers have not heard it.

    Raised by a store several workers share (`RedisStore`) when its server cannot be
    reached: nothing is kept to be sent later, since the process holding it may die
    first. The caller decides what a refused invalidation needs: make it again once the
    store answers (a retry, an outbox), or let the documents' TTL catch up. Until one
    reaches the store (or that TTL runs out), the process that was refused answers the
    sections concerned without the store, so it never serves what it meant to drop; the
    others serve what the store holds.
    """


class MeasureLimitError(ProviderError):
    """Measuring a section's pages passed one of its own bounds: too many files, or too long.

    A section without a ``count`` is iterated to find where its pages start. These bounds
    stop a provider that never ends (a bug in a generator) instead of iterating it forever;
    the request gets a 503 with ``Retry-After``, like any provider failure.
    """

    @classmethod
    def too_many_files(cls, section: str, limit: int, page_size: int) -> MeasureLimitError:
        return cls(
            f"section {section!r} needs more than {limit:,} files of {page_size:,} URLs, more than one "
            "sitemap index can list: raise its page_size, or make sure its provider ends"
        )

    @classmethod
    def timed_out(cls, section: str, timeout: float, files: int) -> MeasureLimitError:
        return cls(
            f"measuring section {section!r} took longer than measure_timeout={timeout:g} s "
            f"({files:,} files found so far): declare a count (its pages become windows that need "
            "no measuring), raise measure_timeout, or make sure its provider ends"
        )


class ChangeLogError(SitemapError, RuntimeError):
    """The change log could not record or read: its backend failed, or a lock was never had.

    Raised by a log several workers share (``ChangeLog.redis``) when its server cannot be
    reached or fails (chained from the client's error, after its socket timeout at most),
    when another worker held a section's lock past ``wait_timeout``, or when this worker
    held it past ``lock_timeout``. Nothing was written by the record that raised: the
    caller counts it and goes on; the page is compared again the next time it is recorded.
    """
