"""Every page rendered completely, handed to the change log; never a reason for a page to fail.

The service makes one `PageWatch` per page it renders. A page stored as it grows is handed
over with its gzip body once complete (`stored`); a page streamed to one client (nothing is
stored) is watched as it streams (`stream`), and handed over only if it ends. A page cut
short (a provider that failed, a client that left) is never recorded: the log would read
its missing tail as removals. Recording costs the page nothing when its bytes are the ones
the log last saw (one digest read); otherwise the page is read back from its own bytes.
"""

from __future__ import annotations

import hashlib
import time
from collections import Counter
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

from ..stats import Stats, logger
from .log import ChangeLog
from .model import Seen

__all__ = ["PageWatch", "Recorder"]

_EMPTY = hashlib.sha256(b"").digest()


class Recorder:
    """Records pages in ``log``, counting what changed (``changes_added`` ...) in ``stats``;
    a log that fails is logged and counted (``changes_errors``), and the page stands:
    what it did not record, the next render of the page does. ``on_changes`` is called (on
    the log's thread) after a page recorded changes: it wakes the push thread."""

    def __init__(
        self,
        log: ChangeLog,
        stats: Stats,
        clock: Callable[[], float] = time.time,
        on_changes: Callable[[], None] | None = None,
    ) -> None:
        self.log = log
        self._stats = stats
        self._clock = clock
        self._on_changes = on_changes

    def record(self, seen: Seen, pages: int | None) -> None:
        """Record ``seen`` on the log's thread (`ChangeLog.record_later`), at the time it ended."""
        at = self._clock()
        if not self.log.record_later(partial(self._record, seen, pages, at)):
            self._stats.count(seen.section, "changes_dropped")
            logger.warning(
                "sitemap section %r: page %d not recorded, the change log busy (its next render is)",
                seen.section,
                seen.number,
                extra={"sitemap_section": seen.section},
            )

    def _record(self, seen: Seen, pages: int | None, at: float) -> None:
        try:
            recorded = self.log.record(seen, pages=pages, at=at)
        except Exception:
            self._stats.count(seen.section, "changes_errors")
            logger.exception(
                "sitemap section %r: page %d could not be recorded in the change log",
                seen.section,
                seen.number,
                extra={"sitemap_section": seen.section},
            )
            return
        for kind, count in Counter(change.kind for change in recorded.changes).items():
            self._stats.count(seen.section, f"changes_{kind}", count)  # one lock a kind, not a URL
        if recorded.completed:
            self._stats.count(seen.section, "change_passes")
        if recorded.changes and self._on_changes is not None:
            self._on_changes()


class PageWatch:
    """One page on its way to the log: where it is, and how many pages its section has
    (``pages()``, ``None`` when no whole plan is known), asked once the page is complete."""

    __slots__ = ("_by_position", "_number", "_pages", "_recorder", "_scope", "_section")

    def __init__(
        self,
        recorder: Recorder,
        scope: str,
        section: str,
        number: int,
        pages: Callable[[], int | None],
        *,
        by_position: bool = True,
    ) -> None:
        self._recorder = recorder
        self._scope = scope
        self._section = section
        self._number = number
        self._pages = pages
        self._by_position = by_position  # `plans.Shape.by_position`

    def stored(self, digest: Any, body: Callable[[], bytes]) -> None:
        """The page is complete: ``digest`` (a hashlib object) of its identity bytes, which
        ``body()`` returns when the log needs them."""
        seen = Seen(self._scope, self._section, self._number, digest.digest(), body, self._by_position)
        self._recorder.record(seen, self._pages())

    def empty(self) -> None:
        """The page lists no URL now (a keyed range whose rows were all deleted): recorded as
        empty when its section's plan still has it, so its URLs count as gone and its pass
        can end; a page past the plan (any number a client asks for) is not recorded."""
        pages = self._pages()
        if pages is not None and self._number <= pages:
            seen = Seen(self._scope, self._section, self._number, _EMPTY, lambda: b"", self._by_position)
            self._recorder.record(seen, pages)

    def stream(self, chunks: Iterator[bytes]) -> Iterator[bytes]:
        """``chunks`` as they are, recorded once the last one is taken. Its chunks are kept
        until then: one page per render, as a stored page's gzip copy is."""
        digest = hashlib.sha256()
        kept: list[bytes] = []
        try:
            for chunk in chunks:
                digest.update(chunk)
                kept.append(chunk)
                yield chunk
        finally:
            close = getattr(chunks, "close", None)
            if close is not None:
                close()
        self.stored(digest, lambda: b"".join(kept))
