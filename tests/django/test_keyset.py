"""`sitemap_middleware.django.keyset`: a QuerySet served by ranges of a unique key, on SQLite and PostgreSQL.

Pages are planned by one query in the database and read by key (``>=`` the page's first
key, never ``OFFSET``); every HTTP behaviour runs on both adapters, so under ASGI the ORM
runs in the adapter's worker threads.
"""

from __future__ import annotations

import asyncio
import re
import threading
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from django.db import connections, transaction
from django.db.models.signals import post_delete, post_save
from django.test.utils import CaptureQueriesContext
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sitemap_middleware import ConfigurationError, Sitemaps, Url
from sitemap_middleware.django import keyset
from sitemap_middleware.sources import PagedSource

from ..conftest import BASE, empty_tables
from ..djangosite.config import configure
from ..xsd import lastmods, locs, validate

configure()

from ..djangosite.models import Article, Product  # noqa: E402  (needs Django configured)

EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
GAPPY = [3, 5, 8, 13, 21, 34, 55, 89, 144, 233]  # pages are key ranges, not offsets


def updated(key: int) -> datetime:
    """A lastmod that is not monotonic in the key, with a time of day, so a page's newest is no accident."""
    return EPOCH + timedelta(hours=(key * 37) % 101, minutes=key % 60)


def add_products(alias: str, keys: list[int], **fields: Any) -> None:
    Product.objects.using(alias).bulk_create(
        Product(id=key, slug=f"p{key}", updated_at=updated(key), **fields) for key in keys
    )


def product_locs(keys: list[int]) -> list[str]:
    return [f"{BASE}/p/p{key}/" for key in keys]


def page_lastmods(keys: list[int], size: int) -> list[str]:
    return [max(updated(key) for key in keys[i : i + size]).isoformat() for i in range(0, len(keys), size)]


def served(source: Any, first: Any, limit: int) -> list[Any]:
    return list(source.entries(first, limit))


def test_keyset_serves_every_row_by_key_ranges_with_true_lastmods(make_client, database):
    add_products(database, GAPPY)
    source = keyset(Product.objects.using(database))
    assert isinstance(source, PagedSource)
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.add_provider("products", source, page_size=4)
    client = make_client(sitemaps)
    index = validate(client.get("/sitemap-index.xml").body)
    assert locs(index) == [f"{BASE}/sitemap-products-{n}.xml" for n in (1, 2, 3)]
    assert lastmods(index) == page_lastmods(GAPPY, 4)  # the newest of each page, to the second
    pages = [locs(validate(client.get(f"/sitemap-products-{n}.xml").body)) for n in (3, 1, 2)]
    assert pages[1] + pages[2] + pages[0] == product_locs(GAPPY)  # each page in key order
    assert client.get("/sitemap-products-4.xml").status == 404


def test_rows_outside_the_queryset_are_not_listed(make_client, database):
    add_products(database, [1, 2, 3, 4])
    add_products(database, [5, 6], published=False)
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.add_provider("products", keyset(Product.objects.using(database).filter(published=True)))
    client = make_client(sitemaps)
    assert locs(validate(client.get("/sitemap-products-1.xml").body)) == product_locs([1, 2, 3, 4])


def test_an_empty_queryset_has_no_pages(make_client, database):
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.add_provider("products", keyset(Product.objects.using(database)))
    sitemaps.add_provider("pages", lambda: ["/"])
    client = make_client(sitemaps)
    assert locs(validate(client.get("/sitemap-index.xml").body)) == [f"{BASE}/sitemap-pages-1.xml"]
    assert client.get("/sitemap-products-1.xml").status == 404


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    keys=st.sets(st.integers(1, 5_000), max_size=30),
    page_size=st.integers(1, 7),
    chunk_size=st.integers(1, 4),
)
def test_every_row_is_listed_once_in_key_order_whatever_the_gaps_and_sizes(
    database, keys, page_size, chunk_size
):
    empty_tables(database)
    ordered = sorted(keys)
    add_products(database, ordered)
    source = keyset(Product.objects.using(database), chunk_size=chunk_size)
    pages = source.pages(page_size)
    assert len(pages) == -(-len(ordered) // page_size)
    listed = [[url.loc for url in served(source, page.first, page_size)] for page in pages]
    assert all(len(page) <= page_size for page in listed)
    assert [loc for page in listed for loc in page] == [f"/p/p{key}/" for key in ordered]
    assert [page.lastmod.isoformat() for page in pages] == page_lastmods(ordered, page_size)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    slugs=st.sets(st.from_regex(r"[a-zA-Z0-9_-]{1,12}", fullmatch=True), max_size=20),
    page_size=st.integers(1, 5),
)
def test_a_unique_string_key_pages_in_the_databases_own_order(database, slugs, page_size):
    empty_tables(database)
    products = Product.objects.using(database)
    products.bulk_create(Product(slug=slug, updated_at=EPOCH) for slug in slugs)
    in_db_order = list(products.order_by("slug").values_list("slug", flat=True))  # its collation decides
    source = keyset(products, entry=lambda p: p.slug, key="slug")
    pages = source.pages(page_size)
    assert [page.first for page in pages] == in_db_order[::page_size]
    assert [slug for page in pages for slug in served(source, page.first, page_size)] == in_db_order


