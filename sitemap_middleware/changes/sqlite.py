"""The change log in one SQLite file: the embedded default, for one machine's workers.

Every worker process opens the same file (WAL journal, so readers never wait on the
writer); a page is recorded inside one ``BEGIN IMMEDIATE`` transaction, so two workers
recording the same page at once record each change once. A connection per thread: the
sqlite3 module's own rule.

Tables: ``sections`` (one row per scope and section: `model.SectionState`), ``pages``
(each page's digest and packed entries), ``urls`` (loc -> page, fingerprint; no rowid,
the loc is the key), ``passes`` (pages recorded in the current pass) and ``changes``
(the log itself, in order of recording, each with the lastmod its URL was published with).
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Collection, Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from .fingerprints import Entries, pack, unpack
from .ledger import MISSING
from .model import KINDS, Change, SectionState

__all__ = ["SqliteBackend"]

_SCHEMA = """
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
CREATE TABLE IF NOT EXISTS passes (
    section INTEGER NOT NULL, page INTEGER NOT NULL, PRIMARY KEY (section, page)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS changes (
    id INTEGER PRIMARY KEY AUTOINCREMENT, at REAL NOT NULL, section INTEGER NOT NULL,
    loc TEXT NOT NULL, kind INTEGER NOT NULL, lastmod TEXT);
CREATE INDEX IF NOT EXISTS changes_at ON changes (at);
"""
assert MISSING == 0  # the partial index above names it
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
            " JOIN sections ON sections.id = changes.section WHERE changes.at > ?"
        )
        arguments: list[object] = [-1.0 if when is None else when]
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
            " JOIN sections ON sections.id = changes.section WHERE changes.at > ?"
            " AND (sections.scope = ? OR substr(sections.scope, 1, ?) = ?) ORDER BY changes.id",
            (when, root, len(root) + 1, root + "/"),
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
            " WHERE changes.at > ? AND sections.scope = ? AND sections.name = ? GROUP BY changes.kind",
            (when, scope, section),
        )
        return {KINDS[kind]: count for kind, count in rows}

    def close(self) -> None:
        """Close this thread's connection (others close with their threads)."""
        connection = getattr(self._local, "connection", None)
        if connection is not None:
            connection.close()
            self._local.connection = None


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

    def append(self, changes: list[Change]) -> None:
        self._db.executemany(
            "INSERT INTO changes (at, section, loc, kind, lastmod) VALUES (?, ?, ?, ?, ?)",
            (
                (change.at.timestamp(), self._id, change.loc, KINDS.index(change.kind), change.lastmod)
                for change in changes
            ),
        )
