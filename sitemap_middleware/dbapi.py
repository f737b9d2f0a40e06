"""What the keysets need of a DB-API connection: how to cancel the statement it is running.

A statement whose thread was abandoned past its deadline (`concurrency.deadlines.Abandon`)
is cancelled where it runs, so the thread, its connection and the database's work on it
end within moments rather than when the statement is done (a plan that would seek for
hours). Each driver names it differently; none is imported here, each is asked::

    with cancel_on_abandon(canceller(dbapi_connection)):
        cursor.execute(sql)

- psycopg 3: ``cancel_safe()`` (3.2+: the libpq cancel that cannot hang on a server that
  does not answer), else ``cancel()``; psycopg2 and oracledb: ``cancel()``;
- sqlite3: ``interrupt()`` (the statement raises ``OperationalError: interrupted``);
- anything else (PyMySQL, mysqlclient: a ``KILL QUERY`` needs a connection of its own):
  ``None``, and the statement runs to its end as before.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["canceller"]

# Most specific first: psycopg 3 has both, and its cancel() may block on a silent server.
_CANCELS = ("cancel_safe", "cancel", "interrupt")


def canceller(connection: object) -> Callable[[], object] | None:
    """The call that cancels ``connection``'s running statement from another thread, or ``None``."""
    for name in _CANCELS:
        cancel = getattr(connection, name, None)
        if callable(cancel):
            return cancel  # type: ignore[no-any-return]
    return None
