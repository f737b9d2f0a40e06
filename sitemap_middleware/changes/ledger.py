"""How a rendered page becomes changes: the one algorithm every backend of the log runs.

A backend (`sqlite`, `redis`) offers a `Ledger`: one section's records inside one of its
transactions, so two workers recording the same page record each change once. It keeps,
per section: each page's digest and entries (loc -> fingerprint) as last recorded, and per
URL the page it was last seen on and its fingerprint; page 0 means *missing*: gone from
the page it was on, not yet seen on another. `record` compares a page with all that::

    with backend.ledger(scope, section) as ledger:
        changes = record(ledger, seen, pages=plan.pages, at=now)

- a page whose digest is the one recorded changed nothing (one small read);
- a URL on no page before is **added**; one whose fingerprint moved is **changed**;
- a URL that arrives from another page (rows inserted or deleted before it) is neither:
  its row is moved;
- a URL gone from its page is *missing* until the section's pass completes (every page of
  its plan recorded since the last pass ended): it may have moved to a page not yet
  rendered. Then what is still missing, and what sat on pages past the plan's end, is
  **removed**;
- a URL gone from the *head* of its page (before the first URL the page kept) is *behind*
  for one pass more: rows deleted before it may have moved it back onto the page before,
  recorded earlier in this pass (page 5 rendered, rows deleted, then page 6, as `refresh`
  goes). It is found there in the next pass, or removed when that pass ends: a URL is
  never reported removed, then added, for having moved.

The first pass is the baseline: it records everything and reports nothing.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from datetime import UTC, datetime
from typing import Protocol

from .fingerprints import Entries, read_lastmods, read_page
from .model import Change, Kind, SectionState, Seen

__all__ = ["BEHIND", "MISSING", "Ledger", "Recorded", "record"]

MISSING = 0  # the page of a URL gone from its page and not yet seen on another
# The page of one gone from its page's head, missing from the next pass on: the largest page
# number a row holds (Redis packs it in 32 bits), never a real one.
BEHIND = 0xFFFF_FFFF


class Ledger(Protocol):
    """One section's records, read and written inside one transaction of a backend."""

    def state(self) -> SectionState:
        """The section's state (a new one for a section never recorded)."""
        ...

    def page(self, number: int) -> tuple[bytes, Entries] | None:
        """Page ``number``'s digest and entries as last recorded, or ``None``."""
        ...

    def page_digest(self, number: int) -> bytes | None:
        """Page ``number``'s digest as last recorded: `page` without reading its entries."""
        ...

    def find(self, locs: Collection[bytes]) -> dict[bytes, tuple[int, int]]:
        """For those of ``locs`` the section knows: the page each is on and its fingerprint."""
        ...

    def put_page(self, number: int, digest: bytes, entries: Entries) -> None: ...

    def put_urls(self, rows: Iterable[tuple[bytes, int, int]]) -> None:
        """Insert or replace (loc, page, fingerprint) rows."""
        ...

    def missing(self) -> list[bytes]:
        """The URLs on page `MISSING`."""
        ...

    def behind(self) -> list[bytes]:
        """The URLs on page `BEHIND`."""
        ...

    def pages_after(self, last: int) -> list[int]:
        """The recorded pages past page ``last``."""
        ...

    def drop_urls(self, locs: Iterable[bytes]) -> None: ...

    def drop_pages(self, numbers: Iterable[int]) -> None: ...

    def pass_page(self, number: int, last: int) -> int:
        """Note page ``number`` as recorded in the current pass; how many of pages 1 to
        ``last`` it has recorded."""
        ...

    def end_pass(self) -> None:
        """Forget the pages recorded in the current pass."""
        ...

    def put_state(self, state: SectionState) -> None: ...

    def append(self, changes: list[Change]) -> None:
        """Add ``changes`` to the section's log, in order."""
        ...

    def append_page(self, number: int, at: datetime) -> None:
        """Add to the log that page ``number``'s bytes changed (a `model.PageChange`)."""
        ...


class Recorded:
    """What `record` found in one page: the changes reported, and whether a pass ended."""

    __slots__ = ("changes", "completed")

    def __init__(self, changes: list[Change], completed: bool) -> None:
        self.changes = changes
        self.completed = completed


def record(ledger: Ledger, seen: Seen, *, pages: int | None, at: float) -> Recorded:
    """Compare page ``seen.number`` with what ``ledger`` holds; write and report the difference.

    ``pages``: the number of pages of the section's plan now, or ``None`` when it is not
    known (no store keeps plans): the page is compared, and no pass can end.
    """
    state = ledger.state()
    baselined = state.baselined  # before this page: the baseline pass reports nothing
    found: list[tuple[bytes, Kind]] = []
    number = seen.number
    when = datetime.fromtimestamp(at, UTC)
    moved = ledger.page_digest(number) != seen.digest
    body = None
    if moved:
        body = seen.body()
        state.urls += _compare(ledger, seen, body, found)
    completed = False
    if pages is not None and number <= pages and ledger.pass_page(number, pages) == pages:
        completed = True
        state.urls -= _end_pass(ledger, pages, found)
        state.baselined = True
        state.passes += 1
        state.completed = at
    if pages is not None:
        state.pages = pages
    ledger.put_state(state)
    changes = _changes(found, body, when, seen.section) if baselined else []
    if changes:
        ledger.append(changes)
    if moved and baselined:
        ledger.append_page(number, when)  # after its URLs: a claim of its span names both
    return Recorded(changes, completed)


