"""IndexNow from the change log, end to end: a loopback engine behind real servers.

Pages are rendered by crawlers' requests through uvicorn and werkzeug (`serve`) or by
`Sitemaps.refresh`; each change the log records reaches the engine once, batched,
coalesced, retried on 429 and 5xx (``Retry-After`` honoured) and never on 403.
"""

from __future__ import annotations

import http.client
import logging
import time
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sitemap_middleware import ConfigurationError, Sitemaps
from sitemap_middleware.changes import ChangeLog
from sitemap_middleware.push import IndexNow, Retry

from ..conftest import BASE, counter
from ..servers import Server
from .conftest import KEY, Shelf, locs
from .engine import Answer, Engine

CONSUMER = f"indexnow|{BASE}"
Make = Callable[..., Sitemaps]


def stat(sitemaps: Sitemaps, name: str) -> int:
    return counter(sitemaps, CONSUMER, name)


def crawl(server: Server) -> None:
    """What a crawler reads: the index (which plans the section), then its page."""
    server.fetch("/sitemap.xml")
    server.fetch("/sitemap-products-1.xml")


def edit(shelf: Shelf) -> list[str]:
    """An insert, an update and a delete; the URLs the engine must be told of."""
    shelf.rows["/p/00001a"] = None
    shelf.rows["/p/00003"] = "2026-11-30"
    del shelf.rows["/p/00002"]
    return locs("/p/00001a", "/p/00002", "/p/00003")


def test_each_change_a_crawler_sees_is_posted_once_with_the_protocols_body(
    serve: Callable[[Sitemaps], Server], engine: Engine, make_shop: Make
) -> None:
    shelf = Shelf(5)
    sitemaps = make_shop(shelf)
    server = serve(sitemaps)
    crawl(server)  # the baseline: nothing to tell
    expected = edit(shelf)
    sitemaps.invalidate()
    crawl(server)
    [post] = engine.wait_posts(1)
    assert post.path == "/indexnow"
    assert post.headers["content-type"] == "application/json; charset=utf-8"
    assert post.body.keys() == {"host", "key", "urlList"}
    assert (post.body["host"], post.body["key"]) == ("shop.example", KEY)
    assert sorted(post.urls) == expected
    assert sitemaps.push_now() == []  # nothing waits
    assert len(engine.posts) == 1
    assert (stat(sitemaps, "sent"), stat(sitemaps, "pending")) == (1, 0)


def test_a_url_changed_several_times_in_one_delivery_is_sent_once(engine: Engine, make_shop: Make) -> None:
    shelf = Shelf(3)
    sitemaps = make_shop(shelf, window=30.0)  # only push_now delivers
    sitemaps.refresh()
    for day in ("2026-01-01", "2026-01-02", "2026-01-03"):
        shelf.rows["/p/00001"] = day
        sitemaps.refresh()
    [pushed] = sitemaps.push_now()
    assert pushed.changes == 3
    assert engine.wait_posts(1)[0].urls == locs("/p/00001")


def test_ten_thousand_and_one_urls_are_two_posts_of_at_most_ten_thousand(
    engine: Engine, make_shop: Make
) -> None:
    shelf = Shelf(1)
    sitemaps = make_shop(shelf, window=30.0)
    sitemaps.refresh()
    shelf.rows.update({f"/new/{n:05d}": None for n in range(10_001)})
    sitemaps.refresh()
    assert len(sitemaps.push_now()) == 2
    first, second = engine.wait_posts(2)
    assert len(first.urls) <= 10_000 and len(second.urls) <= 10_000
    assert sorted(first.urls + second.urls) == locs(*(f"/new/{n:05d}" for n in range(10_001)))


def test_a_burst_of_saves_inside_the_window_is_one_post(engine: Engine, make_shop: Make) -> None:
    shelf = Shelf(3)
    make_shop(shelf).refresh()  # the baseline, by another process: this one's thread starts below
    sitemaps = make_shop(shelf, window=1.0)
    for n in range(3):
        shelf.rows[f"/p/new-{n}"] = None
        sitemaps.refresh()
    [post] = engine.wait_posts(1)
    assert sorted(post.urls) == locs("/p/new-0", "/p/new-1", "/p/new-2")
    assert sitemaps.push_now() == [] and len(engine.posts) == 1


def test_a_429_is_retried_no_sooner_than_its_retry_after(engine: Engine, make_shop: Make) -> None:
    engine.script(Answer(429, {"Retry-After": "1"}), Answer(200))
    shelf = Shelf(3)
    sitemaps = make_shop(shelf)
    sitemaps.refresh()
    expected = edit(shelf)
    sitemaps.refresh()
    first, second = engine.wait_posts(2)
    assert second.at - first.at >= 1.0  # the backoff alone would be 0.05 s
    assert sorted(first.urls) == sorted(second.urls) == expected
    assert sitemaps.push_now() == []  # waits for the thread's delivery to end: nothing left
    assert (stat(sitemaps, "retried"), stat(sitemaps, "sent")) == (1, 1)


