"""The recent-changes section: every URL added or changed within a window, made from the log.

    sitemaps = Sitemaps(base_url=..., changes=ChangeLog.sqlite(path))
    sitemaps.recent("recent", window=timedelta(days=2))    # /sitemap-recent-<n>.xml

`RecentChanges` is that section's provider and its declared version. A URL is listed
once, with the lastmod its page last published (else the time its change was recorded),
when its newest change within the window is an addition or a change: one whose newest
change is a removal is gone. The window slides with the site's clock; the version is the
log's `ChangeLog.mark`, which moves when a change is recorded or slides out, so the
section re-renders then and conditional requests are answered without reading the log.
Its own pages are never recorded (`Section.recorded`): its URLs are changes of the
sections they belong to.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from ..errors import ConfigurationError
from ..protocol.entries import Url
from .log import ChangeLog

__all__ = ["DAYS_2", "RecentChanges"]

DAYS_2 = timedelta(days=2)  # the default window: a crawler that visits daily sees each change twice


class RecentChanges:
    """The provider (`entries`) and version (`version`) of a recent section over ``log``."""

    def __init__(self, log: ChangeLog, window: timedelta, clock: Callable[[], float]) -> None:
        self._log = log
        self._window = window.total_seconds()
        self._clock = clock

    @classmethod
    def of(
        cls, log: ChangeLog | None, name: str, window: object, clock: Callable[[], float]
    ) -> RecentChanges:
        """Those of section ``name``, checked: a log (``Sitemaps(changes=...)``), a positive window."""
        if log is None:
            raise ConfigurationError(f"recent section {name!r} needs a change log: Sitemaps(changes=...)")
        if not isinstance(window, timedelta) or window <= timedelta(0):
            raise ConfigurationError(
                f"window of recent section {name!r} must be a positive timedelta, not {window!r}"
            )
        if log.keep is not None and window > log.keep:
            raise ConfigurationError(
                f"window of recent section {name!r} ({window}) is longer than the change log's"
                f" keep ({log.keep}): it would list changes the log has trimmed"
            )
        return cls(log, window, clock)

    def entries(self, base_url: str) -> list[Url]:
        """The site's URLs added or changed within the window, in loc order (pages stay put
        while the newest changes arrive)."""
        newest: dict[tuple[str, str], tuple[str | None, datetime] | None] = {}
        for change in self._log.recent(self._clock() - self._window, base_url):
            # Oldest first: a later change of a URL in its section replaces the earlier one.
            key = (change.section, change.loc)
            newest[key] = None if change.kind == "removed" else (change.lastmod, change.at)
        listed: dict[str, tuple[str | None, datetime]] = {}
        for (_, loc), kept in newest.items():
            # A URL moved between sections is removed from one and added to the other.
            if kept is not None and (loc not in listed or listed[loc][1] <= kept[1]):
                listed[loc] = kept
        return [Url(loc, lastmod=lastmod or at) for loc, (lastmod, at) in sorted(listed.items())]

    def version(self) -> str:
        return self._log.mark(self._clock() - self._window)
