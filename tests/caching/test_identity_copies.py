"""A page asked for without gzip keeps its identity bytes beside it, within the cache's byte budget.

The cache stores each page gzipped; inflating a 50,000-URL page for every identity request
costs more than sending it. So the in-process cache keeps the identity copy of a page once
it is asked for without gzip: in room its documents leave spare (they take it back first),
and only as long as the page itself is stored.
"""

from __future__ import annotations

import gzip
from typing import Any

import anyio
from werkzeug.test import Client as WerkzeugClient

from sitemap_middleware import Sitemaps
from sitemap_middleware.caching.stores import MemoryStore

from ..conftest import (
    Catalogue,
    Receive,
    Recorder,
    build,
    counter,
    http_scope,
    plain_asgi_app,
    plain_wsgi_app,
)
from ..xsd import locs, validate

PAGE = "/sitemap-products-1.xml"
GZIP = {"Accept-Encoding": "gzip"}


def entry_charge() -> int:
    """What a `MemoryStore` charges per entry beyond its bytes, as `current_bytes` shows it."""
    store = MemoryStore()
    sitemaps, _ = build(cache=store)
    body = WerkzeugClient(sitemaps.wsgi(plain_wsgi_app)).get(PAGE + ".gz").get_data()
    return store.current_bytes - len(body)


CHARGE = entry_charge()


def sizes(pages: int, page_size: int) -> list[tuple[int, int]]:
    """(gzip, identity) lengths of each page of a catalogue of ``pages * page_size`` paths."""
    sitemaps, _ = build(Catalogue(pages * page_size), page_size=page_size, cache=None)
    client = WerkzeugClient(sitemaps.wsgi(plain_wsgi_app))
    found = []
    for number in range(1, pages + 1):
        path = f"/sitemap-products-{number}.xml"
        found.append((len(client.get(path + ".gz").get_data()), len(client.get(path).get_data())))
    return found


def test_an_identity_hit_is_kept_beside_its_page_and_served_as_is(make_client) -> None:
    store = MemoryStore()
    sitemaps, catalogue = build(Catalogue(3000), cache=store)
    client = make_client(sitemaps)
    cold = client.get(PAGE)
    stored = store.current_bytes
    first = client.get(PAGE)  # inflated whole, and kept
    with_copy = store.current_bytes
    again = client.get(PAGE)
    assert cold.body == first.body == again.body
    assert len(locs(validate(again.body))) == 3000
    assert with_copy == stored + len(first.body) + CHARGE == store.current_bytes
    assert again.headers["Content-Length"] == str(len(again.body))
    assert gzip.decompress(client.get(PAGE, headers=GZIP).body) == again.body
    assert catalogue.calls == 1
    assert counter(sitemaps, "products", "cache_hits") == 3


def test_a_kept_identity_page_goes_out_in_one_message_under_asgi() -> None:
    sitemaps, _ = build(Catalogue(3000))
    app = sitemaps.asgi(plain_asgi_app)
    sends = [Recorder() for _ in range(3)]
    for send in sends:  # cold, inflated and kept, then sent as kept
        anyio.run(app, http_scope(PAGE), Receive(), send)
    bodies = [m for m in sends[2].messages if m["type"] == "http.response.body" and m.get("body")]
    assert len(bodies) == 1
    assert sends[0].body == sends[1].body == sends[2].body


