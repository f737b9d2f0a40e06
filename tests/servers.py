"""Real HTTP servers on 127.0.0.1 for the tests that need the wire: uvicorn and werkzeug's.

Each server runs in a background thread on an ephemeral port; `Server` fetches from it with
`http.client`, so chunked streaming, gzip and keep-alive are the real ones. The `serve`
fixture (conftest.py) starts one in front of a real app.
"""

from __future__ import annotations

import http.client
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from email.message import Message
from typing import Any

import pytest
import uvicorn
from werkzeug.serving import WSGIRequestHandler, make_server

from .conftest import wait_until

TIMEOUT = 10.0  # seconds: a regression fails the test instead of hanging it


@dataclass
class Got:
    status: int
    headers: Message  # case-insensitive
    body: bytes  # as on the wire: a Content-Encoding is not undone


class _QuietHandler(WSGIRequestHandler):
    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        pass  # errors are still logged


@contextmanager
def uvicorn_serving(
    app: Any, root_path: str = "", http: str = "h11", port: int = 0, lifespan: str = "auto"
) -> Iterator[int]:
    """Serve the ASGI ``app`` with uvicorn (``http``: its h11 or httptools protocol) in a thread,
    on ``port`` (one the system picks by default); ``lifespan`` as uvicorn's option."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", port))
    config = uvicorn.Config(
        app,
        root_path=root_path,
        log_config=None,
        access_log=False,
        ws="none",
        http=http,
        lifespan=lifespan,
        timeout_graceful_shutdown=2,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        wait_until(lambda: server.started or not thread.is_alive(), "uvicorn has started", TIMEOUT)
        assert server.started, "uvicorn did not start"
        yield sock.getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(TIMEOUT)
        sock.close()
        assert not thread.is_alive(), "uvicorn did not shut down"


@contextmanager
def werkzeug_serving(app: Any) -> Iterator[int]:
    """Serve the WSGI ``app`` with werkzeug's threaded server in a thread; yields the port."""
    server = make_server("127.0.0.1", 0, app, threaded=True, request_handler=_QuietHandler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server.server_port
    finally:
        server.shutdown()
        server.server_close()
        thread.join(TIMEOUT)
        assert not thread.is_alive(), "the WSGI server did not shut down"


class Server:
    """One running server in front of a real app: ``get`` for whole responses, ``open`` to stream."""

    def __init__(self, port: int, framework: str) -> None:
        self.port = port
        self.framework = framework  # what the app's own answers name it

    @contextmanager
    def open(self, path: str, headers: dict[str, str] | None = None) -> Iterator[http.client.HTTPResponse]:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=TIMEOUT)
        try:
            connection.request("GET", path, headers=headers or {})  # http.client asks for identity
            try:
                response = connection.getresponse()
            except TimeoutError:
                pytest.fail(f"GET {path}: no response headers within {TIMEOUT} s")
            yield response
        finally:
            connection.close()

    def get(self, path: str, headers: dict[str, str] | None = None) -> Got:
        with self.open(path, headers) as response:
            return Got(response.status, response.headers, response.read())

    def fetch(self, path: str) -> bytes:
        got = self.get(path)
        assert got.status == 200, f"GET {path}: {got.status} {got.body[:200]!r}"
        return got.body


class SlowReader:
    """A raw-socket client with a small receive buffer (``rcvbuf``) that reads only when told to.

    Raw, because ``SO_RCVBUF`` must be set before it connects (which `http.client.HTTPConnection`
    cannot do); `http.client.HTTPResponse` only parses what it reads.
    """

    def __init__(self, port: int, path: str, rcvbuf: int, encoding: str = "identity") -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            # Before connect: the window the client may advertise is fixed at the handshake.
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
            self.sock.settimeout(TIMEOUT)
            self.sock.connect(("127.0.0.1", port))
            request = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept-Encoding: {encoding}\r\n\r\n"
            self.sock.sendall(request.encode("ascii"))
            self.response = http.client.HTTPResponse(self.sock)
            self.response.begin()
        except BaseException:
            self.sock.close()
            raise

    def read(self, amount: int | None = None) -> bytes:
        return self.response.read(amount)

    def close(self) -> None:
        self.response.close()
        self.sock.close()
