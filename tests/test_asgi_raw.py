"""The ASGI adapter under hand-built scopes and a recording ``send``: pass-through, root_path, streaming."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from sitemap_middleware import Sitemaps

from .conftest import BASE, Receive, Recorder, await_until, http_scope, make_shop
from .xsd import locs, validate

Message = dict[str, Any]


def shop() -> Sitemaps:
    """The shared shop's pages alone: these tests watch the adapter, not the documents."""
    return make_shop(sections=["pages"])


class RecordingApp:
    """The wrapped app: records exactly what it was called with, answers nothing."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, Any, Any]] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.calls.append((scope, receive, send))


def run(app: Any, scope: dict[str, Any], send: Any, receive: Any = None) -> None:
    anyio.run(app, scope, receive or Receive(), send)


# -- pass-through ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "scope",
    [
        pytest.param(
            {**http_scope("/sitemap-index.xml"), "type": "websocket", "subprotocols": []},
            id="websocket-on-our-path",
        ),
    ],
)
def test_non_http_scope_reaches_the_app_untouched(scope: dict[str, Any]) -> None:
    app = RecordingApp()
    send, receive = Recorder(), Receive()
    run(shop().asgi(app), scope, send, receive)
    [(seen_scope, seen_receive, seen_send)] = app.calls
    assert seen_scope is scope
    assert seen_receive is receive
    assert seen_send is send
    assert send.messages == []


class LifespanApp:
    """Answers the lifespan protocol as Starlette does; keeps what it was called with and sent."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, Any]] = []
        self.sent: list[Message] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.calls.append((scope, receive))
        for phase in ("startup", "shutdown"):
            assert (await receive())["type"] == f"lifespan.{phase}"
            message = {"type": f"lifespan.{phase}.complete"}
            self.sent.append(message)
            await send(message)


class LifespanReceive:
    """A server's ``receive`` for a lifespan: startup, then shutdown."""

    def __init__(self) -> None:
        self._messages = iter([{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}])

    async def __call__(self) -> Message:
        return next(self._messages)


def lifespan_scope() -> dict[str, Any]:
    return {"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}


def test_lifespan_reaches_the_app_with_its_scope_and_its_messages_reach_the_server_as_sent() -> None:
    app = LifespanApp()
    send, receive, scope = Recorder(), LifespanReceive(), lifespan_scope()
    run(shop().asgi(app), scope, send, receive)
    [(seen_scope, seen_receive)] = app.calls
    assert seen_scope is scope
    assert seen_receive is receive
    assert len(send.messages) == 2
    assert all(got is sent for got, sent in zip(send.messages, app.sent, strict=True))


def test_an_app_refusing_the_lifespan_fails_it_as_it_would_alone() -> None:
    async def refusing(scope: Any, receive: Any, send: Any) -> None:
        raise RuntimeError("no lifespan here")  # servers read this as "lifespan unsupported"

    with pytest.raises(RuntimeError, match="no lifespan here"):
        run(shop().asgi(refusing), lifespan_scope(), Recorder(), LifespanReceive())


@pytest.mark.parametrize(
    ("path", "root_path"),
    [
        pytest.param("/other", "", id="other-path"),
        pytest.param("/sitemap-foo-1.xml", "", id="unregistered-section"),
        pytest.param("/shop/sitemap-foo-1.xml", "/shop", id="unregistered-section-below-root-path"),
        pytest.param("/shopping/sitemap-index.xml", "/shop", id="path-only-sharing-the-root-paths-prefix"),
    ],
)
def test_http_path_we_do_not_own_reaches_the_app_with_the_same_scope_and_send(
    path: str, root_path: str
) -> None:
    app = RecordingApp()
    send, receive = Recorder(), Receive()
    scope = http_scope(path, root_path)
    snapshot = dict(scope)
    run(shop().asgi(app), scope, send, receive)
    [(seen_scope, seen_receive, seen_send)] = app.calls
    assert seen_scope is scope
    assert seen_scope == snapshot
    assert seen_receive is receive
    assert seen_send is send


def test_http_path_we_own_never_reaches_the_app() -> None:
    app = RecordingApp()
    send = Recorder()
    run(shop().asgi(app), http_scope("/sitemap-pages-1.xml"), send)
    assert app.calls == []
    assert send.status == 200
    assert locs(validate(send.body)) == [f"{BASE}/", f"{BASE}/about"]


# -- root_path -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        pytest.param("/shop/sitemap-index.xml", id="path-includes-root-path"),
        pytest.param("/sitemap-index.xml", id="path-excludes-root-path"),
    ],
)
def test_index_below_root_path_lists_pages_under_it(path: str) -> None:
    send = Recorder()
    run(shop().asgi(RecordingApp()), http_scope(path, root_path="/shop"), send)
    assert send.status == 200
    assert locs(validate(send.body)) == [f"{BASE}/shop/sitemap-pages-1.xml"]


