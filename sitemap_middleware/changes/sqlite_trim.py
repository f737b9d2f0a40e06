"""Retention for the SQLite change log (`sqlite.SqliteBackend.trim`): what is older than the
log keeps goes, in batches, and never a change a consumer has not acknowledged.

Each batch is its own short ``BEGIN IMMEDIATE`` transaction, so a first trim of a log that
grew for years never holds the file long enough to make a worker's record wait past its
``room_wait``. The newest time removed is kept in ``trimmed`` (one row), so `since` can tell
an answer that would be short from a complete one, across restarts.
"""

from __future__ import annotations

import sqlite3

from .model import Trimmed

__all__ = ["BATCH", "SCHEMA", "horizon", "trim"]

SCHEMA = "CREATE TABLE IF NOT EXISTS trimmed (id INTEGER PRIMARY KEY CHECK (id = 1), horizon REAL NOT NULL);"
BATCH = 10_000  # changes removed a transaction: a few milliseconds of the write lock
_EVERY_ID = 2**63 - 1  # the bound on IDs when no consumer holds any


def trim(connection: sqlite3.Connection, before: float) -> Trimmed:
    """Remove the changes recorded before ``before`` that every consumer has acknowledged."""
    removed = 0
    while True:
        connection.execute("BEGIN IMMEDIATE")
        try:
            # Cursors only move forward: read within the transaction, the bound holds.
            (passed,) = connection.execute("SELECT MIN(position) FROM outbox").fetchone()
            last, newest, count = connection.execute(
                "SELECT MAX(id), MAX(at), COUNT(*) FROM (SELECT id, at FROM changes"
                " WHERE at < ? AND id <= ? ORDER BY id LIMIT ?)",
                (before, _EVERY_ID if passed is None else passed, BATCH),
            ).fetchone()
            if count:
                connection.execute("DELETE FROM changes WHERE id <= ? AND at < ?", (last, before))
                connection.execute(
                    "INSERT INTO trimmed (id, horizon) VALUES (1, ?)"
                    " ON CONFLICT (id) DO UPDATE SET horizon = MAX(horizon, excluded.horizon)",
                    (newest,),
                )
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        connection.execute("COMMIT")
        removed += count
        if count < BATCH:
            break
    # The consumers that stop the trim: behind the oldest change it had to keep.
    held = connection.execute(
        "SELECT consumer FROM outbox WHERE position < (SELECT MIN(id) FROM changes WHERE at < ?)"
        " ORDER BY consumer",
        (before,),
    ).fetchall()
    return Trimmed(removed, tuple(consumer for (consumer,) in held))


def horizon(connection: sqlite3.Connection) -> float | None:
    """The newest ``at`` ever trimmed, or ``None``."""
    row = connection.execute("SELECT horizon FROM trimmed WHERE id = 1").fetchone()
    return None if row is None else float(row[0])
