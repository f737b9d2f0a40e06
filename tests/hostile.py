"""A hostile HTTP server on 127.0.0.1 for ``validate``: each path is a function that writes raw
bytes to the socket, so a test can trickle, stall, truncate, redirect anywhere or send a bomb.

    with hostile_serving() as server:
        server.serve("/sitemap.xml", urlset(...))
        server.add("/stall.xml", lambda reply: (reply.head(length=10_000), reply.write(b"<"), reply.stall()))
        server.url("/sitemap.xml")

A route runs in the server's own thread per connection; a client that hangs up ends it quietly.
`stall` waits for the end of the test (an event), never for a time.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

Route = Callable[["Reply"], None]


class Reply:
    """What a route writes with: the request's path and the raw socket."""

    def __init__(self, handler: BaseHTTPRequestHandler, server: HostileServer) -> None:
        self.path = handler.path
        self.host = handler.headers.get("Host", "")
        self._handler = handler
        self._server = server

    def head(
        self,
        status: str = "200 OK",
        *,
        content_type: str = "application/xml",
        length: int | None = None,
        headers: tuple[tuple[str, str], ...] = (),
    ) -> None:
        lines = [f"HTTP/1.1 {status}", f"Content-Type: {content_type}", "Connection: close"]
        if length is not None:
            lines.append(f"Content-Length: {length}")
        lines += [f"{name}: {value}" for name, value in headers]
        self.write(("\r\n".join(lines) + "\r\n\r\n").encode())

    def write(self, data: bytes) -> None:
        self._handler.wfile.write(data)
        self._handler.wfile.flush()

    def redirect(self, location: str, status: str = "302 Found") -> None:
        self.head(status, length=0, headers=(("Location", location),))

    def stall(self) -> None:
        """Send nothing more until the test ends."""
        self._server.released.wait()

    def pause(self, seconds: float) -> bool:
        """Wait ``seconds`` (a trickle's pace); False once the test has ended."""
        return not self._server.released.wait(seconds)


class HostileServer:
    def __init__(self) -> None:
        self.routes: dict[str, Route] = {}
        self.hits: collections.Counter[str] = collections.Counter()
        self.released = threading.Event()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                self.close_connection = True
                owner.hits[self.path] += 1
                route = owner.routes.get(self.path) or owner.routes.get(self.path.partition("?")[0])
                try:
                    if route is None:
                        Reply(self, owner).head("404 Not Found", content_type="text/plain", length=0)
                    else:
                        route(Reply(self, owner))
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client hung up: what a bounded reader does

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._http.daemon_threads = True
        self.port: int = self._http.server_address[1]

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"

    def add(self, path: str, route: Route) -> None:
        self.routes[path] = route

    def serve(
        self, path: str, body: str | bytes, content_type: str = "application/xml", **head: object
    ) -> None:
        data = body.encode() if isinstance(body, str) else body

        def route(reply: Reply) -> None:
            reply.head(content_type=content_type, length=len(data), **head)  # type: ignore[arg-type]
            reply.write(data)

        self.add(path, route)


@contextmanager
def hostile_serving() -> Iterator[HostileServer]:
    server = HostileServer()
    thread = threading.Thread(target=server._http.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.released.set()
        server._http.shutdown()
        server._http.server_close()
        thread.join(10)