@pytest.mark.parametrize(
    "path",
    [
        pytest.param("/shop/sitemap-pages-1.xml", id="path-includes-root-path"),
        pytest.param("/sitemap-pages-1.xml", id="path-excludes-root-path"),
    ],
)
def test_page_below_root_path_is_served(path: str) -> None:
    send = Recorder()
    run(shop().asgi(RecordingApp()), http_scope(path, root_path="/shop"), send)
    assert send.status == 200
    assert locs(validate(send.body)) == [f"{BASE}/shop/", f"{BASE}/shop/about"]


def test_root_path_with_a_trailing_slash_still_routes_below_it() -> None:
    send = Recorder()
    run(shop().asgi(RecordingApp()), http_scope("/shop/sitemap-index.xml", root_path="/shop/"), send)
    assert send.status == 200
    assert locs(validate(send.body)) == [f"{BASE}/shop/sitemap-pages-1.xml"]


# -- streaming -------------------------------------------------------------------------------------


def test_page_streams_its_first_bytes_before_the_provider_finishes() -> None:
    first_body_sent = threading.Event()
    provider_saw_first_body: list[bool] = []

    def slow() -> Iterator[str]:
        yield "/p/0"
        # Resumed only after the first chunk went out when the page streams; a buffered
        # page would hold the chunk back until the provider is done, and this times out.
        provider_saw_first_body.append(first_body_sent.wait(timeout=10))
        yield from (f"/p/{n}" for n in range(1, 2000))

    class Send(Recorder):
        async def __call__(self, message: Message) -> None:
            await super().__call__(message)
            if message["type"] == "http.response.body" and message.get("body"):
                first_body_sent.set()

    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.provider("products")(slow)
    send = Send()
    run(sitemaps.asgi(RecordingApp()), http_scope("/sitemap-products-1.xml"), send)
    assert provider_saw_first_body == [True]
    bodies = [m for m in send.messages if m["type"] == "http.response.body"]
    assert len(bodies) > 2
    assert bodies[0]["body"].startswith(b"<?xml")
    assert len(locs(validate(send.body))) == 2000


# -- render slots (max_renders) ------------------------------------------------------------------


class HeldSend(Recorder):
    """A client that takes the headers and the first chunk, then stops reading until `resume`."""

    def __init__(self) -> None:
        super().__init__()
        self.resume = anyio.Event()
        self.first_chunk = anyio.Event()

    async def __call__(self, message: Message) -> None:
        await super().__call__(message)
        if message["type"] == "http.response.body" and message.get("more_body"):
            self.first_chunk.set()
            await self.resume.wait()  # a slow reader: the server cannot send more


def slotted(cache: bool = False) -> Sitemaps:
    sitemaps = Sitemaps(base_url=BASE, provider_timeout=0.3, cache=cache)
    sitemaps.add_provider("products", lambda: [f"/p/{n}" for n in range(3000)], page_size=1000)
    sitemaps.add_provider("pages", lambda: ["/", "/about"])
    return sitemaps


def test_a_streaming_page_gives_its_render_slot_back_while_its_client_does_not_read() -> None:
    sitemaps = slotted()
    app = sitemaps.asgi(RecordingApp(), max_renders=1)
    held, meanwhile = HeldSend(), Recorder()

    async def scenario() -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(app, http_scope("/sitemap-products-1.xml"), Receive(), held)
            await held.first_chunk.wait()  # the page streams; its client stops reading
            await app(http_scope("/sitemap-pages-1.xml"), Receive(), meanwhile)  # the only slot
            held.resume.set()  # the stream takes the slot back and goes on

    anyio.run(scenario)
    assert meanwhile.status == 200
    assert held.status == 200
    assert len(locs(validate(held.body))) == 1000
    assert "busy" not in sitemaps.stats.snapshot()["pages"]  # counted only once it happens


