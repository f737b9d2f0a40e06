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
from sitemap_middleware.caching.replays import Replays
from sitemap_middleware.caching.stores import Document, MemoryStore
from sitemap_middleware.concurrency.flights import Flights
from sitemap_middleware.stats import Stats
from sitemap_middleware.web.replies import Origin, Reply, Request

from ..conftest import BASE, NOW, Catalogue, build, plain_wsgi_app
from ..xsd import locs, validate

PAGE = "/sitemap-products-1.xml"


def warm(client: Any, path: str = PAGE, headers: dict[str, str] | None = None) -> str:
    """Render and cache ``path``; its ETag (for these request headers)."""
    client.get(path, headers)
    return client.get(path, headers).headers["ETag"]


def renders_of(sitemaps: Sitemaps) -> int:
    return sitemaps.stats.snapshot()["products"].get("renders", 0)


def replayed(sitemaps: Sitemaps) -> int:
    """How many answers were replays (the public counter)."""
    return sitemaps.stats.snapshot().get("products", {}).get("replayed", 0)


def test_a_repeated_304_is_replayed_with_the_same_headers_and_counted(make_client):
    sitemaps, catalogue = build()
    client = make_client(sitemaps)
    etag = warm(client)
    first = client.get(PAGE, {"If-None-Match": etag})
    before = replayed(sitemaps)
    repeats = [client.get(PAGE, {"If-None-Match": etag}) for _ in range(3)]
    assert replayed(sitemaps) == before + 3
    assert first.status == 304
    for repeat in repeats:
        assert repeat.status == 304
        assert repeat.body == b""
        assert sorted(repeat.headers.items()) == sorted(first.headers.items())
    assert sitemaps.stats.snapshot()["products"]["not_modified"] == 4
    assert catalogue.calls == 1


@pytest.mark.parametrize(
    ("other", "status", "again"),
    [
        pytest.param({"If-None-Match": '"other"'}, 200, 0, id="other-etag"),  # identity: inflated anew
        pytest.param({"Accept-Encoding": "gzip"}, 200, 1, id="other-encoding"),  # the gzip ETag differs
        pytest.param({"If-Modified-Since": "Sun, 06 Nov 1994 08:49:37 GMT"}, 304, 1, id="inm-wins-over-ims"),
    ],
)
def test_a_request_that_differs_in_any_header_we_read_is_answered_afresh(make_client, other, status, again):
    sitemaps, _ = build()
    client = make_client(sitemaps)
    etag = warm(client)
    assert client.get(PAGE, {"If-None-Match": etag}).status == 304
    not_modified = sitemaps.stats.snapshot()["products"]["not_modified"]
    before = replayed(sitemaps)
    response = client.get(PAGE, {"If-None-Match": etag} | other)
    assert response.status == status
    assert replayed(sitemaps) == before  # answered afresh
    client.get(PAGE, {"If-None-Match": etag} | other)
    assert replayed(sitemaps) == before + again  # ...and remembered apart, when it came from a document
    if status == 304:
        assert sitemaps.stats.snapshot()["products"]["not_modified"] == not_modified + 2
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
    before = replayed(sitemaps)
    repeats = [client.get(PAGE, {"Accept-Encoding": "gzip"}) for _ in range(3)]
    assert replayed(sitemaps) == before + 3
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
    store = MemoryStore(max_bytes=1200, max_document_bytes=1200)
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
    # (Beside them: the section's plan and its last published record, `plans.shrinking`.)
    store = MemoryStore(max_bytes=3300)
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
    store = Recording(max_bytes=1200, max_document_bytes=1200)  # room for one small page
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
    assert [alive() for alive in page_one] == [None] * len(page_one)  # ...but not the body they came from


def test_replays_are_bounded():
    store = MemoryStore()
    replays = Replays(store, Stats(), limit=3)
    document = Document(b"x", "e", 0, 1)
    store.set("page", document)
    reply = Reply(304, [], origin=Origin("page", weakref.ref(document), "products", ("not_modified",)))
    for n in range(10):  # ten signatures: a different If-None-Match each time
        request = Request("GET", PAGE, headers={"if-none-match": f'"{n}"'})
        replays.remember(BASE, request, reply, replays.ticket())
        assert len(replays) <= 3
    assert replays.find(BASE, Request("GET", PAGE, headers={"if-none-match": '"9"'})) is not None


def test_huge_header_values_are_answered_but_never_remembered():
    store = MemoryStore()
    replays = Replays(store, Stats())
    document = Document(b"x", "e", 0, 1)
    store.set("page", document)
    reply = Reply(304, [], origin=Origin("page", weakref.ref(document), "products", ("not_modified",)))
    huge = Request("GET", PAGE, headers={"if-none-match": '"' + "x" * 300_000 + '"'})
    replays.remember(BASE, huge, reply, replays.ticket())
    assert len(replays) == 0
    assert replays.find(BASE, huge) is None


class Plain:
    """A `CacheStore` of a user's own, over a `MemoryStore`, declaring no capability."""

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

    @property
    def flights(self) -> Flights:
        return self.inner.flights


class Declared(Plain):
    """The same store, declaring what it can do: answered from memory, and its `get`
    returns the stored object itself."""

    blocking = False
    replayable = True

    @property
    def invalidations(self) -> int:
        return self.inner.invalidations


def test_nothing_is_replayed_over_a_store_that_does_not_declare_it(make_client):
    sitemaps = Sitemaps(base_url=BASE, cache=Plain(), clock=lambda: NOW)
    sitemaps.add_provider("products", Catalogue())
    client = make_client(sitemaps)
    etag = warm(client)
    assert [client.get(PAGE, {"If-None-Match": etag}).status for _ in range(3)] == [304, 304, 304]
    assert replayed(sitemaps) == 0


def test_a_store_of_your_own_that_declares_it_is_replayed(make_client):
    store = Declared()
    sitemaps = Sitemaps(base_url=BASE, cache=store, clock=lambda: NOW)
    sitemaps.add_provider("products", Catalogue())
    client = make_client(sitemaps)
    etag = warm(client)
    assert [client.get(PAGE, {"If-None-Match": etag}).status for _ in range(4)] == [304] * 4
    assert replayed(sitemaps) == 3  # the first was answered afresh, and remembered
    store.invalidate("products")  # counted by the store it declares: replays end
    assert client.get(PAGE, {"If-None-Match": etag}).status == 200  # rendered again, streamed
    assert replayed(sitemaps) == 3