def test_a_uuid_key_and_a_date_lastmod(make_client, database):
    articles = Article.objects.using(database)
    articles.bulk_create(Article(slug=f"a{n}", updated=date(2026, 1, 1 + n)) for n in range(7))
    ids = sorted(articles.values_list("id", flat=True))  # the database's order of its UUIDs
    source = keyset(articles, entry=lambda a: Url(f"/a/{a.id}", lastmod=a.updated), lastmod="updated")
    pages = source.pages(3)
    assert [page.first for page in pages] == [str(ids[0]), str(ids[3]), str(ids[6])]
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.add_provider("articles", source, page_size=3)
    client = make_client(sitemaps)
    newest = [
        max(articles.filter(id__in=ids[i : i + 3]).values_list("updated", flat=True)) for i in (0, 3, 6)
    ]
    assert lastmods(validate(client.get("/sitemap-index.xml").body)) == [d.isoformat() for d in newest]
    listed = [loc for n in (1, 2, 3) for loc in locs(validate(client.get(f"/sitemap-articles-{n}.xml").body))]
    assert listed == [f"{BASE}/a/{uuid}" for uuid in ids]


def test_rows_whose_unique_key_is_null_have_no_place_and_are_left_out(database):
    add_products(database, [1, 2, 3])
    Product.objects.using(database).filter(id=2).update(sku="B")
    Product.objects.using(database).filter(id=3).update(sku="A")
    source = keyset(Product.objects.using(database), entry=lambda p: p.sku, key="sku")
    assert [page.first for page in source.pages(10)] == ["A"]
    assert served(source, "A", 10) == ["A", "B"]


def test_the_plan_seeks_each_page_start_by_key_and_offsets_only_within_that_seek(database):
    add_products(database, GAPPY)
    source = keyset(Product.objects.using(database))
    with CaptureQueriesContext(connections[database]) as planned:
        pages = source.pages(4)
    assert [page.first for page in pages] == [3, 21, 144]
    [query] = planned.captured_queries  # one query, whatever the number of pages
    sql = " ".join(query["sql"].upper().split())
    assert "ROW_NUMBER" not in sql and "OVER" not in sql  # no row is numbered
    assert sql.startswith('WITH RECURSIVE "SITEMAP_PAGES"'), sql
    # The one OFFSET is the step from a page's first key to the next: LIMIT 1, page_size keys on.
    assert re.findall(r"LIMIT (\d+) OFFSET (\d+)", sql) == [("1", "4")], sql
    assert sql.count("OFFSET") == 1
    seek = '"DJANGOSITE_PRODUCT"."ID" >= ("SITEMAP_PAGES"."SITEMAP_FIRST")'
    assert sql.count(seek) == 2, sql  # the step, and the page whose newest lastmod is taken


def test_a_page_seeks_by_key_and_skips_no_row_with_offset(database):
    add_products(database, GAPPY)
    source = keyset(Product.objects.using(database), chunk_size=2)
    pages = source.pages(4)
    with CaptureQueriesContext(connections[database]) as read:
        assert len(served(source, pages[1].first, 4)) == 4
    first, second = (" ".join(query["sql"].upper().split()) for query in read.captured_queries)
    assert re.search(r'"DJANGOSITE_PRODUCT"\."ID" >= 21\b', first), first  # from the page's first key
    assert re.search(r'"DJANGOSITE_PRODUCT"\."ID" > 34\b', second), second  # past the chunk's last
    for sql in (first, second):
        assert "OFFSET" not in sql, sql
        assert re.search(r'ORDER BY "DJANGOSITE_PRODUCT"\."ID" ASC LIMIT 2$', sql), sql


