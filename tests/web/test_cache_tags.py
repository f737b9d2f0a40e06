"""Cache tags (`Sitemaps(cache_tags=...)`): every sitemap document's 200 names what a CDN purges it by.

On both adapters: pages, index files, their ``.gz``, HEAD, cold renders and cache hits, the
replayed answer; robots.txt when we merge it; never a 304 (RFC 9110 §15.4.5), never an error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sitemap_middleware import ConfigurationError, Sitemaps
from sitemap_middleware.web.rules import Route
from sitemap_middleware.web.tags import MAX_HEADER_BYTES, MAX_TAG_BYTES, CacheTags

from ..conftest import BASE, SitemapClient, counter, make_shop

MakeClient = Callable[..., SitemapClient]


def tags(response: Any, header: str = "Cache-Tag") -> list[str] | None:
    value = response.headers.get(header)
    if value is None:
        return None
    return value.split("," if header == "Cache-Tag" else " ")


PRODUCTS_2 = ["sitemap", "sitemap-products", "sitemap-products-2"]
INDEX_1 = ["sitemap", "sitemap-index", "sitemap-index-1"]


@pytest.mark.parametrize(
    ("method", "path", "expected"),
    [
        pytest.param("GET", "/sitemap-products-2.xml", PRODUCTS_2, id="page"),
        pytest.param("GET", "/sitemap-products-2.xml.gz", PRODUCTS_2, id="page-gz"),
        pytest.param(
            "HEAD", "/sitemap-pages-1.xml", ["sitemap", "sitemap-pages", "sitemap-pages-1"], id="page-head"
        ),
        pytest.param("GET", "/sitemap-index.xml", INDEX_1, id="index"),
        pytest.param("GET", "/sitemap-index.xml.gz", INDEX_1, id="index-gz"),
        pytest.param("GET", "/sitemap.xml", INDEX_1, id="index-alias"),
    ],
)
def test_every_sitemap_document_carries_its_cache_tags_cold_and_cached(
    make_client: MakeClient, method: str, path: str, expected: list[str]
) -> None:
    client = make_client(make_shop(5, products_page_size=2, cache_tags="Cache-Tag"))
    cold = client.request(method, path)
    hit = client.request(method, path)
    gzip_hit = client.request(method, path, {"Accept-Encoding": "gzip"})
    for response in (cold, hit, gzip_hit):
        assert response.status == 200
        assert tags(response) == expected


def test_surrogate_keys_are_space_separated(make_client: MakeClient) -> None:
    client = make_client(make_shop(5, products_page_size=2, cache_tags="Surrogate-Key"))
    response = client.get("/sitemap-products-3.xml")
    assert response.headers["Surrogate-Key"] == "sitemap sitemap-products sitemap-products-3"
    assert "Cache-Tag" not in response.headers


def test_cache_tags_are_off_by_default(make_client: MakeClient) -> None:
    client = make_client(make_shop(5))
    for path in ("/sitemap-index.xml", "/sitemap-products-1.xml", "/robots.txt"):
        response = client.get(path)
        assert response.status == 200
        assert "Cache-Tag" not in response.headers and "Surrogate-Key" not in response.headers


def test_index_files_past_the_first_are_tagged_by_number(make_client: MakeClient) -> None:
    sitemaps = Sitemaps(base_url=BASE, cache_tags="Cache-Tag", page_size=1)
    rows = 50_001  # one page each: the 50,001st page is listed by index file 2

    def window(offset: int, limit: int | None) -> list[str]:
        return [f"/r/{n}" for n in range(offset, rows if limit is None else min(rows, offset + limit))]

    sitemaps.add_provider("rows", window, count=lambda: rows)
    client = make_client(sitemaps)
    response = client.get("/sitemap-index-2.xml")
    assert response.status == 200
    assert tags(response) == ["sitemap", "sitemap-index", "sitemap-index-2"]


def test_a_304_carries_no_cache_tags(make_client: MakeClient) -> None:
    client = make_client(make_shop(5, cache_tags="Cache-Tag"))
    client.get("/sitemap-products-1.xml")  # a cold page streams before its bytes (its ETag) exist
    etag = client.get("/sitemap-products-1.xml").headers["ETag"]
    response = client.get("/sitemap-products-1.xml", {"If-None-Match": etag})
    assert response.status == 304
    assert "Cache-Tag" not in response.headers


def test_a_replayed_answer_keeps_its_cache_tags(make_client: MakeClient) -> None:
    sitemaps = make_shop(5, cache_tags="Cache-Tag")
    client = make_client(sitemaps)
    gzip = {"Accept-Encoding": "gzip"}
    client.get("/sitemap-products-1.xml", gzip)  # rendered and stored
    client.get("/sitemap-products-1.xml", gzip)  # answered in full, remembered
    before = counter(sitemaps, "products", "replayed")
    replayed = client.get("/sitemap-products-1.xml", gzip)
    assert counter(sitemaps, "products", "replayed") == before + 1
    assert tags(replayed) == ["sitemap", "sitemap-products", "sitemap-products-1"]


def test_the_robots_txt_we_merge_is_tagged_and_errors_are_not(make_client: MakeClient) -> None:
    client = make_client(make_shop(5, cache_tags="Cache-Tag"))
    robots = client.get("/robots.txt")
    assert robots.status == 200 and b"Sitemap: " in robots.body
    assert tags(robots) == ["sitemap", "sitemap-robots"]
    missing = client.get("/sitemap-products-9.xml")
    assert missing.status == 404
    assert "Cache-Tag" not in missing.headers


@pytest.mark.parametrize("header", [None, "", "Cache Tag", "X:Y", 3], ids=repr)
def test_a_header_that_is_no_header_name_is_refused_at_construction(header: object) -> None:
    if header is None:
        Sitemaps(base_url=BASE, cache_tags=header)  # off: fine
        return
    with pytest.raises(ConfigurationError, match="cache_tags"):
        Sitemaps(base_url=BASE, cache_tags=header)  # type: ignore[arg-type]


def test_a_section_name_too_long_for_a_tag_is_refused_at_registration() -> None:
    sitemaps = Sitemaps(base_url=BASE, cache_tags="Surrogate-Key")
    with pytest.raises(ConfigurationError, match="cache tags"):
        sitemaps.add_provider("a" * 1010, lambda: ["/"])
    sitemaps.add_provider("a" * 1000, lambda: ["/"])  # fits
    Sitemaps(base_url=BASE).add_provider("a" * 1010, lambda: ["/"])  # without tags, no limit


section_names = st.from_regex(r"[a-z0-9_]{1,40}(-[a-z0-9_]{1,40}){0,3}", fullmatch=True)


@given(
    header=st.sampled_from(["Cache-Tag", "Surrogate-Key", "Edge-Cache-Tag", "xkey"]),
    section=section_names,
    number=st.integers(1, 999_999_999),
    index=st.booleans(),
)
def test_tags_split_back_exactly_and_stay_within_the_cdn_limits(
    header: str, section: str, number: int, index: bool
) -> None:
    cache_tags = CacheTags.named(header)
    route = Route("index", number=number) if index else Route("page", section=section, number=number)
    name, value = cache_tags.header(route) or ("", "")
    assert name == header
    split = value.split(cache_tags.separator)
    named = f"index-{number}" if index else f"{section}-{number}"
    assert split == ["sitemap", f"sitemap-{named.rsplit('-', 1)[0]}", f"sitemap-{named}"]
    assert all(0 < len(tag.encode()) <= MAX_TAG_BYTES and " " not in tag and "," not in tag for tag in split)
    assert len(value.encode()) <= MAX_HEADER_BYTES
