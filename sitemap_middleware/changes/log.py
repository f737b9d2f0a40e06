"""`ChangeLog`: what the sitemaps published, URL by URL, and what changed between renders.

    sitemaps = Sitemaps(base_url=..., changes=ChangeLog.sqlite("var/sitemap-changes.sqlite3"))
    sitemaps.refresh()                                   # a periodic job: every page, now
    for change in sitemaps.changes.since(last_run):      # oldest first
        print(change.kind, change.loc, change.at)

Every page rendered completely (a crawler's request, an export, a refresh) is recorded,
whichever worker rendered it (`ledger.record` says how a page becomes changes). The log
lives in a backend: `sqlite` (one file, one machine) or `redis` (a fleet).
"""

from __future__ import annotations

import os
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Protocol, runtime_checkable

from ..errors import ConfigurationError
from .ledger import Ledger, Recorded, record
from .model import Change, SectionState, Seen

__all__ = ["DEFAULT_PATH", "Backend", "ChangeLog", "Windowed"]

DEFAULT_PATH = "sitemap-changes.sqlite3"


class Backend(Protocol):
    """Where a log is kept (`sqlite.SqliteBackend`, `sitemap_middleware.redis`)."""

    def ledger(self, scope: str, section: str) -> AbstractContextManager[Ledger]:
        """One section's records inside one transaction: committed when the block ends
        normally, nothing written when it raises."""
        ...

    def state(self, scope: str, section: str) -> SectionState | None: ...

    def since(self, when: float | None, section: str | None, scope: str | None = None) -> list[Change]: ...

    def counts(self, when: float, scope: str, section: str) -> dict[str, int]: ...


class ChangeLog:
    """A log of the URLs the sitemaps published, kept in ``backend``.

    Make one with `ChangeLog.sqlite` or `ChangeLog.redis` and give it to
    ``Sitemaps(changes=...)``; one log may serve one `Sitemaps` (its sections are
    recorded under the site's base URL and mount prefix, so several sites may share it).
    """

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    @classmethod
    def sqlite(cls, path: str | os.PathLike[str] = DEFAULT_PATH) -> ChangeLog:
        """A log in one SQLite file, created on first use: the workers of one machine share it."""
        from .sqlite import SqliteBackend

        if not str(path):
            raise ConfigurationError("ChangeLog.sqlite needs a file path")
        return cls(SqliteBackend(path))

    def record(self, seen: Seen, *, pages: int | None, at: float) -> Recorded:
        """Record one page rendered completely (`ledger.record`): its changes, reported once."""
        with self.backend.ledger(seen.scope, seen.section) as ledger:
            return record(ledger, seen, pages=pages, at=at)

    def since(self, when: datetime | None = None, section: str | None = None) -> list[Change]:
        """The changes recorded after ``when`` (an aware datetime; ``None``: all), oldest first."""
        if when is not None and when.tzinfo is None:
            raise ConfigurationError("changes.since needs an aware datetime (one with a tzinfo)")
        return self.backend.since(None if when is None else when.timestamp(), section)

    def state(self, scope: str, section: str) -> SectionState | None:
        """What the log keeps of a section under ``scope`` (site root and mount prefix)."""
        return self.backend.state(scope, section)

    def counts(self, when: float, scope: str, section: str) -> dict[str, int]:
        """How many changes of each kind the section had after ``when`` (seconds since the epoch)."""
        return self.backend.counts(when, scope, section)

    def recent(self, when: float, root: str) -> list[Change]:
        """The changes recorded after ``when`` in the site at ``root``, oldest first.

        A backend that can select them by site itself (`Windowed`) does; another is asked
        for the changes of the scope ``root`` (its sections at no mount prefix).
        """
        if isinstance(self.backend, Windowed):
            return self.backend.recent(when, root)
        return self.backend.since(when, None, root)

    def mark(self, when: float) -> str:
        """A token that moves whenever the changes recorded after ``when`` do (a new one, or
        the oldest sliding out): the declared version of a recent section (`recent`)."""
        if isinstance(self.backend, Windowed):
            return self.backend.mark(when)
        changes = self.backend.since(when, None)
        return f"{len(changes)}:{changes[-1].at.timestamp() if changes else None}"


@runtime_checkable
class Windowed(Protocol):
    """A backend's optional capability: the recent changes of one site, and a cheap mark
    of them, read by the backend itself (`sqlite.SqliteBackend`) rather than from `since`."""

    def recent(self, when: float, root: str) -> list[Change]: ...

    def mark(self, when: float) -> str: ...
