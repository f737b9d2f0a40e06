"""HTTP caching: validators, conditional requests, the byte-bounded cache and single-flight."""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from email.utils import format_datetime
from typing import Any
from wsgiref.validate import validator

import httpx
import pytest
from werkzeug.test import Client as WerkzeugClient

from sitemap_middleware import ProviderError, Sitemaps
from sitemap_middleware.caching.stores import Document, MemoryStore

from ..conftest import BASE, NOW, Catalogue, build, counter, plain_asgi_app, plain_wsgi_app, wait_until
from ..xsd import locs, validate

PAGE = "/sitemap-products-1.xml"


def http_date(epoch: float) -> str:
    return format_datetime(datetime.fromtimestamp(epoch, UTC), usegmt=True)


# -- validators --------------------------------------------------------------------------------


def test_cached_page_carries_strong_etag_and_last_modified(make_client):
    client = make_client(build()[0])
    client.get(PAGE)
    cached = client.get(PAGE)
    assert cached.status == 200
    etag = cached.headers["ETag"]
    assert etag.startswith('"') and etag.endswith('"') and not etag.startswith("W/")
    # RFC 9110 §8.8.2.1: never later than Date, which servers may take up to a second early.
    assert cached.headers["Last-Modified"] == http_date(NOW - 1)
    validate(cached.body)


def test_cold_page_without_declared_version_omits_validators(make_client):
    client = make_client(build()[0])
    cold = client.get(PAGE)
    assert cold.status == 200
    assert "ETag" not in cold.headers and "Last-Modified" not in cold.headers
    validate(cold.body)


def test_gzip_and_identity_representations_have_different_etags(make_client):
    client = make_client(build()[0])
    client.get(PAGE)
    identity = client.get(PAGE).headers["ETag"]
    encoded = client.get(PAGE, {"Accept-Encoding": "gzip"})
    gz_file = client.get(PAGE + ".gz")
    assert encoded.headers["Content-Encoding"] == "gzip"
    assert encoded.headers["ETag"] != identity
    assert gz_file.headers["ETag"] == encoded.headers["ETag"]
    assert gzip.decompress(encoded.body) == gzip.decompress(gz_file.body) == client.get(PAGE).body


def test_sitemap_documents_carry_cache_control_and_noindex(make_client):
    client = make_client(build()[0])
    for path in ("/sitemap-index.xml", PAGE, PAGE + ".gz"):
        response = client.get(path)
        assert response.headers["Cache-Control"] == "public, max-age=600, stale-while-revalidate=3600"
        assert response.headers["X-Robots-Tag"] == "noindex"


def test_cache_control_and_robots_tag_are_configurable(make_client):
    client = make_client(build(cache_control="no-cache", robots_tag=None)[0])
    response = client.get(PAGE)
    assert response.headers["Cache-Control"] == "no-cache"
    assert "X-Robots-Tag" not in response.headers


# -- conditional requests (RFC 9110 §13) -------------------------------------------------------

ETAG = "{etag}"
CONDITIONAL_CASES = [
    pytest.param("GET", {"If-None-Match": ETAG}, 304, id="inm-match"),
    pytest.param("GET", {"If-None-Match": "W/" + ETAG}, 304, id="inm-weak-match"),
    pytest.param("GET", {"If-None-Match": f'"other", {ETAG}, "x"'}, 304, id="inm-list"),
    pytest.param("GET", {"If-None-Match": "*"}, 304, id="inm-star"),
    pytest.param("GET", {"If-None-Match": '"other"'}, 200, id="inm-mismatch"),
    pytest.param("GET", {"If-None-Match": "{gz_etag}"}, 200, id="inm-gzip-etag-on-identity"),
    pytest.param(
        "GET", {"If-None-Match": '"other"', "If-Modified-Since": "{later}"}, 200, id="inm-wins-over-ims"
    ),
    pytest.param("GET", {"If-Modified-Since": "{now}"}, 304, id="ims-equal"),
    pytest.param("GET", {"If-Modified-Since": "{later}"}, 304, id="ims-later"),
    pytest.param("GET", {"If-Modified-Since": "{earlier}"}, 200, id="ims-earlier"),
    pytest.param("GET", {"If-Modified-Since": "yesterday-ish"}, 200, id="ims-malformed"),
    pytest.param("GET", {"If-Modified-Since": "Sun, 99 Nov 1994 08:49:37 GMT"}, 200, id="ims-bad-day"),
    pytest.param("HEAD", {"If-None-Match": ETAG}, 304, id="head-inm-match"),
    pytest.param("HEAD", {}, 200, id="head-unconditional"),
]


