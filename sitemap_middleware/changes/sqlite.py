"""The change log in one SQLite file: the embedded default, for one machine's workers.

Every worker process opens the same file (WAL journal, so readers never wait on the
writer); a page is recorded inside one ``BEGIN IMMEDIATE`` transaction, so two workers
recording the same page at once record each change once. A connection per thread: the
sqlite3 module's own rule.

Tables: ``sections`` (one row per scope and section: `model.SectionState`), ``pages``
(each page's digest and packed entries), ``urls`` (loc -> page, fingerprint; no rowid,
the loc is the key), ``passes`` (pages recorded in the current pass) and ``changes``
(the log itself, in order of recording); ``trimmed`` (the newest time retention removed:
`sqlite_trim`).
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Collection, Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from . import sqlite_trim
from .fingerprints import Entries, pack, unpack
from .ledger import BEHIND, MISSING
from .model import KINDS, Change, Delivery, PageChange, SectionState, Trimmed

__all__ = ["SqliteBackend"]

_SCHEMA = (
    """
CREATE TABLE IF NOT EXISTS sections (
    id INTEGER PRIMARY KEY, scope TEXT NOT NULL, name TEXT NOT NULL,
    baselined INTEGER NOT NULL DEFAULT 0, passes INTEGER NOT NULL DEFAULT 0,
    pages INTEGER NOT NULL DEFAULT 0, urls INTEGER NOT NULL DEFAULT 0, completed REAL,
    UNIQUE (scope, name));
