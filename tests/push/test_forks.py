"""A `Sitemaps` built before a fork (gunicorn ``--preload``) pushes from the worker that
recorded the changes: its push thread starts there, after the fork, never in the master."""

from __future__ import annotations

import http.client
import os
import socket
import subprocess
import sys
from pathlib import Path

from .conftest import locs
from .engine import Engine
from .worker import baselined

ROOT = Path(__file__).resolve().parents[2]


def get(port: int, path: str) -> int:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        response.read()
        return response.status
    finally:
        connection.close()


def test_a_preloaded_app_pushes_from_the_gunicorn_worker_that_recorded(
    engine: Engine, log_path: Path, tmp_path: Path
) -> None:
    paths = baselined(str(log_path), engine.url, tmp_path, "/p/forked")
    listener = socket.create_server(("127.0.0.1", 0))
    fd = listener.fileno()
    command = ["gunicorn", "--preload", "--workers", "2", "--bind", f"fd://{fd}", "--log-level", "warning"]
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PUSH_LOG": str(log_path),
        "PUSH_ENGINE": engine.url,
        "PUSH_PATHS": str(paths),
    }
    server = subprocess.Popen(
        [sys.executable, "-m", *command, "tests.push.preloaded:app"],
        cwd=ROOT,
        env=env,
        pass_fds=[fd],
        stderr=subprocess.PIPE,
    )
    try:
        assert get(listener.getsockname()[1], "/sitemap.xml") == 200
        assert get(listener.getsockname()[1], "/sitemap-products-1.xml") == 200
        [post] = engine.wait_posts(1)
        assert post.urls == locs("/p/forked")
    finally:
        server.terminate()
        _, errors = server.communicate(timeout=10)
        listener.close()
    assert b"Traceback" not in errors, errors.decode()
