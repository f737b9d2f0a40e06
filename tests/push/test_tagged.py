"""`CloudflarePurge` and `FastlyPurge`: purge by cache tag, against a loopback server speaking each
API (its paths, credentials, bodies and answers), for the tags the changed documents carry."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from sitemap_middleware import ConfigurationError
from sitemap_middleware.changes import ChangeLog
from sitemap_middleware.push import CloudflarePurge, FastlyPurge

from ..conftest import BASE, SitemapClient
from .purging import Shelf, deliver, shop

PAGE_TWO_TAGS = ["sitemap-products-2", "sitemap-index-1", "sitemap-robots"]


@dataclass
class Call:
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class LoopbackApi:
    """A CDN's purge API on 127.0.0.1: records each POST, answers ``status`` and ``answer``."""

    url: str = ""
    calls: list[Call] = field(default_factory=list)
    status: int = 200
    answer: Any = field(default_factory=lambda: {"success": True, "errors": [], "result": {"id": "p1"}})


@contextmanager
def loopback_api() -> Iterator[LoopbackApi]:
    api = LoopbackApi()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            body = json.loads(raw) if raw else None
            api.calls.append(Call(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
            payload = json.dumps(api.answer).encode()
            self.send_response(api.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    api.url = f"http://127.0.0.1:{server.server_port}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield api
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def changed(
    log: ChangeLog, target: Any, rows: int = 9, edit: Callable[[Shelf], None] | None = None, **options: Any
) -> Any:
    """A shop with ``target`` subscribed after its baseline, then ``edit`` (row 4, page 2, by default)
    rendered: the shop and the report of the target's delivery."""
    shelf = Shelf(rows)
    sitemaps = shop(log, shelf, **options)
    sitemaps.refresh()
    target.bind(sitemaps)
    log.subscribe(target.consumer(BASE))
    if edit is None:
        shelf.rows["/p/004"] = "2026-11-30"
    else:
        edit(shelf)
    sitemaps.refresh()
    try:
        return sitemaps, deliver(log, target)
    finally:
        target.close()


def test_cloudflare_purges_the_tags_the_changed_documents_carry(
    log: ChangeLog, make_client: Callable[..., SitemapClient]
) -> None:
    with loopback_api() as api:
        purge = CloudflarePurge("zone-1", "secret", endpoint=api.url)
        sitemaps, report = changed(log, purge, cache_tags="Cache-Tag")
    assert report is not None and not report.retry and list(report.purged) == PAGE_TWO_TAGS
    [call] = api.calls
    assert call.path == "/zones/zone-1/purge_cache"
    assert call.headers["authorization"] == "Bearer secret"
    assert call.body == {"tags": PAGE_TWO_TAGS}
    page = make_client(sitemaps).get("/sitemap-products-2.xml")
    assert "sitemap-products-2" in page.headers["Cache-Tag"].split(",")  # what was purged is what it carries


def test_cloudflare_sends_at_most_30_tags_a_call(log: ChangeLog) -> None:
    def every_row(shelf: Shelf) -> None:
        for path in shelf.rows:
            shelf.rows[path] = "2026-11-30"

    with loopback_api() as api:
        _, report = changed(log, CloudflarePurge("z", "t", endpoint=api.url), rows=120, edit=every_row)
    assert report is not None and not report.retry
    assert [len(call.body["tags"]) for call in api.calls] == [30, 12]  # 40 pages, index 1, robots.txt
    assert [tag for call in api.calls for tag in call.body["tags"]] == list(report.purged)


@pytest.mark.parametrize(
    ("status", "answer"),
    [
        pytest.param(200, {"success": False, "errors": [{"code": 1134, "message": "no"}]}, id="not-success"),
        pytest.param(429, {"success": False}, id="rate-limited"),
        pytest.param(503, None, id="down"),
    ],
)
def test_cloudflare_answers_other_than_success_are_reported_for_retry(
    log: ChangeLog, status: int, answer: object
) -> None:
    with loopback_api() as api:
        api.status, api.answer = status, answer
        purge = CloudflarePurge("z", "t", endpoint=api.url)
        _, report = changed(log, purge)
    assert report is not None and report.retry and report.purged == ()
    assert log.pending(purge.consumer(BASE)) > 0


def test_fastly_purges_surrogate_keys_in_one_call_softly_when_asked(log: ChangeLog) -> None:
    with loopback_api() as api:
        api.answer = dict.fromkeys(PAGE_TWO_TAGS, "purge-id")
        _, report = changed(
            log, FastlyPurge("svc", "key", endpoint=api.url, soft=True), cache_tags="Surrogate-Key"
        )
    assert report is not None and not report.retry
    [call] = api.calls
    assert call.path == "/service/svc/purge"
    assert call.headers["fastly-key"] == "key"
    assert call.headers["surrogate-key"].split(" ") == PAGE_TWO_TAGS
    assert call.headers["fastly-soft-purge"] == "1"


def test_fastly_that_refuses_is_reported_for_retry(log: ChangeLog) -> None:
    with loopback_api() as api:
        api.status = 401
        _, report = changed(log, FastlyPurge("svc", "bad", endpoint=api.url))
    assert report is not None and report.retry
    assert report.failed[0][1].startswith("HTTP 401")


@pytest.mark.parametrize("cls", [CloudflarePurge, FastlyPurge])
@pytest.mark.parametrize(("account", "token"), [("", "t"), ("z", ""), ("a/b", "t"), ("z", "t\r\nX: y")])
def test_a_missing_or_malformed_id_or_token_is_refused_at_construction(
    cls: type[CloudflarePurge] | type[FastlyPurge], account: str, token: str
) -> None:
    with pytest.raises(ConfigurationError):
        cls(account, token)
