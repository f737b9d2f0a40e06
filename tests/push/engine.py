"""A loopback IndexNow engine (indexnow.org's protocol) for the push tests, on 127.0.0.1.

    with serving_engine() as engine:
        engine.script(Answer(429, {"Retry-After": "1"}), Answer(202))
        ...                                   # the next POSTs get these, then 200s
        first, second = engine.wait_posts(2)  # what each POST carried, and when it came

Every POST is recorded when it arrives (its JSON body, headers, a monotonic time), then
answered by the next scripted `Answer`: a status, headers and body, or a stall that holds
the request until the engine is released (the test's end, or ``release()``).
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ..conftest import WAIT


@dataclass(frozen=True)
class Answer:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    stall: bool = False  # hold the request until the engine is released


@dataclass(frozen=True)
class Post:
    path: str
    headers: dict[str, str]  # lowercase names
    body: dict[str, Any]
    at: float  # time.monotonic() on arrival

    @property
    def urls(self) -> list[str]:
        return list(self.body["urlList"])


class Engine:
    def __init__(self) -> None:
        self.posts: list[Post] = []
        self._answers: deque[Answer] = deque()
        self._changed = threading.Condition()
        self.released = threading.Event()
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/indexnow"

    def script(self, *answers: Answer) -> None:
        with self._changed:
            self._answers.extend(answers)

    def release(self) -> None:
        self.released.set()

    def wait_posts(self, count: int) -> list[Post]:
        """The first ``count`` POSTs, once they have arrived."""
        deadline = time.monotonic() + WAIT
        with self._changed:
            while len(self.posts) < count:
                left = deadline - time.monotonic()
                assert left > 0, f"{len(self.posts)} POSTs arrived, not {count}"
                self._changed.wait(left)
            return self.posts[:count]

    def arrived(self, post: Post) -> Answer:
        with self._changed:
            self.posts.append(post)
            self._changed.notify_all()
            return self._answers.popleft() if self._answers else Answer()


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(length)
        headers = {name.lower(): value for name, value in self.headers.items()}
        engine = self.server.engine
        answer = engine.arrived(Post(self.path, headers, json.loads(raw), time.monotonic()))
        if answer.stall:
            engine.released.wait(WAIT * 3)
        try:
            self.send_response(answer.status)
            for name, value in answer.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(answer.body)))
            self.end_headers()
            self.wfile.write(answer.body)
        except OSError:
            pass  # the client gave up (a timeout, a killed process)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    engine: Engine


@contextmanager
def serving_engine() -> Iterator[Engine]:
    engine = Engine()
    server = _Server(("127.0.0.1", 0), _Handler)
    server.engine = engine
    engine.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield engine
    finally:
        engine.release()
        server.shutdown()
        server.server_close()
        thread.join(WAIT)
