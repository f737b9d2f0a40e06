"""`RedisStore` in one process: two stores on one Redis stand for two workers.

Each test has its own key prefix on the session's redis-server (`redis_server` in conftest),
or a server of its own when it stops it. Losing Redis without stopping it (one worker cut
off while the others go on) goes through a `Partition`, a proxy the test cuts and mends.
`test_fleet.py` beside it shows the same behaviours across real worker processes.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis

from sitemap_middleware import ConfigurationError, Document, InvalidationError, Sitemaps
from sitemap_middleware.concurrency import flights
from sitemap_middleware.redis import RedisStore

from ..conftest import Catalogue, SitemapClient, build, counter, wait_until
from ..redis_server import Partition, RedisServer
from ..servers import Server
from ..xsd import locs, validate

PAGE = "/sitemap-products-1.xml"


@pytest.fixture
def prefix() -> str:
    return f"test-{uuid.uuid4().hex[:12]}:"


@pytest.fixture
def store_on(redis_server: RedisServer, prefix: str) -> Callable[..., RedisStore]:
    """Make a store on the session's server (or ``url``), under this test's prefix."""

    def make(url: str | None = None, **options: object) -> RedisStore:
        options.setdefault("retry_interval", 0.05)
        return RedisStore.from_url(url or redis_server.url, prefix=prefix, **options)  # type: ignore[arg-type]

    return make


def two_workers(
    make_client: Callable[..., SitemapClient], stores: tuple[RedisStore, RedisStore], catalogue: Catalogue
) -> tuple[SitemapClient, SitemapClient, Sitemaps, Sitemaps]:
    """Two `Sitemaps` over one catalogue, each with its own store: two workers of one app."""
    a, _ = build(catalogue, cache=stores[0])
    b, _ = build(catalogue, cache=stores[1])
    return make_client(a), make_client(b), a, b


def page_locs(body: bytes) -> list[str]:
    return locs(validate(body))


def document(size: int) -> Document:
    body = os.urandom(size)  # as incompressible as a gzip body
    return Document(body, uuid.uuid4().hex, 1_780_000_000, size * 4)


def test_a_document_rendered_by_one_worker_is_served_by_another(
    make_client: Callable[..., SitemapClient], store_on: Callable[..., RedisStore]
) -> None:
    catalogue = Catalogue()
    a, b, _, sitemaps_b = two_workers(make_client, (store_on(), store_on()), catalogue)
    first = a.get(PAGE)
    second = b.get(PAGE)
    assert second.status == 200 and second.body == first.body
    assert catalogue.calls == 1
    assert counter(sitemaps_b, "products", "cache_hits") == 1
    etag = second.headers["ETag"]
    assert a.get(PAGE).headers["ETag"] == etag
    assert b.get(PAGE, {"If-None-Match": etag}).status == 304


@pytest.mark.parametrize("section", ["products", None], ids=["section", "everything"])
def test_an_invalidation_on_one_worker_reaches_every_other_at_once(
    make_client: Callable[..., SitemapClient], store_on: Callable[..., RedisStore], section: str | None
) -> None:
    catalogue = Catalogue(count=2)
    a, b, sitemaps_a, _ = two_workers(make_client, (store_on(), store_on()), catalogue)
    for client in (a, b):
        assert client.get(PAGE).status == 200
        assert client.get("/sitemap-index.xml").status == 200
    catalogue.paths.append("/p/new")
    sitemaps_a.invalidate(section)
    assert page_locs(b.get(PAGE).body)[-1] == "https://shop.example/p/new"
    assert page_locs(a.get(PAGE).body)[-1] == "https://shop.example/p/new"


def test_the_plan_measured_by_one_worker_serves_another(
    make_client: Callable[..., SitemapClient], store_on: Callable[..., RedisStore]
) -> None:
    catalogue = Catalogue(count=5)
    a_sitemaps, _ = build(catalogue, cache=store_on(), page_size=2)
    b_sitemaps, _ = build(catalogue, cache=store_on(), page_size=2)
    a, b = make_client(a_sitemaps), make_client(b_sitemaps)
    index = a.get("/sitemap-index.xml")
    assert len(locs(validate(index.body))) == 3
    assert catalogue.calls == 1  # measured once, for the index
    assert page_locs(b.get("/sitemap-products-3.xml").body) == ["https://shop.example/p/4"]
    assert catalogue.calls == 2  # the page itself; its start came from the stored plan
    assert b.get("/sitemap-index.xml").body == index.body


def test_concurrent_cold_requests_on_two_workers_render_once(
    make_client: Callable[..., SitemapClient], store_on: Callable[..., RedisStore]
) -> None:
    release = threading.Event()
    calls: list[int] = []

    def held() -> Iterator[str]:
        calls.append(1)
        assert release.wait(10)
        yield from ("/a", "/b")

    workers = [Sitemaps(base_url="https://shop.example", cache=store_on()) for _ in range(2)]
    clients = []
    for sitemaps in workers:
        sitemaps.add_provider("products", held)
        clients.append(make_client(sitemaps))
    answers: list[bytes] = []
    leader = threading.Thread(target=lambda: answers.append(clients[0].get(PAGE).body))
    leader.start()
    wait_until(lambda: calls, "the first worker renders")
    follower = threading.Thread(target=lambda: answers.append(clients[1].get(PAGE).body))
    follower.start()
    wait_until(lambda: counter(workers[1], "products", "flight_waits") == 1, "the other worker follows")
    release.set()
    leader.join(10)
    follower.join(10)
    assert len(calls) == 1
    assert len(answers) == 2 and answers[0] == answers[1]


def test_a_follower_takes_over_from_a_leader_whose_client_stalls(
    store_on: Callable[..., RedisStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(flights, "CLIENT_PATIENCE", 0.2)
    first, second, third = (store_on(lock_timeout=0.3).flights for _ in range(3))
    lead, slow = first.claim("page|x")
    assert lead
    following, remote = second.claim("page|x")
    assert not following and not remote.over(None)
    slow.sending()  # ...and its client never takes the chunk
    wait_until(lambda: remote.over(None), "the other worker sees the leader stalled")
    took_over, fresh = second.claim("page|x", replacing=remote)
    assert took_over
    slow.release()  # late: it must not end the flight that replaced it
    following, watched = third.claim("page|x")
    assert not following and not watched.over(None)
    fresh.release()
    wait_until(lambda: watched.over(None), "the last worker sees the new leader done")
    assert third.claim("page|x")[0]


def test_a_body_a_worker_keeps_is_served_only_while_redis_holds_the_same(
    store_on: Callable[..., RedisStore],
) -> None:
    a, b = store_on(), store_on()
    first, second = document(1_000), document(1_000)
    a.set("doc|k", first)
    assert a.get("doc|k") is first  # its own copy: Redis holds these very bytes
    b.set("doc|k", second)  # re-rendered elsewhere (its TTL ran out, the data changed)
    got = a.get("doc|k")
    assert got is not None and (got.etag, got.body) == (second.etag, second.body)


def test_documents_live_within_the_byte_budget(store_on: Callable[..., RedisStore]) -> None:
    store = store_on(max_bytes=20_000, local_bytes=0)
    for n in range(40):
        store.set(f"doc|{n}", document(1_000))
    assert 15_000 < store.current_bytes <= 20_000
    assert store.get("doc|0") is None  # the oldest went first
    assert store.get("doc|39") is not None


def test_a_document_larger_than_the_budget_is_served_never_stored(
    store_on: Callable[..., RedisStore],
) -> None:
    store = store_on(max_bytes=4_000)
    store.set("doc|small", document(1_000))
    store.set("doc|huge", document(8_000))
    assert store.get("doc|huge") is None
    assert store.get("doc|small") is not None


def test_documents_expire_after_the_ttl(store_on: Callable[..., RedisStore]) -> None:
    # Redis keeps the time here: its own expiry is what is shown, so the test waits for it.
    store = store_on(ttl=0.3, local_bytes=0)
    store.set("doc|brief", document(100))
    one = store.current_bytes
    assert one > 100 and store.get("doc|brief") is not None
    wait_until(lambda: store.get("doc|brief") is None, "Redis expires the document")
    store.set("doc|next", document(100))
    assert store.current_bytes == one  # the budget no longer counts the expired one


def test_a_document_is_stored_in_redis_once_gzip_compressed(
    make_client: Callable[..., SitemapClient], store_on: Callable[..., RedisStore]
) -> None:
    store = store_on()
    sitemaps, _ = build(Catalogue(count=2_000), cache=store)
    client = make_client(sitemaps)
    identity = client.get(PAGE)
    gzip = client.get(PAGE, {"Accept-Encoding": "gzip"})
    assert gzip.headers["Content-Encoding"] == "gzip"
    assert 0 < store.current_bytes < len(identity.body) // 4


def test_without_redis_every_request_is_rendered_locally_counted_and_logged(
    make_client: Callable[..., SitemapClient],
    store_on: Callable[..., RedisStore],
    redis_server: RedisServer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    partition = Partition(redis_server.port)
    catalogue = Catalogue()
    store = store_on(partition.url)
    sitemaps, _ = build(catalogue, cache=store)
    client = make_client(sitemaps)
    stored = client.get(PAGE).body
    partition.cut()
    with caplog.at_level(logging.WARNING, logger="sitemap_middleware"):
        for _ in range(3):
            got = client.get(PAGE)
            assert (got.status, got.body) == (200, stored)
    assert catalogue.calls == 4  # nothing is kept while Redis is away: every answer is fresh
    counts = store.stats.snapshot()[""]
    assert counts["redis_fallbacks"] == 3 and counts["redis_outages"] == 1
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING and "Redis" in r.getMessage()]
    assert len(warnings) == 1  # once per outage, not once per request
    partition.mend()
    wait_until(
        lambda: client.get(PAGE).status == 200 and store.stats.snapshot()[""].get("redis_recoveries"), "back"
    )
    calls = catalogue.calls
    for _ in range(3):
        assert client.get(PAGE).body == stored
    assert catalogue.calls <= calls + 1  # shared again


def test_an_invalidation_without_redis_is_refused_and_its_worker_never_serves_what_it_dropped(
    make_client: Callable[..., SitemapClient], store_on: Callable[..., RedisStore], redis_server: RedisServer
) -> None:
    partition = Partition(redis_server.port)
    catalogue = Catalogue(count=2)
    cut_off = store_on(partition.url)
    a, b, sitemaps_a, _ = two_workers(make_client, (cut_off, store_on()), catalogue)
    old = b.get(PAGE).body
    assert a.get(PAGE).body == old
    partition.cut()
    catalogue.paths.append("/p/new")
    with pytest.raises(InvalidationError, match="products"):
        sitemaps_a.invalidate("products")  # the caller hears that the fleet has not
    assert page_locs(a.get(PAGE).body)[-1] == "https://shop.example/p/new"
    partition.mend()
    wait_until(lambda: cut_off.stats.snapshot()[""].get("redis_recoveries"), "the worker reaches Redis again")
    # Nothing was kept to be pushed later: the others serve what Redis holds, but the
    # refused worker renders the section itself rather than serve what it meant to drop.
    assert b.get(PAGE).body == old
    assert page_locs(a.get(PAGE).body)[-1] == "https://shop.example/p/new"
    sitemaps_a.invalidate("products")  # made again, and heard
    for client in (b, a):
        assert page_locs(client.get(PAGE).body)[-1] == "https://shop.example/p/new"


def test_an_invalidation_right_after_redis_comes_back_reaches_every_worker_at_once(
    make_client: Callable[..., SitemapClient], store_on: Callable[..., RedisStore], redis_server: RedisServer
) -> None:
    partition = Partition(redis_server.port)
    catalogue = Catalogue(count=2)
    flapping = store_on(partition.url, retry_interval=5.0)  # its own retry would come seconds later
    a, b, sitemaps_a, _ = two_workers(make_client, (flapping, store_on()), catalogue)
    cycles, stale = 5, 0
    for n in range(cycles):
        assert b.get(PAGE).status == 200  # stored
        partition.cut()
        assert a.get(PAGE).status == 200  # finds Redis away
        partition.mend()
        catalogue.paths.append(f"/p/new-{n}")
        sitemaps_a.invalidate("products")
        if page_locs(b.get(PAGE).body)[-1] != f"https://shop.example/p/new-{n}":
            stale += 1
    assert stale == 0
    assert flapping.stats.snapshot()[""]["redis_outages"] == cycles  # each time marked down


def test_a_count_mismatch_while_redis_is_away_is_still_answered(
    make_client: Callable[..., SitemapClient], store_on: Callable[..., RedisStore], redis_server: RedisServer
) -> None:
    """A mismatch invalidates its section from inside a render: a refusal must not fail it."""
    partition = Partition(redis_server.port)
    sitemaps = Sitemaps(base_url="https://shop.example", cache=store_on(partition.url))
    sitemaps.add_provider("products", lambda: (f"/p/{n}" for n in range(25)), page_size=10, count=lambda: 10)
    client = make_client(sitemaps)
    partition.cut()
    assert page_locs(client.get(PAGE).body) == [f"https://shop.example/p/{n}" for n in range(10)]
    assert counter(sitemaps, "products", "count_mismatch") == 1


def test_a_restarted_redis_never_brings_back_documents_from_before_an_invalidation(
    make_client: Callable[..., SitemapClient], store_on: Callable[..., RedisStore], tmp_path: Path
) -> None:
    catalogue = Catalogue(count=2)
    with RedisServer(tmp_path) as server:
        a, b, sitemaps_a, _ = two_workers(
            make_client, (store_on(server.url), store_on(server.url)), catalogue
        )
        old = a.get(PAGE).body
        assert b.get(PAGE).body == old
        server.stop(save=True)  # the old page is in its dump, and comes back with it
        catalogue.paths.append("/p/new")
        with pytest.raises(InvalidationError):
            sitemaps_a.invalidate("products")
        server.start()
        for client in (b, a, b):
            assert page_locs(client.get(PAGE).body)[-1] == "https://shop.example/p/new"


def test_a_client_that_decodes_responses_is_refused(redis_server: RedisServer) -> None:
    client = redis.Redis(port=redis_server.port, decode_responses=True)
    with pytest.raises(ConfigurationError, match="decode_responses"):
        RedisStore(client)


@pytest.mark.parametrize(
    ("option", "value"),
    [
        pytest.param("max_bytes", 0, id="max-bytes-zero"),
        pytest.param("ttl", 0, id="ttl-zero"),
        pytest.param("lock_timeout", -1, id="lock-timeout-negative"),
        pytest.param("prefix", "", id="prefix-empty"),
        pytest.param("request_budget", 0, id="request-budget-zero"),
    ],
)
def test_bad_options_are_refused_at_construction(
    redis_server: RedisServer, option: str, value: object
) -> None:
    with pytest.raises(ConfigurationError, match=option):
        RedisStore(redis.Redis(port=redis_server.port), **{option: value})  # type: ignore[arg-type]


# A slow Redis: every reply this late, well inside the 1 s socket timeout.
SLOW = 0.2
BUDGET = 0.1
MARGIN = 0.5  # for the render and the client, on a busy machine


def test_a_slow_redis_costs_a_request_its_budget_then_it_answers_without_redis(
    make_client: Callable[..., SitemapClient],
    store_on: Callable[..., RedisStore],
    redis_server: RedisServer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    partition = Partition(redis_server.port)
    store = store_on(partition.url, request_budget=BUDGET)
    catalogue = Catalogue(count=3)
    sitemaps, _ = build(catalogue, cache=store)
    client = make_client(sitemaps)
    assert store.get("warm|up") is None  # a connection, and the scripts loaded: one round trip a call
    partition.slow(SLOW)
    paths = ["/sitemap-index.xml", PAGE, "/sitemap-index.xml", PAGE]
    with caplog.at_level(logging.WARNING, logger="sitemap_middleware"):
        for path in paths:
            started = time.monotonic()
            got = client.get(path)
            took = time.monotonic() - started
            assert got.status == 200 and len(locs(validate(got.body))) in (1, 3)
            assert took < BUDGET + SLOW + MARGIN, f"GET {path} took {took:.2f} s"
    assert store.stats.snapshot()[""]["redis_slow"] == len(paths)  # each request once, not each call
    assert "provider_errors" not in sitemaps.stats.snapshot().get("products", {})
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING and "slow" in r.getMessage()]
    assert len(warnings) == 1  # not once per request
    partition.slow(0)
    client.get(PAGE)
    calls = catalogue.calls
    assert client.get(PAGE).status == 200
    assert catalogue.calls == calls  # shared again


def test_a_slow_redis_that_lacks_the_scripts_still_costs_a_request_its_budget(
    make_client: Callable[..., SitemapClient], store_on: Callable[..., RedisStore], redis_server: RedisServer
) -> None:
    """A first call meets a Redis without our scripts (a new instance, a new prefix): loading
    them is several round trips, and the request stops between them once out of time."""
    partition = Partition(redis_server.port)
    store = store_on(partition.url, request_budget=BUDGET)
    sitemaps, _ = build(Catalogue(count=3), cache=store)
    client = make_client(sitemaps)
    partition.slow(SLOW)  # from the connection's handshake on (redis-py 8: four round trips)
    started = time.monotonic()
    got = client.get(PAGE)
    took = time.monotonic() - started
    assert got.status == 200 and len(locs(validate(got.body))) == 3
    assert took < BUDGET + 5 * SLOW + MARGIN, f"GET {PAGE} took {took:.2f} s"
    assert store.stats.snapshot()[""]["redis_slow"] == 1


# Seconds a provider may go without a batch: far less than the store's time in a cold index.
PROVIDER_TIMEOUT = 0.2


@pytest.mark.parametrize("serve", ["uvicorn", "werkzeug-helpers"], indirect=True)
def test_time_waiting_on_redis_is_never_charged_to_the_provider_deadline(
    serve: Callable[[Sitemaps], Server], store_on: Callable[..., RedisStore], redis_server: RedisServer
) -> None:
    partition = Partition(redis_server.port)
    # A budget no request spends: every lookup, claim and write of the render is made.
    store = store_on(partition.url, request_budget=30.0)
    sitemaps = Sitemaps(base_url="https://shop.example", cache=store, provider_timeout=PROVIDER_TIMEOUT)
    for section in ("a", "b", "c"):
        sitemaps.add_provider(section, lambda section=section: [f"/{section}/1", f"/{section}/2"])
    server = serve(sitemaps)
    assert store.get("warm|up") is None  # a connection, and the scripts loaded
    partition.slow(0.1)  # a plan's lookup, claim and write per section: 0.9 s in the index's render
    got = server.get("/sitemap-index.xml")
    assert got.status == 200, got.body
    assert len(locs(validate(got.body))) == 3
    assert all("provider_errors" not in counts for counts in sitemaps.stats.snapshot().values())
