"""Replayed answers (replays.py): checked against the very document the store holds now.

A repeated conditional request is answered from a remembered 304 only while the answer
still stands: every test here changes one thing the answer depends on and shows that
the next request takes the full path and sees the change.
"""

from __future__ import annotations

import gc
import gzip
import weakref
from typing import Any

import pytest
from werkzeug.test import Client

from sitemap_middleware import Sitemaps
from sitemap_middleware.cache import Document, MemoryStore
from sitemap_middleware.replays import Replays

from .conftest import BASE, NOW, Catalogue, build, plain_wsgi_app
from .xsd import locs, validate

PAGE = "/sitemap-products-1.xml"


def warm(client: Any, path: str = PAGE, headers: dict[str, str] | None = None) -> str:
    """Render and cache ``path``; its ETag (for these request headers)."""
    client.get(path, headers)
    return client.get(path, headers).headers["ETag"]


def renders_of(sitemaps: Sitemaps) -> int:
    return sitemaps.stats.snapshot()["products"].get("renders", 0)


def without_full_answers(sitemaps: Sitemaps) -> None:
    """Make any request that is not replayed fail loudly: proves a reply came from a replay."""

    def fail(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("took the full path")

    service = sitemaps.service
    service.fast_reply = fail  # type: ignore[method-assign]
    service.reply = fail  # type: ignore[method-assign]


def test_a_repeated_304_is_replayed_with_the_same_headers_and_counted(make_client):
    sitemaps, catalogue = build()
    client = make_client(sitemaps)
    etag = warm(client)
    first = client.get(PAGE, {"If-None-Match": etag})
    without_full_answers(sitemaps)
    repeats = [client.get(PAGE, {"If-None-Match": etag}) for _ in range(3)]
    assert first.status == 304
    for repeat in repeats:
        assert repeat.status == 304
        assert repeat.body == b""
        assert sorted(repeat.headers.items()) == sorted(first.headers.items())
    assert sitemaps.stats.snapshot()["products"]["not_modified"] == 4
    assert catalogue.calls == 1


@pytest.mark.parametrize(
    ("other", "status", "remembered"),
    [
        pytest.param({"If-None-Match": '"other"'}, 200, 1, id="other-etag"),  # identity: inflated anew
        pytest.param({"Accept-Encoding": "gzip"}, 200, 2, id="other-encoding"),  # the gzip ETag differs
        pytest.param({"If-Modified-Since": "Sun, 06 Nov 1994 08:49:37 GMT"}, 304, 2, id="inm-wins-over-ims"),
        pytest.param({"Host": "other.example"}, 304, 2, id="other-host"),
    ],
)
def test_a_request_that_differs_in_any_header_we_read_is_answered_afresh(
    make_client, other, status, remembered
):
    sitemaps, _ = build()
    client = make_client(sitemaps)
    etag = warm(client)
    assert client.get(PAGE, {"If-None-Match": etag}).status == 304
    not_modified = sitemaps.stats.snapshot()["products"]["not_modified"]
    response = client.get(PAGE, {"If-None-Match": etag} | other)
    assert response.status == status
    assert len(sitemaps.replays or ()) == remembered  # a new signature is remembered apart
    if status == 304:
        assert sitemaps.stats.snapshot()["products"]["not_modified"] == not_modified + 1
    else:
        assert response.body


# Each remembered answer must end when what it came from changes: a 304 (If-None-Match) and
# a gzip 200 (the stored body itself) alike.
ANSWERS = [pytest.param("304", id="remembered-304"), pytest.param("gzip", id="remembered-gzip-200")]


class Asking:
    """The same request again and again: a conditional one, or a plain gzip GET."""

    def __init__(self, client: Any, kind: str) -> None:
        self.client = client
        etag = warm(client)  # cached: both kinds are answered from the stored document
        self.headers = {"If-None-Match": etag} if kind == "304" else {"Accept-Encoding": "gzip"}
        self.kind = kind

    def unchanged(self) -> bool:
        response = self.client.get(PAGE, self.headers)
        return response.status == (304 if self.kind == "304" else 200) and "ETag" in response.headers

    def document(self) -> bytes:
        response = self.client.get(PAGE, self.headers)
        assert response.status == 200
        return gzip.decompress(response.body) if self.kind == "gzip" else response.body


def test_a_repeated_gzip_get_is_replayed_with_the_same_headers_and_body(make_client):
    sitemaps, catalogue = build()
    client = make_client(sitemaps)
    warm(client, headers={"Accept-Encoding": "gzip"})
    first = client.get(PAGE, {"Accept-Encoding": "gzip"})
    without_full_answers(sitemaps)
    repeats = [client.get(PAGE, {"Accept-Encoding": "gzip"}) for _ in range(3)]
    for repeat in repeats:
        assert (repeat.status, repeat.body) == (200, first.body)
        assert sorted(repeat.headers.items()) == sorted(first.headers.items())
    assert locs(validate(gzip.decompress(first.body))) == [f"{BASE}/p/{n}" for n in range(5)]
    counters = sitemaps.stats.snapshot()["products"]
    assert (counters["cache_hits"], counters["served"]) == (5, 6)  # as if answered in full
    assert catalogue.calls == 1


@pytest.mark.parametrize("kind", ANSWERS)
def test_invalidate_ends_replays(make_client, kind):
    sitemaps, catalogue = build()
    asking = Asking(make_client(sitemaps), kind)
    assert asking.unchanged() and asking.unchanged()
    catalogue.paths.append("/p/new")
    sitemaps.invalidate("products")
    assert f"{BASE}/p/new" in locs(validate(asking.document()))


@pytest.mark.parametrize("kind", ANSWERS)
def test_ttl_expiry_ends_replays(make_client, kind):
    ticks = [0.0]
    sitemaps, catalogue = build(cache=MemoryStore(ttl=60, timer=lambda: ticks[0]))
    asking = Asking(make_client(sitemaps), kind)
    assert asking.unchanged() and asking.unchanged()
    catalogue.paths.append("/p/new")
    ticks[0] += 59
    assert asking.unchanged()  # still fresh: the same answer
    ticks[0] += 1
    assert f"{BASE}/p/new" in locs(validate(asking.document()))


@pytest.mark.parametrize("kind", ANSWERS)
def test_eviction_then_a_new_render_under_the_same_key_ends_replays(make_client, kind):
    # Room for one small document: caching another page evicts page 1.
    store = MemoryStore(max_bytes=1200)
    sitemaps, catalogue = build(cache=store, page_size=2)
    client = make_client(sitemaps)
    asking = Asking(client, kind)
    assert asking.unchanged() and asking.unchanged()
    warm(client, "/sitemap-products-2.xml")  # evicts page 1
    catalogue.paths[0] = "/p/renamed"
    renders = renders_of(sitemaps)
    warm(client)  # an identity request stores the new page 1 under the same key
    assert renders_of(sitemaps) == renders + 1  # page 1 had been evicted: rendered anew
    assert f"{BASE}/p/renamed" in locs(validate(asking.document()))


def test_a_page_answered_only_by_replays_stays_warm_in_the_cache():
    # Room for about three small documents; pages 2..8 come and go while page 1 is only
    # ever replayed: each replay counts as a hit, so page 1 is never the least recently used.
    store = MemoryStore(max_bytes=2600)
    sitemaps, _ = build(Catalogue(count=16), cache=store, page_size=2)
    client = Client(sitemaps.wsgi(plain_wsgi_app))
    gz = {"Accept-Encoding": "gzip"}
    client.get(PAGE).get_data()
    client.get(PAGE, headers=gz).get_data()  # remembered
    for number in range(2, 9):
        assert client.get(PAGE, headers=gz).status_code == 200  # replayed
        client.get(f"/sitemap-products-{number}.xml").get_data()  # a cold page, stored: evicts one
    assert sitemaps.stats.snapshot()["products"]["cache_hits"] >= 7
    renders = renders_of(sitemaps)
    client.get(PAGE).get_data()  # an identity request, never replayed: page 1 is still held
    assert renders_of(sitemaps) == renders
    client.get("/sitemap-products-2.xml").get_data()  # others were evicted meanwhile
    assert renders_of(sitemaps) == renders + 1


class Recording(MemoryStore):
    """A `MemoryStore` that keeps a weak reference to every document it is given."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.stored: list[weakref.ref[Document]] = []

    def set(self, key: str, document: Document) -> None:
        self.stored.append(weakref.ref(document))
        super().set(key, document)


def test_a_remembered_answer_never_keeps_an_evicted_document_alive():
    store = Recording(max_bytes=1200)  # room for one small page
    sitemaps, _ = build(cache=store, page_size=2)
    client = Client(sitemaps.wsgi(plain_wsgi_app))
    client.get(PAGE).get_data()
    etag = client.get(PAGE).headers["ETag"]
    assert client.get(PAGE, headers={"If-None-Match": etag}).status_code == 304
    assert client.get(PAGE, headers={"Accept-Encoding": "gzip"}).status_code == 200  # the body itself
    page_one = list(store.stored)  # every document stored so far is page 1's
    assert page_one
    client.get("/sitemap-products-2.xml").get_data()  # evicts page 1
    gc.collect()
    assert len(sitemaps.replays or ()) == 2  # both answers are still remembered...
    assert [alive() for alive in page_one] == [None] * len(page_one)  # ...but not the body they came from


def test_replays_are_bounded():
    sitemaps, _ = build()
    sitemaps.replays = Replays(sitemaps.cache, sitemaps.stats, limit=3)  # type: ignore[arg-type]
    client = Client(sitemaps.wsgi(plain_wsgi_app))
    client.get(PAGE).get_data()  # cold: streamed, and stored once consumed
    etag = client.get(PAGE).headers["ETag"]
    for n in range(10):  # ten signatures: a different Host header each time
        assert client.get(PAGE, headers={"If-None-Match": etag, "Host": f"h{n}.example"}).status_code == 304
        assert len(sitemaps.replays) <= 3
    assert len(sitemaps.replays) >= 1


def test_nothing_is_replayed_without_a_memory_store(make_client):
    class Plain:
        """A `CacheStore` that is not a `MemoryStore` (as a shared store would be)."""

        def __init__(self) -> None:
            self.inner = MemoryStore()

        def get(self, key: str) -> Document | None:
            return self.inner.get(key)

        def set(self, key: str, document: Document) -> None:
            self.inner.set(key, document)

        def generation(self, section: str) -> str:
            return self.inner.generation(section)

        def invalidate(self, section: str | None = None) -> None:
            self.inner.invalidate(section)

    sitemaps = Sitemaps(base_url=BASE, cache=Plain(), clock=lambda: NOW)
    sitemaps.add_provider("products", Catalogue())
    assert sitemaps.replays is None
    client = make_client(sitemaps)
    etag = warm(client)
    assert [client.get(PAGE, {"If-None-Match": etag}).status for _ in range(2)] == [304, 304]
