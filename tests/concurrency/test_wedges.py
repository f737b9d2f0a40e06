"""Nothing wedges: every claim a request takes is given back on every way out.

Each test first leaves a page in the state that used to wedge it (a client gone before
the first byte, a provider that overran its deadline once, a body the server closed
without reading it, a client that stopped reading), then shows the next request is
answered at once and the page is cached again.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import pytest
from werkzeug.test import Client

from sitemap_middleware import Sitemaps

from ..conftest import Receive, Recorder, http_scope, plain_wsgi_app, wait_until
from ..servers import Server, uvicorn_serving
from ..test_asgi_raw import BASE, RecordingApp
from ..xsd import locs, validate

PAGE = "/sitemap-products-1.xml"
SOON = 8.0  # seconds: far less than the 60 s a wedged page made every later request wait


class Gone:
    """A ``receive`` whose client hung up before the response started."""

    async def __call__(self) -> dict[str, Any]:
        return {"type": "http.disconnect"}


class Gate:
    """A provider that waits for ``open`` before its first URL, the first ``closed`` times."""

    def __init__(self, closed: int = 1, rows: int = 10) -> None:
        self.open = threading.Event()
        self.closed = closed
        self.rows = rows
        self.calls = 0

    def __call__(self) -> Iterator[str]:
        self.calls += 1
        if self.calls <= self.closed:
            self.open.wait(10)
        yield from (f"/p/{n}" for n in range(self.rows))


def cold(provider: Any, **options: Any) -> Sitemaps:
    sitemaps = Sitemaps(base_url=BASE, **options)
    sitemaps.add_provider("products", provider, page_size=5)
    return sitemaps


def asgi_get(app: Any, path: str = PAGE, receive: Any = None) -> Recorder:
    send = Recorder()

    async def go() -> None:
        with anyio.fail_after(SOON):
            await app(http_scope(path), receive or Receive(), send)

    anyio.run(go)
    return send


def test_asgi_client_gone_before_the_first_byte_leaves_the_page_answerable():
    sitemaps = cold(Gate(closed=0))
    app = sitemaps.asgi(RecordingApp())
    asgi_get(app, receive=Gone())  # rendered to a client that already left
    again = asgi_get(app)
    assert again.status == 200
    assert locs(validate(again.body)) == [f"{BASE}/p/{n}" for n in range(5)]
    assert asgi_get(app).status == 200
    assert sitemaps.stats.snapshot()["products"]["cache_hits"] == 1  # the page was stored again


def test_asgi_server_that_fails_to_start_the_response_leaves_the_page_answerable():
    # The render has begun (the first request leads it) but its response never starts:
    # nobody produces it then, and nothing may be left for later requests to join.
    sitemaps = cold(Gate(closed=0))
    app = sitemaps.asgi(RecordingApp())

    async def broken(message: dict[str, Any]) -> None:
        raise OSError("the connection broke")

    async def go() -> None:
        with anyio.fail_after(SOON), pytest.raises(OSError, match="broke"):
            await app(http_scope(PAGE), Receive(), broken)

    anyio.run(go)
    again = asgi_get(app)
    assert again.status == 200
    assert locs(validate(again.body)) == [f"{BASE}/p/{n}" for n in range(5)]


def test_wsgi_server_that_fails_to_start_the_response_leaves_the_page_answerable():
    sitemaps = cold(Gate(closed=0))
    app = sitemaps.wsgi(plain_wsgi_app)

    def broken(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
        raise OSError("the connection broke")

    environ = {"REQUEST_METHOD": "GET", "PATH_INFO": PAGE, "SCRIPT_NAME": "", "wsgi.url_scheme": "https"}
    with pytest.raises(OSError, match="broke"):
        app(environ, broken)
    again = Client(app).get(PAGE)
    assert again.status_code == 200
    assert locs(validate(again.get_data())) == [f"{BASE}/p/{n}" for n in range(5)]


def test_asgi_client_gone_while_page_n_is_measured_leaves_it_answerable():
    sitemaps = cold(Gate(closed=0))
    app = sitemaps.asgi(RecordingApp())
    asgi_get(app, "/sitemap-products-2.xml", receive=Gone())
    again = asgi_get(app, "/sitemap-products-2.xml")
    assert again.status == 200
    assert locs(validate(again.body)) == [f"{BASE}/p/{n}" for n in range(5, 10)]


def test_asgi_provider_late_once_then_recovered_is_answered_at_once():
    gate = Gate(closed=1)
    sitemaps = cold(gate, provider_timeout=0.2)
    app = sitemaps.asgi(RecordingApp())
    try:
        assert asgi_get(app).status == 503  # past its deadline: the render is abandoned
        again = asgi_get(app)  # the provider answers at once now
    finally:
        gate.open.set()
    assert again.status == 200
    assert len(locs(validate(again.body))) == 5


def test_wsgi_helpers_provider_late_once_then_recovered_is_answered_at_once():
    gate = Gate(closed=1)
    sitemaps = cold(gate, provider_timeout=0.2)
    client = Client(sitemaps.wsgi(plain_wsgi_app, helper_threads=2))
    try:
        assert client.get(PAGE).status_code == 503
        result: list[Any] = []
        worker = threading.Thread(target=lambda: result.append(client.get(PAGE)))
        worker.start()
        worker.join(SOON)
    finally:
        gate.open.set()
    assert not worker.is_alive(), "the page stayed wedged"
    assert result[0].status_code == 200
    assert result[0].get_data().count(b"<url>") == 5


def test_wsgi_body_closed_unread_leaves_the_page_answerable():
    sitemaps = cold(Gate(closed=0))
    app = sitemaps.wsgi(plain_wsgi_app)
    environ = {
        "REQUEST_METHOD": "GET",
        "PATH_INFO": PAGE,
        "SCRIPT_NAME": "",
        "SERVER_NAME": "shop.example",
        "SERVER_PORT": "443",
        "wsgi.url_scheme": "https",
    }
    body = app(environ, lambda status, headers, exc_info=None: None)
    body.close()  # type: ignore[attr-defined]  # PEP 3333 allows closing without iterating
    result: list[Any] = []
    worker = threading.Thread(target=lambda: result.append(Client(app).get(PAGE).get_data()))
    worker.start()
    worker.join(SOON)
    assert not worker.is_alive(), "the page stayed wedged"
    assert result[0].count(b"<url>") == 5


class StuckSend(Recorder):
    """A client that takes the response start and then never another byte."""

    def __init__(self) -> None:
        super().__init__()
        self.stuck = anyio.Event()

    async def __call__(self, message: dict[str, Any]) -> None:
        await super().__call__(message)
        if message["type"] == "http.response.body" and message.get("more_body"):
            self.stuck.set()
            await anyio.sleep_forever()


def test_asgi_client_that_stops_reading_holds_no_render_slot_and_is_aborted_after_send_timeout():
    sitemaps = cold(Gate(closed=0, rows=3000))
    sitemaps.add_provider("pages", lambda: ["/", "/about"])
    app = sitemaps.asgi(RecordingApp(), max_renders=1, send_timeout=0.3)
    stuck, other = StuckSend(), Recorder()
    errors: list[BaseException] = []

    async def reader_that_stops() -> None:
        try:
            await app(http_scope(PAGE), Receive(), stuck)
        except Exception as error:  # the aborted response: the server drops the connection
            errors.append(error)

    async def scenario() -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(reader_that_stops)
            await stuck.stuck.wait()  # it holds the only render slot now
            with anyio.fail_after(SOON):
                await app(http_scope("/sitemap-pages-1.xml"), Receive(), other)

    anyio.run(scenario)
    assert other.status == 200
    assert errors and "client" in str(errors[0]).lower()


def test_followers_of_a_leader_whose_client_stopped_reading_are_answered():
    gate = Gate(closed=0, rows=3000)
    sitemaps = cold(gate, cache=True)
    sitemaps.add_provider("big", lambda: [f"/b/{n}" for n in range(20_000)])
    app = sitemaps.asgi(RecordingApp(), send_timeout=60)
    stuck, follower = StuckSend(), Recorder()

    async def scenario() -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(app, http_scope("/sitemap-big-1.xml"), Receive(), stuck)
            await stuck.stuck.wait()  # the leader's client stopped reading
            with anyio.fail_after(SOON):
                await app(http_scope("/sitemap-big-1.xml"), Receive(), follower)
            group.cancel_scope.cancel()

    anyio.run(scenario)
    assert follower.status == 200
    assert len(locs(validate(follower.body))) == 20_000


async def cancels_itself() -> AsyncIterator[str]:
    raise asyncio.CancelledError("a task of the provider's own was cancelled")
    yield "/never"  # pragma: no cover


def test_async_provider_raising_cancelled_error_gets_503_and_is_counted(make_client):
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.add_provider("products", cancels_itself)
    response = make_client(sitemaps).get(PAGE)
    assert response.status == 503
    assert response.headers["Retry-After"]
    assert sitemaps.stats.snapshot()["products"]["provider_errors"] == 1


def test_a_hung_sync_provider_never_holds_more_threads_than_render_threads():
    release = threading.Event()
    inside = [0]
    most = [0]
    lock = threading.Lock()

    def hung() -> Iterator[str]:
        with lock:
            inside[0] += 1
            most[0] = max(most[0], inside[0])
        try:
            release.wait()
            yield "/p/1"
        finally:
            with lock:
                inside[0] -= 1

    sitemaps = Sitemaps(base_url=BASE, provider_timeout=0.1, cache=None)
    sitemaps.add_provider("products", hung)
    app = sitemaps.asgi(RecordingApp(), render_threads=2)
    statuses: list[int] = []

    async def scenario() -> None:
        for _ in range(8):
            send = Recorder()
            await app(http_scope(PAGE), Receive(), send)
            statuses.append(send.status)

    try:
        anyio.run(scenario)
    finally:
        release.set()
    assert statuses == [503] * 8
    assert most[0] <= 2
    # Two timed out in the provider; the rest found no thread free: a queue, not the provider.
    counters = sitemaps.stats.snapshot()["products"]
    assert (counters["provider_errors"], counters["busy"]) == (2, 6)


@pytest.mark.server
@pytest.mark.parametrize("http", ["h11", "httptools"])
def test_uvicorn_client_gone_before_the_first_byte_leaves_the_page_answerable(http):
    gate = Gate(closed=1)
    sitemaps = cold(gate)
    with uvicorn_serving(sitemaps.asgi(RecordingApp()), http=http) as port:
        with socket.create_connection(("127.0.0.1", port)) as hung_up:
            hung_up.sendall(f"GET {PAGE} HTTP/1.1\r\nHost: shop.example\r\n\r\n".encode())
            wait_until(lambda: gate.calls == 1, "the provider to be asked")
        # The client is gone while its page waits for the provider's first URL.
        gate.open.set()
        started = time.monotonic()
        got = Server(port, "none").get(PAGE)
        again = Server(port, "none").get(PAGE)
    assert got.status == 200
    assert len(locs(validate(got.body))) == 5
    assert time.monotonic() - started < SOON
    assert again.headers["ETag"]  # stored again: the page is whole once more
