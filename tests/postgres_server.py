"""A throwaway PostgreSQL server on 127.0.0.1 for the tests that need a real one.

Debian's binaries (``/usr/lib/postgresql/<version>/bin``, the ``postgresql`` package that
``.ci/run`` installs) are used when present, else the build the ``pgserver`` wheel ships
(tox installs it on CPython up to 3.12, the last it has wheels for);
``SITEMAP_TEST_PG_BIN`` names a directory to use instead of either. The cluster lives in
a temporary directory, listens on a free port of 127.0.0.1 only, trusts local connections,
and is stopped and removed when the ``with`` block ends::

    with postgres_server() as url:         # postgresql://postgres@127.0.0.1:<port>/postgres
        ...

``initdb`` refuses to run as root: as root, the cluster is owned by the ``postgres`` user
(Debian's package creates it) or else by ``nobody``. A server that cannot start raises
`PostgresUnavailable`, with what the tools printed: the tests that need it fail, never skip.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

__all__ = ["PostgresUnavailable", "postgres_server"]

START_TIMEOUT = 60  # seconds pg_ctl waits for the server to accept connections


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL binaries were found, or the server they make would not start."""


def binaries() -> Path:
    """The directory holding ``initdb``, ``pg_ctl`` and ``postgres``."""
    chosen = os.environ.get("SITEMAP_TEST_PG_BIN")
    candidates = [Path(chosen)] if chosen else []
    debian = sorted(
        Path("/usr/lib/postgresql").glob("*/bin"), key=lambda p: _version(p.parent.name), reverse=True
    )
    candidates += debian
    spec = importlib.util.find_spec("pgserver")
    if spec is not None and spec.submodule_search_locations:
        candidates += [Path(location) / "pginstall" / "bin" for location in spec.submodule_search_locations]
    for candidate in candidates:
        if (candidate / "initdb").is_file() and (candidate / "pg_ctl").is_file():
            return candidate
    raise PostgresUnavailable(
        "no PostgreSQL binaries: install Debian's postgresql package (.ci/run does) or "
        "pip install pgserver (tox's test env does)"
    )


def _version(name: str) -> tuple[int, ...]:
    return tuple(int(part) for part in name.split(".") if part.isdigit())


def _owner() -> str | None:
    """Who runs the server: ourselves, or, as root (whom initdb refuses), an unprivileged user."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            pwd.getpwnam(name)
            return name
    raise PostgresUnavailable("running as root, and neither a 'postgres' nor a 'nobody' user exists")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _run(argv: list[str], owner: str | None) -> None:
    if owner is not None:
        argv = ["runuser", "-u", owner, "--", *argv]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=START_TIMEOUT + 30, check=False)
    if done.returncode != 0:
        raise PostgresUnavailable(f"{' '.join(argv)} exited {done.returncode}:\n{done.stdout}{done.stderr}")


@contextlib.contextmanager
def postgres_server() -> Iterator[str]:
    """Start a server; yield its SQLAlchemy URL without a driver (``postgresql://…``)."""
    bin_dir = binaries()
    owner = _owner()
    root = Path(tempfile.mkdtemp(prefix="sitemap-pg-"))
    data, sockets = root / "data", root / "run"
    sockets.mkdir()
    if owner is not None:
        record = pwd.getpwnam(owner)
        for path in (root, sockets):
            os.chown(path, record.pw_uid, record.pw_gid)
    started = False
    try:
        initdb = [str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust"]
        _run([*initdb, "-E", "UTF8", "--locale=C", "--no-sync"], owner)
        port = _free_port()
        options = (
            f"-c listen_addresses=127.0.0.1 -p {port} -k {sockets} "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        )
        log = root / "server.log"
        started = True
        pg_ctl = [str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(log), "-o", options]
        _run([*pg_ctl, "-w", "-t", str(START_TIMEOUT), "start"], owner)
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    except PostgresUnavailable as exc:
        log = root / "server.log"
        detail = log.read_text(errors="replace")[-3000:] if log.exists() else ""
        raise PostgresUnavailable(f"{exc}\n{detail}") from None
    finally:
        if started:
            with contextlib.suppress(PostgresUnavailable, subprocess.TimeoutExpired):
                _run([str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"], owner)
        shutil.rmtree(root, ignore_errors=True)


def create_database(postgres_url: str, name: str) -> str:
    """A fresh database ``name`` on the session's server; its URL for SQLAlchemy's psycopg
    driver (each test module that needs tables of its own takes one)."""
    from sqlalchemy import create_engine

    url = postgres_url.replace("postgresql://", "postgresql+psycopg://")
    admin = create_engine(url)
    with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        connection.exec_driver_sql(f'CREATE DATABASE "{name}"')
    admin.dispose()
    return url.rsplit("/", 1)[0] + f"/{name}"