def _compare(ledger: Ledger, seen: Seen, body: bytes, found: list[tuple[bytes, Kind]]) -> int:
    """Write the page's new entries and note what differs; returns how many URLs are new.

    A page's own entries hold the fingerprints of the URLs on it; a URL's row holds the
    page it is on, and its fingerprint only once it is missing (its page no longer has it).
    So a URL that changed in place costs no row write, only the page's.
    """
    number = seen.number
    rendered = read_page(body)
    recorded = ledger.page(number)
    prior: Entries = {} if recorded is None else recorded[1]
    arrived = [loc for loc in rendered if loc not in prior]
    left = [loc for loc in prior if loc not in rendered]
    known = ledger.find(arrived + left) if arrived or left else {}
    elsewhere: dict[int, Entries] = {}  # the pages URLs arrive from, read once each
    rows: list[tuple[bytes, int, int]] = []
    new = 0
    for loc, fingerprint in rendered.items():
        before = prior.get(loc)
        if before is None:
            where = known.get(loc)
            if where is None:
                new += 1
                found.append((loc, "added"))
            elif _last_fingerprint(ledger, loc, where, elsewhere) != fingerprint:
                found.append((loc, "changed"))
            rows.append((loc, number, fingerprint))  # new here, or moved here
        elif before != fingerprint:
            found.append((loc, "changed"))
    # Rows deleted before a URL move it back only where pages are cut by position.
    head = _head(prior, rendered) if seen.by_position and number > 1 else set()
    for loc in left:
        where = known.get(loc)
        if where is not None and where[0] == number:  # not seen elsewhere since
            rows.append((loc, BEHIND if loc in head else MISSING, prior[loc]))
    ledger.put_urls(rows)
    ledger.put_page(number, seen.digest, rendered)
    return new


def _head(prior: Entries, rendered: Entries) -> set[bytes]:
    """The URLs a page lost from its start (all it had, if it kept none): the ones that rows
    deleted before them move back onto the page before."""
    head = set()
    for loc in prior:  # in the page's order
        if loc in rendered:
            break
        head.add(loc)
    return head


def _last_fingerprint(ledger: Ledger, loc: bytes, where: tuple[int, int], pages: dict[int, Entries]) -> int:
    """The fingerprint a URL last had: on the page it was on, or in its row once missing."""
    page, fingerprint = where
    if page in (MISSING, BEHIND):
        return fingerprint
    entries = pages.get(page)
    if entries is None:
        recorded = ledger.page(page)
        entries = pages[page] = {} if recorded is None else recorded[1]
    return entries.get(loc, fingerprint)


def _end_pass(ledger: Ledger, pages: int, found: list[tuple[bytes, Kind]]) -> int:
    """The pass is complete: what is still missing, or on pages past the plan, is removed; what
    is behind is missing in the next pass."""
    gone = ledger.missing()
    beyond = ledger.pages_after(pages)
    for number in beyond:
        recorded = ledger.page(number)
        if recorded is None:  # pragma: no cover - listed a moment ago, in this transaction
            continue
        locs = list(recorded[1])
        gone += [loc for loc, (page, _) in ledger.find(locs).items() if page == number]
    found += [(loc, "removed") for loc in gone]
    ledger.drop_urls(gone)
    behind = ledger.behind()
    if behind:
        rows = ledger.find(behind).items()
        ledger.put_urls((loc, MISSING, fingerprint) for loc, (page, fingerprint) in rows if page == BEHIND)
    ledger.drop_pages(beyond)
    ledger.end_pass()
    return len(gone)


def _changes(
    found: list[tuple[bytes, Kind]], body: bytes | None, when: datetime, section: str
) -> list[Change]:
    """The changes found, their locs as the URLs they name (published XML-escaped: every loc
    unescaped at once, since a page may change whole), an added or changed URL with the
    lastmod its page published (read only for a page that reported one)."""
    if not found:
        return []
    text = b"\n".join(loc for loc, _ in found).decode().replace("&amp;", "&")  # `escape_uri`'s one entity
    published: dict[bytes, bytes] = {}
    if body is not None and any(kind != "removed" for _, kind in found):
        published = read_lastmods(body)
    changes = []
    for loc, (raw, kind) in zip(text.split("\n"), found, strict=True):
        lastmod = None if kind == "removed" else published.get(raw)
        changes.append(Change(loc, kind, when, section, None if lastmod is None else lastmod.decode()))
    return changes