@pytest.mark.parametrize(("method", "headers", "status"), CONDITIONAL_CASES)
def test_conditional_request_on_cached_page(make_client, method, headers, status):
    client = make_client(build()[0])
    client.get(PAGE)
    warm = client.get(PAGE)
    gz_etag = client.get(PAGE, {"Accept-Encoding": "gzip"}).headers["ETag"]
    values = {
        "etag": warm.headers["ETag"],
        "gz_etag": gz_etag,
        "now": http_date(NOW),
        "later": http_date(NOW + 60),
        "earlier": http_date(NOW - 60),
    }
    conditional = {k: v.format(**values) for k, v in headers.items()}
    response = client.request(method, PAGE, conditional)
    assert response.status == status
    if status == 304 or method == "HEAD":
        assert response.body == b""
    else:
        assert response.body == warm.body
    # The same request again: a 304 is now replayed (replays.py), and must not differ.
    again = client.request(method, PAGE, conditional)
    assert (again.status, again.body) == (response.status, response.body)
    assert sorted(again.headers.items()) == sorted(response.headers.items())


def test_not_modified_carries_exactly_the_allowed_headers(make_client):
    client = make_client(build()[0])
    client.get(PAGE)
    etag = client.get(PAGE).headers["ETag"]
    response = client.get(PAGE, {"If-None-Match": etag})
    assert response.status == 304
    names = {name.lower() for name, _ in response.headers.items()} - {"date", "server", "content-length"}
    assert names == {"etag", "last-modified", "cache-control", "vary"}
    assert response.headers["ETag"] == etag
    assert response.headers.get("Content-Length", "0") == "0"


def test_not_modified_works_for_the_gzip_file_and_the_index(make_client):
    client = make_client(build()[0])
    for path in (PAGE + ".gz", "/sitemap-index.xml"):
        client.get(path)
        etag = client.get(path).headers["ETag"]
        assert client.get(path, {"If-None-Match": etag}).status == 304


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH"])
def test_unsafe_methods_get_405_with_allow_even_when_conditional(make_client, method):
    client = make_client(build()[0])
    client.get(PAGE)
    etag = client.get(PAGE).headers["ETag"]
    response = client.request(method, PAGE, {"If-None-Match": etag})
    assert response.status == 405
    assert response.headers["Allow"] == "GET, HEAD"


# -- the cache ---------------------------------------------------------------------------------


def test_thousand_sequential_requests_call_the_provider_once(make_client):
    sitemaps, catalogue = build()
    client = make_client(sitemaps)
    bodies = {client.get(PAGE).body for _ in range(1000)}
    assert catalogue.calls == 1
    assert len(bodies) == 1
    assert sitemaps.stats.snapshot()["products"]["cache_hits"] == 999


def test_invalidate_serves_new_data_with_a_new_etag(make_client):
    sitemaps, catalogue = build()
    client = make_client(sitemaps)
    client.get(PAGE)
    before = client.get(PAGE)
    catalogue.paths.append("/p/new")
    assert client.get(PAGE).body == before.body  # cached: the change is not visible yet
    sitemaps.invalidate("products")
    after = client.get(PAGE)
    assert f"{BASE}/p/new" in locs(validate(after.body))
    assert client.get(PAGE).headers["ETag"] != before.headers["ETag"]


def test_invalidate_of_a_section_refreshes_the_index(make_client):
    sitemaps, catalogue = build(page_size=5)
    client = make_client(sitemaps)
    assert len(locs(validate(client.get("/sitemap-index.xml").body))) == 1
    catalogue.paths.extend(["/p/x", "/p/y"])
    sitemaps.invalidate("products")
    assert len(locs(validate(client.get("/sitemap-index.xml").body))) == 2


def test_invalidate_everything_drops_every_section(make_client):
    sitemaps, catalogue = build()
    client = make_client(sitemaps)
    client.get(PAGE)
    sitemaps.invalidate()
    client.get(PAGE)
    assert catalogue.calls == 2


def test_ttl_expiry_renders_again_and_keeps_last_modified_for_equal_bytes(make_client):
    ticks = [0.0]
    wall = [NOW]
    store = MemoryStore(ttl=60, timer=lambda: ticks[0])
    sitemaps, catalogue = build(cache=store, clock=lambda: wall[0])
    client = make_client(sitemaps)
    client.get(PAGE)
    first = client.get(PAGE)
    ticks[0] += 61
    wall[0] += 61
    client.get(PAGE)
    second = client.get(PAGE)
    assert catalogue.calls == 2
    assert second.headers["ETag"] == first.headers["ETag"]
    # Last-Modified is when these bytes were first produced, not when they were re-rendered.
    assert second.headers["Last-Modified"] == first.headers["Last-Modified"] == http_date(NOW - 1)