def test_the_orm_runs_in_worker_threads_under_asgi_never_on_the_event_loop(make_client, database):
    add_products(database, [1, 2])
    threads: list[tuple[str, bool]] = []

    def entry(product: Product) -> str:
        try:
            asyncio.get_running_loop()
            on_loop = True
        except RuntimeError:
            on_loop = False
        threads.append((threading.current_thread().name, on_loop))
        return product.get_absolute_url()

    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.add_provider("products", keyset(Product.objects.using(database), entry))
    client = make_client(sitemaps)
    assert client.get("/sitemap-products-1.xml").status == 200  # SynchronousOnlyOperation would be a 503
    assert [on_loop for _, on_loop in threads] == [False, False]
    if client.kind == "wsgi":
        assert {name for name, _ in threads} == {threading.current_thread().name}


def test_saves_and_deletes_show_once_signals_invalidate_the_section(make_client, database):
    add_products(database, [1, 2])
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.add_provider("products", keyset(Product.objects.using(database)))

    def refresh(sender: type, **kwargs: Any) -> None:
        sitemaps.invalidate("products")

    post_save.connect(refresh, sender=Product, dispatch_uid="keyset-test")
    post_delete.connect(refresh, sender=Product, dispatch_uid="keyset-test")
    try:
        client = make_client(sitemaps)
        assert locs(validate(client.get("/sitemap-products-1.xml").body)) == product_locs([1, 2])
        Product(id=7, slug="p7", updated_at=updated(7)).save(using=database)
        assert locs(validate(client.get("/sitemap-products-1.xml").body)) == product_locs([1, 2, 7])
        Product.objects.using(database).get(id=1).delete()
        assert locs(validate(client.get("/sitemap-products-1.xml").body)) == product_locs([2, 7])
    finally:
        post_save.disconnect(sender=Product, dispatch_uid="keyset-test")
        post_delete.disconnect(sender=Product, dispatch_uid="keyset-test")


def test_a_connection_is_given_back_after_each_query_as_a_request_would(database):
    add_products(database, [1, 2, 3])
    source = keyset(Product.objects.using(database))
    connection = connections[database]
    source.pages(2)
    assert connection.connection is None  # CONN_MAX_AGE = 0: closed, as at the end of a request
    with transaction.atomic(using=database):  # never inside a transaction
        Product.objects.using(database).filter(id=1).update(slug="first")
        assert [url.loc for url in served(source, 1, 2)] == ["/p/first/", "/p/p2/"]
        assert connection.connection is not None and connection.in_atomic_block


@pytest.mark.parametrize(
    ("build", "message"),
    [
        pytest.param(
            lambda: keyset(Product.objects.all(), key="published"), "not unique", id="key-not-unique"
        ),
        pytest.param(
            lambda: keyset(Product.objects.all(), key="colour"), "no field 'colour'", id="key-missing"
        ),
        pytest.param(lambda: keyset(Article.objects.all()), "no field 'updated_at'", id="lastmod-missing"),
        pytest.param(lambda: keyset(Product.objects.values("slug")), "model instances", id="values"),
        pytest.param(lambda: keyset(Product.objects.all()[:10]), "sliced", id="sliced"),
        pytest.param(lambda: keyset([Product()]), "needs a QuerySet", id="not-a-queryset"),  # type: ignore[arg-type]
        pytest.param(lambda: keyset(Product.objects.all(), chunk_size=0), "chunk_size", id="chunk-size"),
        pytest.param(lambda: keyset(Product.objects.all(), entry="slug"), "callable", id="entry"),  # type: ignore[arg-type]
    ],
)
def test_a_misconfigured_keyset_is_refused_at_construction(django_sqlite, build, message):
    with pytest.raises(ConfigurationError, match=message):
        build()


def test_without_a_lastmod_field_the_index_has_none_and_entries_none(make_client, database):
    add_products(database, [1, 2, 3])
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.add_provider("products", keyset(Product.objects.using(database), lastmod=None), page_size=2)
    client = make_client(sitemaps)
    assert lastmods(validate(client.get("/sitemap-index.xml").body)) == [None, None]
    page = validate(client.get("/sitemap-products-1.xml").body)
    assert (locs(page), lastmods(page)) == (product_locs([1, 2]), [None, None])
