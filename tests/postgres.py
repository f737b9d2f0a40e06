"""A throwaway PostgreSQL server for the tests, on a Unix socket (no port to collide on).

Debian's binaries (``/usr/lib/postgresql/<version>/bin``, what ``.ci/run`` installs) or those
on ``PATH``; without them the tests that need it skip, saying why. PostgreSQL refuses to run
as root, so under root it runs as the ``postgres`` user (or ``nobody``). Durability is off
(``--no-sync``, ``fsync=off``): the data lives as long as the test process.
"""

from __future__ import annotations

import os
import pwd
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

USER = "sitemap"  # the database superuser the tests connect as (trust authentication)
TIMEOUT = 60  # seconds for initdb, and for the server to start


def bin_dir() -> Path:
    """Where initdb and pg_ctl live: Debian's, else the pgserver wheel's (`tests.postgres_server`).

    Neither: `PostgresUnavailable`, so the tests that need a server fail, never skip.
    """
    from .postgres_server import binaries

    return binaries()


@contextmanager
def postgres_server(sockets: Path) -> Iterator[None]:
    """Run a fresh server listening only on ``sockets``/.s.PGSQL.5432 until the block ends."""
    binaries = bin_dir()
    home = sockets.parent
    data, log = home / "pgdata", home / "postgres.log"
    sockets.mkdir(parents=True, exist_ok=True)
    data.mkdir()
    run_as: list[str] = []
    if os.geteuid() == 0:
        user = "postgres" if _user_exists("postgres") else "nobody"
        account = pwd.getpwnam(user)
        home.chmod(0o711)  # the server's user must reach its directories, not read ours
        for path in (sockets, data):
            os.chown(path, account.pw_uid, account.pw_gid)
        log.touch()
        os.chown(log, account.pw_uid, account.pw_gid)
        run_as = ["runuser", "-u", user, "--"]
    initdb = [str(binaries / "initdb"), "-D", str(data), "-A", "trust", "-U", USER, "-E", "UTF8", "--no-sync"]
    subprocess.run([*run_as, *initdb], check=True, capture_output=True, timeout=TIMEOUT)
    pg_ctl = [str(binaries / "pg_ctl"), "-D", str(data), "-l", str(log)]
    options = f"-k {sockets} -c listen_addresses='' -F"
    start = [*run_as, *pg_ctl, "-w", "-t", str(TIMEOUT), "-o", options, "start"]
    if subprocess.run(start, capture_output=True, timeout=TIMEOUT + 5).returncode:
        raise RuntimeError(f"PostgreSQL did not start:\n{log.read_text()}")
    try:
        yield
    finally:
        subprocess.run(
            [*run_as, *pg_ctl, "-m", "immediate", "stop"], check=False, capture_output=True, timeout=TIMEOUT
        )


def _user_exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True