def test_last_modified_moves_when_a_url_is_deleted(make_client):
    wall = [NOW]
    sitemaps, catalogue = build(clock=lambda: wall[0])
    client = make_client(sitemaps)
    client.get(PAGE)
    before = client.get(PAGE).headers["Last-Modified"]
    catalogue.paths.pop()
    wall[0] += 3600
    sitemaps.invalidate("products")
    client.get(PAGE)
    assert client.get(PAGE).headers["Last-Modified"] == http_date(NOW + 3600 - 1) != before


def test_cache_is_bounded_by_bytes_not_entries():
    store = MemoryStore(max_bytes=64 * 1024)
    sitemaps, _ = build(Catalogue(count=2000), cache=store, page_size=200)
    client = WerkzeugClient(sitemaps.wsgi(plain_wsgi_app))
    for n in range(1, 11):
        response = client.get(f"/sitemap-products-{n}.xml")
        assert response.status_code == 200
        response.get_data()
        response.close()
    assert 0 < store.current_bytes <= 64 * 1024


def test_a_document_past_max_document_bytes_is_never_stored_and_evicts_nothing():
    store = MemoryStore(max_bytes=64 * 1024, max_document_bytes=1000)
    kept, past = Document(b"k" * 1000, "k", 0, 1000), Document(b"p" * 1001, "p", 0, 1001)
    store.set("kept", kept)
    store.set("past", past)
    assert store.get("kept") is kept
    assert store.get("past") is None


def test_max_document_bytes_is_an_eighth_of_the_store_by_default():
    store = MemoryStore(max_bytes=8000)
    store.set("eighth", Document(b"e" * 1000, "e", 0, 1000))
    store.set("past", Document(b"p" * 1001, "p", 0, 1001))
    assert store.get("eighth") is not None
    assert store.get("past") is None


def test_a_page_too_large_to_store_leaves_the_section_plans_stored():
    # The plan of a section of 2,000 URLs costs a pass over it to make again: a page of
    # ~46 KB of incompressible URLs stored in a 48 KB store would evict it (it did).
    store = MemoryStore(max_bytes=48 * 1024)
    sitemaps, catalogue = build(Catalogue(count=2000), cache=store, page_size=200)
    big = [f"/b/{hashlib.sha256(str(n).encode()).hexdigest()}" for n in range(1260)]
    sitemaps.add_provider("big", lambda: big, page_size=1260)
    client = WerkzeugClient(sitemaps.wsgi(plain_wsgi_app))
    assert client.get("/sitemap-products-2.xml").status_code == 200
    calls = catalogue.calls  # the plan's pass, and page 2's
    for _ in range(2):
        page = client.get("/sitemap-big-1.xml", headers={"Accept-Encoding": "gzip"})
        assert len(page.get_data()) > 6 * 1024  # past an eighth of the store
        assert len(locs(validate(gzip.decompress(page.get_data())))) == 1260
    assert sitemaps.stats.snapshot()["big"]["renders"] == 2  # served, never stored
    assert client.get("/sitemap-products-3.xml").status_code == 200
    assert catalogue.calls == calls + 1  # page 3's alone: the plan was still stored


def test_cache_none_renders_every_request_and_sends_no_validators(make_client):
    sitemaps, catalogue = build(cache=None)
    client = make_client(sitemaps)
    for _ in range(3):
        response = client.get(PAGE)
        assert "ETag" not in response.headers
        validate(response.body)
    assert catalogue.calls == 3


def test_two_instances_serve_identical_bodies_and_etags():
    first = WerkzeugClient(build()[0].wsgi(plain_wsgi_app))
    second = WerkzeugClient(build()[0].wsgi(plain_wsgi_app))
    for path, headers in [(PAGE, {}), (PAGE, {"Accept-Encoding": "gzip"}), ("/sitemap-index.xml", {})]:
        answers = []
        for client in (first, second):
            warm = client.get(path, headers=headers)
            warm.get_data()
            warm.close()
            response = client.get(path, headers=headers)
            answers.append((response.headers["ETag"], response.get_data()))
            response.close()
        assert answers[0] == answers[1]


# -- single-flight -----------------------------------------------------------------------------


class GatedCatalogue(Catalogue):
    """Blocks its first call until the test has seen every other request waiting."""

    def __init__(self, sitemaps_ref: list[Sitemaps], followers: int) -> None:
        super().__init__(count=500)
        self._sitemaps = sitemaps_ref
        self._followers = followers

    def __call__(self) -> Iterator[str]:
        self.calls += 1
        wait_until(self.followers_wait, f"{self._followers} requests wait for this render")
        yield from self.paths

    def followers_wait(self) -> bool:
        return counter(self._sitemaps[0], "products", "flight_waits") >= self._followers


