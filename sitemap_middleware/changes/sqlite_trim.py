"""Retention for the SQLite change log (`sqlite.SqliteBackend.trim`): what is older than the
log keeps goes, a step at a time, and never a change a consumer has not acknowledged.

A step is one short ``BEGIN IMMEDIATE`` transaction that removes the oldest changes (the
caller, `log.ChangeLog`, paces the steps), so a first trim of a log that grew for
years never holds the file long enough to make another worker's record wait. The newest
time removed is kept in ``trimmed`` (one row), so `since` can tell an answer that would be
short from a complete one, across restarts.
"""

from __future__ import annotations

import sqlite3

from .model import Trimmed

__all__ = ["PAUSE", "SCHEMA", "horizon", "trim"]

SCHEMA = "CREATE TABLE IF NOT EXISTS trimmed (id INTEGER PRIMARY KEY CHECK (id = 1), horizon REAL NOT NULL);"
_EVERY_ID = 2**63 - 1  # the bound on IDs when no consumer holds any
# The least pause between steps (s): SQLite's busy handler sleeps up to 25 ms between tries
# (then 100 ms), and a waiting record must find the file free when it wakes, or sleep on.
PAUSE = 0.025


def trim(connection: sqlite3.Connection, before: float, most: int) -> Trimmed:
    """Remove at most ``most`` of the changes recorded before ``before`` that every consumer
    has acknowledged, oldest first; name the consumers that hold the rest once none is left."""
    connection.execute("BEGIN IMMEDIATE")
    try:
        # Cursors only move forward: read within the transaction, the bound holds.
        (passed,) = connection.execute("SELECT MIN(position) FROM outbox").fetchone()
        bound = _EVERY_ID if passed is None else passed
        # Oldest first by the index on `at`: a step reads what it removes and stops; by rowid,
        # the last step of a trim read every newer change to learn there were no more.
        newest, count = connection.execute(
            "SELECT MAX(at), COUNT(*) FROM"
            " (SELECT at FROM changes WHERE at < ? AND id <= ? ORDER BY at LIMIT ?)",
            (before, bound, most),
        ).fetchone()
        if count:
            connection.execute(
                "DELETE FROM changes WHERE id IN"
                " (SELECT id FROM changes WHERE at < ? AND id <= ? ORDER BY at LIMIT ?)",
                (before, bound, most),
            )
            connection.execute(
                "INSERT INTO trimmed (id, horizon) VALUES (1, ?)"
                " ON CONFLICT (id) DO UPDATE SET horizon = MAX(horizon, excluded.horizon)",
                (newest,),
            )
    except BaseException:
        connection.execute("ROLLBACK")
        raise
    connection.execute("COMMIT")
    if count == most:
        return Trimmed(count)  # there may be more: the caller steps again
    # The consumers that stop the trim: behind the oldest change it had to keep.
    held = connection.execute(
        "SELECT consumer FROM outbox WHERE position < (SELECT MIN(id) FROM changes WHERE at < ?)"
        " ORDER BY consumer",
        (before,),
    ).fetchall()
    return Trimmed(count, tuple(consumer for (consumer,) in held))


def horizon(connection: sqlite3.Connection) -> float | None:
    """The newest ``at`` ever trimmed, or ``None``."""
    row = connection.execute("SELECT horizon FROM trimmed WHERE id = 1").fetchone()
    return None if row is None else float(row[0])