CREATE TABLE IF NOT EXISTS pages (
    section INTEGER NOT NULL, page INTEGER NOT NULL, digest BLOB NOT NULL, entries BLOB NOT NULL,
    PRIMARY KEY (section, page)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS urls (
    section INTEGER NOT NULL, loc BLOB NOT NULL, page INTEGER NOT NULL, fingerprint INTEGER NOT NULL,
    PRIMARY KEY (section, loc)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS urls_missing ON urls (section) WHERE page = 0;
CREATE INDEX IF NOT EXISTS urls_behind ON urls (section) WHERE page = 4294967295;
CREATE TABLE IF NOT EXISTS passes (
    section INTEGER NOT NULL, page INTEGER NOT NULL, PRIMARY KEY (section, page)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS changes (
    id INTEGER PRIMARY KEY AUTOINCREMENT, at REAL NOT NULL, section INTEGER NOT NULL,
    loc TEXT NOT NULL, kind INTEGER NOT NULL, page INTEGER, lastmod TEXT);
CREATE INDEX IF NOT EXISTS changes_at ON changes (at);
CREATE TABLE IF NOT EXISTS outbox (
    consumer TEXT PRIMARY KEY, position INTEGER NOT NULL, holder TEXT, lease_until REAL);
"""
    + sqlite_trim.SCHEMA
)
assert MISSING == 0 and BEHIND == 4294967295  # the partial indexes above name them
_PAGE = len(KINDS)  # the kind of a row that says a page's bytes changed (its loc empty)
_LOOKUP = 500  # locs per IN (...) query: under SQLite's 999 bound parameters of old builds


class SqliteBackend:
    """A log in the SQLite file at ``path``, created on first use."""

    def __init__(self, path: str | os.PathLike[str], *, timeout: float = 30.0) -> None:
        self.path = Path(path)
        self._timeout = timeout
        self._local = threading.local()
        self._ready = False
        self._lock = threading.Lock()

    def _connection(self) -> sqlite3.Connection:
        connection: sqlite3.Connection | None = getattr(self._local, "connection", None)
        if connection is None:
            connection = sqlite3.connect(self.path, timeout=self._timeout, isolation_level=None)
            connection.execute("PRAGMA journal_mode=WAL")
            # WAL with synchronous=NORMAL: a commit survives a crash of the process, and
            # the last ones may be lost to a power cut (replayed by the next pass).
            connection.execute("PRAGMA synchronous=NORMAL")
            with self._lock:
                if not self._ready:
                    connection.executescript(_SCHEMA)
                    self._ready = True
            self._local.connection = connection
        return connection

    @contextmanager
    def ledger(self, scope: str, section: str) -> Iterator[SqliteLedger]:
        """One section's records inside one write transaction (committed on success)."""
        connection = self._connection()
        connection.execute("BEGIN IMMEDIATE")
        try:
            yield SqliteLedger(connection, _section_id(connection, scope, section), section)
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        connection.execute("COMMIT")

    def state(self, scope: str, section: str) -> SectionState | None:
        """The section's state as last committed, or ``None`` when it was never recorded."""
        row = (
            self._connection()
            .execute(
                "SELECT baselined, passes, pages, urls, completed FROM sections WHERE scope = ? AND name = ?",
                (scope, section),
            )
            .fetchone()
        )
        return None if row is None else SectionState(bool(row[0]), row[1], row[2], row[3], row[4])

    def since(self, when: float | None, section: str | None, scope: str | None = None) -> list[Change]:
        """The changes recorded after ``when`` (seconds since the epoch), oldest first."""
        query = (
            "SELECT changes.loc, changes.kind, changes.at, sections.name, changes.lastmod FROM changes"
            " JOIN sections ON sections.id = changes.section WHERE changes.at > ? AND changes.kind < ?"
        )
        arguments: list[object] = [-1.0 if when is None else when, _PAGE]
        if section is not None:
            query += " AND sections.name = ?"
            arguments.append(section)
        if scope is not None:
            query += " AND sections.scope = ?"
            arguments.append(scope)
        rows = self._connection().execute(query + " ORDER BY changes.id", arguments)
        return [
            Change(loc, KINDS[kind], datetime.fromtimestamp(at, UTC), name, lastmod)
            for loc, kind, at, name, lastmod in rows
        ]

    def recent(self, when: float, root: str) -> list[Change]:
        """The changes recorded after ``when`` of the sections of the site at ``root`` (its
        scope, or a mount below it), oldest first."""
        rows = self._connection().execute(
            "SELECT changes.loc, changes.kind, changes.at, sections.name, changes.lastmod FROM changes"
            " JOIN sections ON sections.id = changes.section WHERE changes.at > ? AND changes.kind < ?"
            " AND (sections.scope = ? OR substr(sections.scope, 1, ?) = ?) ORDER BY changes.id",
            (when, _PAGE, root, len(root) + 1, root + "/"),
        )
        return [
            Change(loc, KINDS[kind], datetime.fromtimestamp(at, UTC), name, lastmod)
            for loc, kind, at, name, lastmod in rows
        ]

    def mark(self, when: float) -> str:
        """A token that moves whenever the changes recorded after ``when`` do: the newest
        change's id and the oldest one's still after ``when`` (two index lookups)."""
        connection = self._connection()
        (newest,) = connection.execute("SELECT MAX(id) FROM changes").fetchone()
        oldest = connection.execute(
            "SELECT id FROM changes WHERE at > ? ORDER BY at, id LIMIT 1", (when,)
        ).fetchone()
        return f"{newest}:{None if oldest is None else oldest[0]}"

    def counts(self, when: float, scope: str, section: str) -> dict[str, int]:
        """How many changes of each kind the section had after ``when``."""
        rows = self._connection().execute(
            "SELECT changes.kind, COUNT(*) FROM changes JOIN sections ON sections.id = changes.section"
            " WHERE changes.at > ? AND sections.scope = ? AND sections.name = ? AND changes.kind < ?"
            " GROUP BY changes.kind",
            (when, scope, section, _PAGE),
        )
        return {KINDS[kind]: count for kind, count in rows}

    # -- the outbox (`log.ChangeLog.subscribe`, `claim`) ------------------------------------------

    def subscribe(self, consumer: str) -> None:
        """Start ``consumer``'s cursor at the newest change, unless it has one."""
        self._connection().execute(
            "INSERT OR IGNORE INTO outbox (consumer, position)"
            " VALUES (?, (SELECT COALESCE(MAX(id), 0) FROM changes))",
            (consumer,),
        )

    def claim(
        self, consumer: str, scope: str | None, holder: str, *, limit: int, lease: float, now: float
    ) -> Delivery | None:
        """Up to ``limit`` changes past ``consumer``'s cursor (of sections under ``scope``, if
        given), leased to ``holder`` until ``now + lease``; ``None`` when there are none, or
        another holder's lease runs."""
        connection = self._connection()
        connection.execute("BEGIN IMMEDIATE")
        try:
            row = connection.execute(
                "SELECT position, holder, lease_until FROM outbox WHERE consumer = ?", (consumer,)
            ).fetchone()
            if row is None:
                raise LookupError(f"no outbox for {consumer!r}: subscribe it first")
            position, held_by, until = row
            if held_by not in (None, holder) and until is not None and until > now:
                connection.execute("COMMIT")
                return None
            query = (
                "SELECT changes.id, changes.loc, changes.kind, changes.at, sections.name,"
                " sections.scope, changes.page, changes.lastmod FROM changes"
                " JOIN sections ON sections.id = changes.section WHERE changes.id > ?"
            )
            arguments: list[object] = [position]
            if scope is not None:
                query += " AND (sections.scope = ? OR sections.scope LIKE ? ESCAPE '\\')"
                arguments += [scope, _like_prefix(scope)]
            rows = connection.execute(query + " ORDER BY changes.id LIMIT ?", (*arguments, limit)).fetchall()
            if not rows:
                # Nothing of its scope up to the newest change: the cursor passes the others'
                # (several sites on one log), which it will never be sent and must not hold.
                connection.execute(
                    "UPDATE outbox SET holder = NULL, lease_until = NULL,"
                    " position = MAX(position, (SELECT COALESCE(MAX(id), 0) FROM changes))"
                    " WHERE consumer = ?",
                    (consumer,),
                )
                connection.execute("COMMIT")
                return None
            connection.execute(
                "UPDATE outbox SET holder = ?, lease_until = ? WHERE consumer = ?",
                (holder, now + lease, consumer),
            )
            connection.execute("COMMIT")
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        changes: list[Change] = []
        pages: list[PageChange] = []
        for _, loc, kind, at, name, in_scope, page, lastmod in rows:
            when = datetime.fromtimestamp(at, UTC)
            if kind == _PAGE:
                pages.append(PageChange(in_scope, name, page, when))
            else:
                changes.append(Change(loc, KINDS[kind], when, name, lastmod))
        return Delivery(consumer, holder, tuple(changes), rows[-1][0], tuple(pages))

    def acknowledge(self, delivery: Delivery) -> bool:
        """Move the cursor past ``delivery`` and free the lease; ``False`` if the lease was lost."""
        cursor = self._connection().execute(
            "UPDATE outbox SET position = MAX(position, ?), holder = NULL, lease_until = NULL"
            " WHERE consumer = ? AND holder = ?",
            (delivery.last, delivery.consumer, delivery.holder),
        )
        return cursor.rowcount == 1

    def release(self, delivery: Delivery) -> None:
        """Give the lease back without moving the cursor (to be delivered again, by anyone)."""
        self._connection().execute(
            "UPDATE outbox SET holder = NULL, lease_until = NULL WHERE consumer = ? AND holder = ?",
            (delivery.consumer, delivery.holder),
        )

    def pending(self, consumer: str) -> int:
        """How many changes (of URLs and of pages) wait past ``consumer``'s cursor, of every scope."""
        row = (
            self._connection()
            .execute(
                "SELECT COUNT(*) FROM changes WHERE id > (SELECT position FROM outbox WHERE consumer = ?)",
                (consumer,),
            )
            .fetchone()
        )
        return int(row[0])

    def unsubscribe(self, consumer: str) -> None:
        """Drop ``consumer``'s cursor and lease (nothing, if it has none)."""
        self._connection().execute("DELETE FROM outbox WHERE consumer = ?", (consumer,))

    # -- retention (`log.ChangeLog.trim`) ---------------------------------------------------------

    def trim(self, before: float, most: int, *, continued: bool = False) -> Trimmed:
        """Remove at most ``most`` of the changes recorded before ``before`` that every
        consumer has acknowledged, in one transaction (which reads the cursors afresh,
        ``continued`` or not)."""
        return sqlite_trim.trim(self._connection(), before, most)

    def horizon(self) -> float | None:
        """The newest ``at`` ever trimmed, or ``None``."""
        return sqlite_trim.horizon(self._connection())

    def trim_pause(self, took: float) -> float:
        """Three times the step, and at least `sqlite_trim.PAUSE`: the file has one writer."""
        return max(3 * took, sqlite_trim.PAUSE)

    def close(self) -> None:
        """Close this thread's connection (others close with their threads)."""
        connection = getattr(self._local, "connection", None)
        if connection is not None:
            connection.close()
            self._local.connection = None


def _like_prefix(scope: str) -> str:
    """A LIKE pattern for the scopes below ``scope`` (its mount prefixes)."""
    return scope.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "/%"


def _section_id(connection: sqlite3.Connection, scope: str, name: str) -> int:
    row = connection.execute("SELECT id FROM sections WHERE scope = ? AND name = ?", (scope, name)).fetchone()
    if row is not None:
        return int(row[0])
    cursor = connection.execute("INSERT INTO sections (scope, name) VALUES (?, ?)", (scope, name))
    assert cursor.lastrowid is not None
    return cursor.lastrowid


class SqliteLedger:
    """`ledger.Ledger` over one open transaction."""

    def __init__(self, connection: sqlite3.Connection, section_id: int, name: str) -> None:
        self._db = connection
        self._id = section_id
        self._name = name

    def state(self) -> SectionState:
        row = self._db.execute(
            "SELECT baselined, passes, pages, urls, completed FROM sections WHERE id = ?", (self._id,)
        ).fetchone()
        return SectionState(bool(row[0]), row[1], row[2], row[3], row[4])

    def put_state(self, state: SectionState) -> None:
        self._db.execute(
            "UPDATE sections SET baselined = ?, passes = ?, pages = ?, urls = ?, completed = ? WHERE id = ?",
            (int(state.baselined), state.passes, state.pages, state.urls, state.completed, self._id),
        )

    def page_digest(self, number: int) -> bytes | None:
        row = self._db.execute(
            "SELECT digest FROM pages WHERE section = ? AND page = ?", (self._id, number)
        ).fetchone()
        return None if row is None else bytes(row[0])

    def page(self, number: int) -> tuple[bytes, Entries] | None:
        row = self._db.execute(
            "SELECT digest, entries FROM pages WHERE section = ? AND page = ?", (self._id, number)
        ).fetchone()
        return None if row is None else (bytes(row[0]), unpack(row[1]))

    def put_page(self, number: int, digest: bytes, entries: Entries) -> None:
        self._db.execute(
            "INSERT OR REPLACE INTO pages (section, page, digest, entries) VALUES (?, ?, ?, ?)",
            (self._id, number, digest, pack(entries)),
        )

    def find(self, locs: Collection[bytes]) -> dict[bytes, tuple[int, int]]:
        found: dict[bytes, tuple[int, int]] = {}
        batch = list(locs)
        for start in range(0, len(batch), _LOOKUP):
            part = batch[start : start + _LOOKUP]
            marks = ",".join("?" * len(part))
            rows = self._db.execute(
                f"SELECT loc, page, fingerprint FROM urls WHERE section = ? AND loc IN ({marks})",
                (self._id, *part),
            )
            found.update((bytes(loc), (page, fingerprint)) for loc, page, fingerprint in rows)
        return found

    def put_urls(self, rows: Iterable[tuple[bytes, int, int]]) -> None:
        self._db.executemany(
            "INSERT OR REPLACE INTO urls (section, loc, page, fingerprint) VALUES (?, ?, ?, ?)",
            ((self._id, loc, page, fingerprint) for loc, page, fingerprint in rows),
        )

    def missing(self) -> list[bytes]:
        rows = self._db.execute("SELECT loc FROM urls WHERE section = ? AND page = 0", (self._id,))
        return [bytes(loc) for (loc,) in rows]

    def behind(self) -> list[bytes]:
        rows = self._db.execute("SELECT loc FROM urls WHERE section = ? AND page = 4294967295", (self._id,))
        return [bytes(loc) for (loc,) in rows]

    def pages_after(self, last: int) -> list[int]:
        rows = self._db.execute("SELECT page FROM pages WHERE section = ? AND page > ?", (self._id, last))
        return [page for (page,) in rows]

    def drop_urls(self, locs: Iterable[bytes]) -> None:
        self._db.executemany(
            "DELETE FROM urls WHERE section = ? AND loc = ?", ((self._id, loc) for loc in locs)
        )

    def drop_pages(self, numbers: Iterable[int]) -> None:
        self._db.executemany(
            "DELETE FROM pages WHERE section = ? AND page = ?", ((self._id, number) for number in numbers)
        )

    def pass_page(self, number: int, last: int) -> int:
        self._db.execute("INSERT OR IGNORE INTO passes (section, page) VALUES (?, ?)", (self._id, number))
        row = self._db.execute(
            "SELECT COUNT(*) FROM passes WHERE section = ? AND page <= ?", (self._id, last)
        ).fetchone()
        return int(row[0])

    def end_pass(self) -> None:
        self._db.execute("DELETE FROM passes WHERE section = ?", (self._id,))

    def append_page(self, number: int, at: datetime) -> None:
        self._db.execute(
            "INSERT INTO changes (at, section, loc, kind, page) VALUES (?, ?, '', ?, ?)",
            (at.timestamp(), self._id, _PAGE, number),
        )

    def append(self, changes: list[Change]) -> None:
        self._db.executemany(
            "INSERT INTO changes (at, section, loc, kind, lastmod) VALUES (?, ?, ?, ?, ?)",
            (
                (change.at.timestamp(), self._id, change.loc, KINDS.index(change.kind), change.lastmod)
                for change in changes
            ),
        )