def gated(followers: int, **options: Any) -> tuple[Sitemaps, GatedCatalogue]:
    ref: list[Sitemaps] = []
    catalogue = GatedCatalogue(ref, followers)
    sitemaps, _ = build(catalogue, **options)
    ref.append(sitemaps)
    return sitemaps, catalogue


def test_concurrent_cold_requests_call_provider_once_wsgi():
    sitemaps, catalogue = gated(followers=31)
    app = validator(sitemaps.wsgi(plain_wsgi_app))
    results: list[tuple[int, bytes]] = []
    lock = threading.Lock()

    def fetch() -> None:
        response = WerkzeugClient(app).get(PAGE)
        with lock:
            results.append((response.status_code, response.get_data()))
        response.close()

    threads = [threading.Thread(target=fetch) for _ in range(32)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert catalogue.calls == 1
    assert len(results) == 32
    assert {status for status, _ in results} == {200}
    assert len({body for _, body in results}) == 1
    assert len(locs(validate(results[0][1]))) == 500


def test_concurrent_cold_requests_call_provider_once_asgi():
    sitemaps, catalogue = gated(followers=31)

    async def main() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=sitemaps.asgi(plain_asgi_app))
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            return await asyncio.gather(*(client.get(PAGE) for _ in range(32)))

    responses = asyncio.run(main())
    assert catalogue.calls == 1
    assert {r.status_code for r in responses} == {200}
    assert len({r.content for r in responses}) == 1
    assert len(locs(validate(responses[0].content))) == 500


# -- failures never reach the cache ------------------------------------------------------------


class FailingHalfway(Catalogue):
    def __init__(self) -> None:
        super().__init__(count=200)
        self.fail = True

    def __call__(self) -> Iterator[str]:
        self.calls += 1
        for n, path in enumerate(self.paths):
            if self.fail and n == 100:
                raise RuntimeError("database went away")
            yield path


def test_provider_failing_mid_stream_never_yields_a_complete_document(make_client):
    sitemaps, catalogue = build(FailingHalfway())
    client = make_client(sitemaps)
    # The adapter aborts the response (the server drops the connection): an error, never
    # a body that ends like a whole document.
    with pytest.raises(ProviderError, match="database went away"):
        client.get(PAGE)
    catalogue.fail = False
    retry = client.get(PAGE)
    assert catalogue.calls == 2  # not served from a cached fragment
    assert len(locs(validate(retry.body))) == 200


# A client gone mid-page: see concurrency/test_disconnect.py (both adapters).


# -- declared versions -------------------------------------------------------------------------


def versioned(version: list[Any]) -> tuple[Sitemaps, Catalogue]:
    sitemaps = Sitemaps(base_url=BASE, clock=lambda: NOW)
    catalogue = Catalogue()
    sitemaps.add_provider("products", catalogue, version=lambda: version[0])
    return sitemaps, catalogue


def test_declared_version_puts_validators_on_a_cold_streamed_page(make_client):
    changed = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    client = make_client(versioned([changed])[0])
    cold = client.get(PAGE)
    assert cold.status == 200
    assert cold.headers["ETag"].startswith('"')
    assert cold.headers["Last-Modified"] == http_date(changed.timestamp())
    validate(cold.body)


def test_declared_version_answers_conditional_requests_without_calling_the_provider(make_client):
    version = [7]
    sitemaps, _catalogue = versioned(version)
    etag = make_client(sitemaps).get(PAGE).headers["ETag"]
    fresh, fresh_catalogue = versioned(version)  # another process: cold cache, same data version
    response = make_client(fresh).get(PAGE, {"If-None-Match": etag})
    assert response.status == 304
    assert fresh_catalogue.calls == 0


def test_a_new_declared_version_is_served_at_once_without_invalidate(make_client):
    version = [1]
    sitemaps, catalogue = versioned(version)
    client = make_client(sitemaps)
    client.get(PAGE)
    before = client.get(PAGE)
    catalogue.paths.append("/p/new")
    version[0] = 2
    after = client.get(PAGE)
    assert f"{BASE}/p/new" in locs(validate(after.body))
    assert after.headers["ETag"] != before.headers["ETag"]


def test_failing_version_callable_gives_503(make_client):
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.add_provider("products", Catalogue(), version=lambda: 1 / 0)
    response = make_client(sitemaps).get(PAGE)
    assert response.status == 503
    assert response.headers["Retry-After"].isdigit()