def test_no_copy_is_made_without_room_to_spare() -> None:
    [(packed, plain)] = sizes(1, 3000)
    store = MemoryStore(max_bytes=packed + CHARGE + plain // 2)
    sitemaps, _ = build(Catalogue(3000), cache=store)
    client = WerkzeugClient(sitemaps.wsgi(plain_wsgi_app))
    cold = client.get(PAGE).get_data()
    stored = store.current_bytes
    for _ in range(2):
        assert client.get(PAGE).get_data() == cold  # inflated piece by piece, each time
    assert store.current_bytes == stored == packed + CHARGE


def test_pages_take_the_room_of_copies_and_are_never_evicted_for_one() -> None:
    pages = ["/sitemap-products-1.xml", "/sitemap-products-2.xml", "/sitemap-products-3.xml"]
    scratch = MemoryStore()
    sitemaps, _ = build(Catalogue(3000), cache=scratch, page_size=1000)
    client = WerkzeugClient(sitemaps.wsgi(plain_wsgi_app))
    stored = [client.get(path, headers=GZIP).get_data() and scratch.current_bytes for path in pages]
    two_pages, three_pages = stored[1:]  # and the section's plan
    copy = len(client.get(PAGE).get_data()) + CHARGE

    store = MemoryStore(max_bytes=three_pages + copy - 1)  # three pages, or two and a copy
    sitemaps, catalogue = build(Catalogue(3000), cache=store, page_size=1000)
    client = WerkzeugClient(sitemaps.wsgi(plain_wsgi_app))
    first = client.get(PAGE).get_data()
    client.get(PAGE).get_data()  # page 1's copy, kept in room to spare
    client.get(pages[1]).get_data()
    assert store.current_bytes == two_pages + copy
    client.get(pages[2]).get_data()  # needs the copy's room
    assert store.current_bytes == three_pages
    calls = catalogue.calls
    for path in pages:  # every page is still stored
        assert client.get(path, headers=GZIP).status_code == 200
    assert client.get(PAGE).get_data() == first
    assert catalogue.calls == calls
    assert store.current_bytes == three_pages  # no room for the copy any more: none made


def test_a_copy_goes_with_its_page() -> None:
    ticks = [0.0]
    store = MemoryStore(ttl=60, timer=lambda: ticks[0])
    sitemaps, catalogue = build(Catalogue(2000), cache=store)
    client = WerkzeugClient(sitemaps.wsgi(plain_wsgi_app))
    client.get(PAGE).get_data()
    client.get(PAGE).get_data()  # kept
    with_copy = store.current_bytes

    catalogue.paths.append("/p/new")  # changed data; the section invalidated
    sitemaps.invalidate("products")
    changed = client.get(PAGE).get_data()
    assert "https://shop.example/p/new" in locs(validate(changed))
    assert client.get(PAGE).get_data() == changed  # from the new page's own copy

    catalogue.paths.remove("/p/new")
    ticks[0] += 61  # both pages and the copy expire
    assert "https://shop.example/p/new" not in locs(validate(client.get(PAGE).get_data()))
    assert store.current_bytes < with_copy  # the expired pages took their copies along

    sitemaps.invalidate()
    assert store.current_bytes == 0


def test_head_and_gzip_requests_make_no_copy() -> None:
    store = MemoryStore()
    sitemaps, _ = build(Catalogue(3000), cache=store)
    client = WerkzeugClient(sitemaps.wsgi(plain_wsgi_app))
    client.get(PAGE, headers=GZIP).get_data()
    stored = store.current_bytes
    client.head(PAGE).get_data()
    client.get(PAGE, headers=GZIP).get_data()
    client.get(PAGE + ".gz").get_data()
    assert store.current_bytes == stored


class Wrapped:
    """A store of a user's own over a `MemoryStore`, which may or may not declare copies."""

    def __init__(self, *, copies: bool) -> None:
        self.inner = MemoryStore()
        self.flights = self.inner.flights
        self.identity_copies = copies

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_a_store_of_your_own_inflates_every_identity_request() -> None:
    store = Wrapped(copies=False)
    sitemaps = Sitemaps(base_url="https://shop.example", cache=store)  # type: ignore[arg-type]
    sitemaps.add_provider("products", Catalogue(3000))
    client = WerkzeugClient(sitemaps.wsgi(plain_wsgi_app))
    cold = client.get(PAGE).get_data()
    stored = store.inner.current_bytes
    assert client.get(PAGE).get_data() == client.get(PAGE).get_data() == cold
    assert store.inner.current_bytes == stored


def test_a_store_of_your_own_that_declares_copies_keeps_them() -> None:
    store = Wrapped(copies=True)
    sitemaps = Sitemaps(base_url="https://shop.example", cache=store)  # type: ignore[arg-type]
    sitemaps.add_provider("products", Catalogue(3000))
    client = WerkzeugClient(sitemaps.wsgi(plain_wsgi_app))
    cold = client.get(PAGE).get_data()
    stored = store.inner.current_bytes
    assert client.get(PAGE).get_data() == cold  # inflated once, and kept
    assert store.inner.current_bytes == stored + len(cold) + CHARGE
    assert client.get(PAGE).get_data() == cold