def test_a_page_rendering_holds_its_render_slot_and_others_get_503_meanwhile() -> None:
    sitemaps = slotted()
    rendering, release = threading.Event(), threading.Event()

    def slow() -> Iterator[str]:
        rendering.set()
        release.wait(5)  # stalled: cut after provider_timeout (0.3 s) and THREAD_GRACE (0.5 s)
        yield "/slow"

    sitemaps.add_provider("slow", slow)
    app = sitemaps.asgi(RecordingApp(), max_renders=1)
    first, blocked, later = Recorder(), Recorder(), Recorder()

    async def scenario() -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(app, http_scope("/sitemap-slow-1.xml"), Receive(), first)
            while not rendering.is_set():
                await anyio.sleep(0.01)
            await app(http_scope("/sitemap-pages-1.xml"), Receive(), blocked)  # waits 0.3 s: busy
            release.set()
        await app(http_scope("/sitemap-pages-1.xml"), Receive(), later)  # the slot is free again

    anyio.run(scenario)
    assert blocked.status == 503
    assert blocked.body == b"Sitemap temporarily unavailable\n"
    assert later.status == 200
    assert sitemaps.stats.snapshot()["pages"]["busy"] == 1


@pytest.mark.parametrize(
    ("path", "status"),
    [
        pytest.param("/sitemap-products-9.xml", 404, id="page-past-the-end"),
        pytest.param("/sitemap-index.xml", 200, id="index-whole-bytes"),
        pytest.param("/sitemap-broken-1.xml", 503, id="provider-error"),
        pytest.param("/sitemap-products-2.xml", 200, id="streamed-page"),
    ],
)
def test_every_way_a_render_ends_gives_its_slot_back(path: str, status: int) -> None:
    sitemaps = slotted()
    if "broken" in path:

        def broken() -> list[str]:
            raise RuntimeError("database down")

        sitemaps.add_provider("broken", broken)
    app = sitemaps.asgi(RecordingApp(), max_renders=1)
    sends = [Recorder() for _ in range(4)]

    async def scenario() -> None:  # one event loop: the slots are per loop
        for send in sends[:3]:  # with one slot, a slot kept by one request makes the next a 503
            await app(http_scope(path), Receive(), send)
        await app(http_scope("/sitemap-pages-1.xml"), Receive(), sends[3])

    anyio.run(scenario)
    assert [send.status for send in sends] == [status, status, status, 200]
    assert all("busy" not in counters for counters in sitemaps.stats.snapshot().values())


def test_a_follower_reads_the_whole_page_while_the_first_client_has_stopped_reading() -> None:
    resumed = threading.Event()  # the provider waits mid-page until the follower has joined

    def products() -> Iterator[str]:
        for n in range(3000):
            if n == 500:
                assert resumed.wait(10)
            yield f"/p/{n}"

    sitemaps = Sitemaps(base_url=BASE, provider_timeout=10)
    sitemaps.add_provider("products", products, page_size=1000)
    sitemaps.add_provider("pages", lambda: ["/", "/about"])
    app = sitemaps.asgi(RecordingApp(), max_renders=1)
    leader, follower, other = HeldSend(), Recorder(), Recorder()

    def complete(recorder: Recorder) -> bool:
        return any(m["type"] == "http.response.body" and not m.get("more_body") for m in recorder.messages)

    async def scenario() -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(app, http_scope("/sitemap-products-1.xml"), Receive(), leader)
            await leader.first_chunk.wait()  # the leader's client took one chunk and stopped reading
            group.start_soon(app, http_scope("/sitemap-products-1.xml"), Receive(), follower)
            await await_until(lambda: follower.body, "the follower's first bytes, before the render ends")
            resumed.set()
            # The follower reads the render as it grows, at its own pace: all of it, now.
            await await_until(lambda: complete(follower), "the follower has the whole page")
            # The render is over: its one slot is back, though the first client still holds its socket.
            await app(http_scope("/sitemap-pages-1.xml"), Receive(), other)
            leader.resume.set()

    anyio.run(scenario)
    assert (leader.status, follower.status, other.status) == (200, 200, 200)
    assert follower.body == leader.body
    assert locs(validate(follower.body)) == [f"{BASE}/p/{n}" for n in range(1000)]
    assert sitemaps.stats.snapshot()["products"]["joined_renders"] == 1
    assert sitemaps.stats.snapshot()["products"]["renders"] == 1