# -- robots.txt --------------------------------------------------------------------------------


def counting_robots_apps(extra_headers: list[tuple[str, str]]) -> tuple[list[int], Any, Any]:
    """A WSGI and an ASGI app whose robots.txt counts how often it is asked for."""
    calls = [0]
    body = b"User-agent: *\nDisallow: /cart\n"

    def wsgi_app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        calls[0] += 1
        start_response("200 OK", [("Content-Type", "text/plain"), *extra_headers])
        return [body]

    async def asgi_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        calls[0] += 1
        headers = [(b"content-type", b"text/plain")] + [(k.encode(), v.encode()) for k, v in extra_headers]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return calls, wsgi_app, asgi_app


def test_robots_is_asked_of_the_app_every_time_never_stored(make_client):
    # Nothing a client sends may change what another gets: the app's robots.txt may
    # depend on anything in the request, so ours is never stored.
    calls, wsgi_app, asgi_app = counting_robots_apps([])
    sitemaps, _ = build()
    client = make_client(sitemaps, wsgi_app=wsgi_app, asgi_app=asgi_app)
    bodies = {client.get("/robots.txt").body for _ in range(3)}
    assert calls[0] == 3
    assert bodies == {b"User-agent: *\nDisallow: /cart\n\nSitemap: https://shop.example/sitemap-index.xml\n"}


def test_robots_with_cookies_is_never_cached(make_client):
    calls, wsgi_app, asgi_app = counting_robots_apps([("Set-Cookie", "session=abc")])
    client = make_client(build()[0], wsgi_app=wsgi_app, asgi_app=asgi_app)
    for _ in range(3):
        assert client.get("/robots.txt").status == 200
    assert calls[0] == 3


def test_more_concurrent_cold_requests_than_worker_threads_do_not_stall_asgi():
    # anyio lends 40 worker threads; followers must wait on the event loop, not in a
    # thread, or they take every thread the leader needs to stream its page.
    sitemaps, catalogue = gated(followers=40)
    catalogue.paths = [f"/p/{n}" for n in range(20_000)]  # many chunks: the leader needs threads

    async def main() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=sitemaps.asgi(plain_asgi_app))
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            requests = asyncio.gather(*(client.get(PAGE) for _ in range(120)))
            return await asyncio.wait_for(requests, timeout=30)

    responses = asyncio.run(main())
    assert {r.status_code for r in responses} == {200}
    assert catalogue.calls == 1


def test_concurrent_cold_pages_of_one_section_measure_it_once():
    sitemaps, catalogue = gated(followers=7, page_size=50)  # 500 URLs: pages 1 to 10
    app = sitemaps.wsgi(plain_wsgi_app)
    statuses: list[int] = []

    def fetch(number: int) -> None:
        response = WerkzeugClient(app).get(f"/sitemap-products-{number}.xml")
        statuses.append(response.status_code)
        response.get_data()
        response.close()

    threads = [threading.Thread(target=fetch, args=(n,)) for n in range(2, 10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert statuses == [200] * 8
    assert catalogue.calls == 1 + 8  # one plan for all eight pages, then each page's render


class CountingStore:
    """A `MemoryStore` that counts the reads of each key: what one request costs its store."""

    def __init__(self) -> None:
        self.inner = MemoryStore()
        self.flights = self.inner.flights
        self.blocking = False
        self.reads: dict[str, int] = {}

    def get(self, key: str) -> Any:
        self.reads[key] = self.reads.get(key, 0) + 1
        return self.inner.get(key)

    def set(self, key: str, document: Any) -> None:
        self.inner.set(key, document)

    def generation(self, section: str) -> str:
        return self.inner.generation(section)

    def invalidate(self, section: str | None = None) -> None:
        self.inner.invalidate(section)


@pytest.mark.parametrize("version", [None, lambda: "v1"], ids=["plain", "declared-version"])
def test_a_cold_page_reads_the_store_once_and_a_hit_once(make_client, version):
    store = CountingStore()
    sitemaps = Sitemaps(base_url=BASE, cache=store)  # type: ignore[arg-type]
    sitemaps.add_provider("products", lambda: [f"/p/{n}" for n in range(10)], version=version)
    client = make_client(sitemaps)
    assert client.get("/sitemap-products-1.xml").status == 200  # cold: rendered and stored
    [(key, cold)] = [(key, n) for key, n in store.reads.items() if key.startswith("page|")]
    assert cold == 1
    assert client.get("/sitemap-products-1.xml").status == 200  # a hit
    assert store.reads[key] == 2
