"""Cancelling a keyset's statement where it runs, once nobody waits for its answer.

A statement whose thread was abandoned past its deadline (`concurrency.deadlines.Abandon`)
or whose task was cancelled (`concurrency.deadlines.within`) is cancelled on the database,
so the thread, its connection and the database's work end within moments rather than when
the statement is done (a plan that would seek for hours). Sync drivers are asked through
their DB-API connection, none imported here::

    with cancel_on_abandon(canceller(dbapi_connection)):
        cursor.execute(sql)

- psycopg 3: ``cancel_safe()`` (3.2+: the libpq cancel that cannot hang on a server that
  does not answer), else ``cancel()``; psycopg2 and oracledb: ``cancel()``;
- sqlite3: ``interrupt()`` (the statement raises ``OperationalError: interrupted``);
- anything else (PyMySQL, mysqlclient: a ``KILL QUERY`` needs a connection of its own):
  ``None``, and the statement runs to its end as before.

Async work is awaited through `cancellable`, given a coroutine function that cancels it
(aiosqlite's ``interrupt``, a PostgreSQL ``pg_cancel_backend`` of `backend_pid`)::

    rows = await cancellable(cancel, session.execute(statement))
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio

from ..concurrency.deadlines import CANCEL_RETRIES
from ..stats import logger

__all__ = ["CANCEL_TIMEOUT", "backend_pid", "cancellable", "canceller", "shielded"]

T = TypeVar("T")

# Most specific first: psycopg 3 has both, and its cancel() may block on a silent server.
_CANCELS = ("cancel_safe", "cancel", "interrupt")
# Seconds an async statement's cancel, and a cancelled task's cleanup, may take.
CANCEL_TIMEOUT = 5.0


def canceller(connection: object) -> Callable[[], object] | None:
    """The call that cancels ``connection``'s running statement from another thread, or ``None``."""
    for name in _CANCELS:
        cancel = getattr(connection, name, None)
        if callable(cancel):
            return cancel  # type: ignore[no-any-return]
    return None


def backend_pid(driver: object) -> int | None:
    """The PostgreSQL backend serving an async driver's connection: asyncpg's, psycopg's."""
    get_pid = getattr(driver, "get_server_pid", None)  # asyncpg
    if callable(get_pid):
        return int(get_pid())
    pid = getattr(getattr(driver, "info", None), "backend_pid", None)  # psycopg
    return pid if isinstance(pid, int) else None


async def cancellable(cancel: Callable[[], Awaitable[object]] | None, work: Awaitable[T]) -> T:
    """``await work``, cancelled on the database first when this task is cancelled (a provider
    past its deadline: `concurrency.deadlines.within`).

    The work runs in a task of its own, shielded: cancelled itself, SQLAlchemy would
    terminate the connection, which drops the cancel request asyncpg sends (psycopg's is cut
    short) while PostgreSQL runs the statement on. Instead ``cancel()`` stops the statement,
    which fails in its task with the database's own error, as any statement that fails does;
    then the cancellation goes on. Without a ``cancel``, the task is cancelled as before.
    """
    task = asyncio.ensure_future(work)
    try:
        return await asyncio.shield(task)
    except anyio.get_cancelled_exc_class():
        with anyio.move_on_after(CANCEL_TIMEOUT, shield=True):
            if cancel is None:
                task.cancel()
            else:
                await _cancel_until_done(cancel, task)
            await asyncio.wait([task])  # its result, or its error: nobody takes either
        if not task.done():
            task.cancel()
        task.add_done_callback(_retrieved)
        raise


async def shielded(cleanup: Awaitable[object]) -> None:
    """``await cleanup``, even in a cancelled task, for `CANCEL_TIMEOUT` seconds at most."""
    with anyio.move_on_after(CANCEL_TIMEOUT, shield=True):
        await cleanup


async def _cancel_until_done(cancel: Callable[[], Awaitable[object]], task: asyncio.Future[Any]) -> None:
    """``cancel()`` until ``task`` ends: one that lands before the statement starts is lost."""
    for delay in CANCEL_RETRIES:
        try:
            await cancel()
        except Exception as error:  # the statement runs on; nothing else can be done
            logger.warning("sitemap: cancelling an abandoned statement failed: %r", error)
        if (await asyncio.wait([task], timeout=delay))[0]:
            return


def _retrieved(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()  # retrieved: asyncio logs one nobody looked at