@pytest.mark.parametrize("status", [500, 503])
def test_a_server_error_is_retried_with_backoff(engine: Engine, make_shop: Make, status: int) -> None:
    engine.script(Answer(status), Answer(status), Answer(202))  # 202: sent, key validation pending
    shelf = Shelf(3)
    sitemaps = make_shop(shelf)
    sitemaps.refresh()
    expected = edit(shelf)
    sitemaps.refresh()
    posts = engine.wait_posts(3)
    assert all(sorted(post.urls) == expected for post in posts)
    assert sitemaps.push_now() == [] and len(engine.posts) == 3
    assert (stat(sitemaps, "retried"), stat(sitemaps, "sent"), stat(sitemaps, "pending")) == (2, 1, 0)


@pytest.mark.parametrize("status", [400, 403, 422])
def test_a_refusal_is_logged_with_its_body_and_never_retried(
    engine: Engine, make_shop: Make, caplog: pytest.LogCaptureFixture, status: int
) -> None:
    engine.script(Answer(status, body=b"Key not valid for this host"))
    shelf = Shelf(3)
    sitemaps = make_shop(shelf)
    sitemaps.refresh()
    edit(shelf)
    with caplog.at_level(logging.ERROR, logger="sitemap_middleware"):
        sitemaps.refresh()
        engine.wait_posts(1)
        assert sitemaps.push_now() == []  # acknowledged as refused: nothing waits
    assert len(engine.posts) == 1
    assert (stat(sitemaps, "refused"), stat(sitemaps, "retried"), stat(sitemaps, "pending")) == (1, 0, 0)
    assert any(f"{status}: Key not valid for this host" in record.getMessage() for record in caplog.records)


def test_a_restart_resends_what_was_not_answered_and_nothing_answered(
    engine: Engine, make_shop: Make
) -> None:
    engine.script(Answer(503))
    shelf = Shelf(3)
    before = make_shop(shelf, window=30.0)
    before.refresh()
    expected = edit(shelf)
    before.refresh()
    [pushed] = before.push_now()
    assert isinstance(pushed.outcome, Retry)  # answered 503: not sent
    before.close()
    after = make_shop(shelf, window=30.0)  # a new process on the same log file
    after.push_now()
    assert [sorted(post.urls) for post in engine.wait_posts(2)] == [expected, expected]
    again = make_shop(shelf, window=30.0)
    assert again.push_now() == []
    shelf.rows["/p/00004"] = "2026-12-01"
    again.refresh()
    again.push_now()
    assert engine.wait_posts(3)[2].urls == locs("/p/00004")


def test_the_key_file_is_answered_before_the_app(
    serve: Callable[[Sitemaps], Server], make_shop: Make
) -> None:
    server = serve(make_shop(Shelf(1)))
    got = server.get(f"/{KEY}.txt")
    assert (got.status, got.headers["Content-Type"], got.body) == (
        200,
        "text/plain; charset=utf-8",
        KEY.encode(),
    )
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        connection.request("HEAD", f"/{KEY}.txt")
        head = connection.getresponse()
        assert (head.status, head.getheader("Content-Length"), head.read()) == (200, str(len(KEY)), b"")
    finally:
        connection.close()
    other = server.get("/another-key-file.txt")
    assert other.status == 404 and KEY.encode() not in other.body  # the app's own answer


def test_page_requests_do_not_wait_for_an_engine_that_does_not_answer(
    serve: Callable[[Sitemaps], Server], engine: Engine, make_shop: Make
) -> None:
    engine.script(Answer(stall=True))  # held until the test ends
    shelf = Shelf(5)
    sitemaps = make_shop(shelf)
    server = serve(sitemaps)
    crawl(server)
    edit(shelf)
    sitemaps.invalidate()
    crawl(server)
    engine.wait_posts(1)  # the push thread is inside its POST now
    for n in range(3):
        shelf.rows[f"/p/9999{n}"] = None
        sitemaps.invalidate()
        started = time.monotonic()
        for path in ("/sitemap-products-1.xml", "/sitemap.xml", "/robots.txt"):
            assert server.get(path).status == 200
        assert time.monotonic() - started < 1.0  # a bound, not a benchmark


@given(st.text(alphabet=st.characters(codec="ascii"), max_size=140))
def test_a_key_outside_the_protocols_rules_is_a_configuration_error(key: str) -> None:
    valid = 8 <= len(key) <= 128 and all(c.isascii() and (c.isalnum() or c == "-") for c in key)
    if valid:
        assert IndexNow(key=key).key_file == (f"/{key}.txt", key.encode())
    else:
        with pytest.raises(ConfigurationError, match="IndexNow key"):
            IndexNow(key=key)


def test_push_without_a_change_log_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="changes=ChangeLog"):
        Sitemaps(base_url=BASE, push=[IndexNow(key=KEY)])


def test_a_key_location_path_is_sent_for_each_site(tmp_path: object) -> None:
    target = IndexNow(key=KEY, key_location=f"/shop/{KEY}.txt")
    log = ChangeLog.sqlite(f"{tmp_path}/changes.sqlite3")
    sitemaps = Sitemaps(base_url=BASE, changes=log, push=[target])
    from sitemap_middleware.changes.model import Change, Delivery

    delivery = Delivery("c", "h", (Change(f"{BASE}/a", "added", None, "s"),), 1)  # type: ignore[arg-type]
    assert target.body(delivery, BASE)["keyLocation"] == f"{BASE}/shop/{KEY}.txt"
    sitemaps.close()
