"""Past 50,000 sitemap files: the index is split into index files, each listing at most 50,000.

Google does not follow an index that lists another index, so `/sitemap-index.xml` lists the
first 50,000 files and `/sitemap-index-2.xml`, `-3`, … the rest, and robots.txt names each.
Counted sections with small pages make these sizes cheap: no URL is iterated for an index.
"""

from __future__ import annotations

import gzip
import itertools
import math
import tracemalloc
from collections.abc import Callable, Iterator
from datetime import date
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from sitemap_middleware import ConfigurationError, Sitemaps, Url

from ..conftest import BASE, SitemapClient, counter
from ..xsd import lastmods, locs, parse, validate

MAX = 50_000  # sitemaps.org: at most 50,000 sitemaps per index file

MakeClient = Callable[..., SitemapClient]


class Rows:
    """A windowed provider over ``count`` rows, ``/<name>/<n>``, recording every window read."""

    def __init__(self, name: str, count: int) -> None:
        self.name = name
        self.rows = count
        self.broken = False
        self.windows: list[tuple[int, int | None]] = []

    def count(self) -> int:
        if self.broken:
            raise ConnectionError("database is down")
        return self.rows

    def __call__(self, offset: int, limit: int | None) -> Iterator[str]:
        self.windows.append((offset, limit))
        end = self.rows if limit is None else min(self.rows, offset + limit)
        return (f"/{self.name}/{n}" for n in range(offset, end))


def counted(sections: dict[str, tuple[int, int]], **options: Any) -> tuple[Sitemaps, dict[str, Rows]]:
    """A `Sitemaps` with one counted section per ``name: (count, page_size)``."""
    sitemaps = Sitemaps(base_url=BASE, **options)
    tables = {}
    for name, (count, page_size) in sections.items():
        tables[name] = table = Rows(name, count)
        sitemaps.add_provider(name, table, page_size=page_size, count=table.count)
    return sitemaps, tables


def index_path(number: int) -> str:
    return "/sitemap-index.xml" if number == 1 else f"/sitemap-index-{number}.xml"


def page_urls(name: str, pages: int, root: str = BASE) -> list[str]:
    return [f"{root}/sitemap-{name}-{n}.xml" for n in range(1, pages + 1)]


def sitemap_lines(body: bytes) -> list[str]:
    return [
        line.partition(":")[2].strip() for line in body.decode().splitlines() if line.startswith("Sitemap:")
    ]


# -- 120,001 files: three index files ------------------------------------------------------------


def test_120001_files_make_three_index_files_listing_every_page_once_in_order(
    make_client: MakeClient,
) -> None:
    sitemaps, _ = counted({"tiny": (120_001, 1)})
    client = make_client(sitemaps)
    listed = [locs(validate(client.get(index_path(n)).body)) for n in (1, 2, 3)]
    assert [len(files) for files in listed] == [MAX, MAX, 20_001]
    assert list(itertools.chain(*listed)) == page_urls("tiny", 120_001)


@pytest.mark.parametrize("path", ["/sitemap-index-4.xml", "/sitemap-index-4.xml.gz", "/sitemap-index-99.xml"])
def test_index_number_past_the_last_is_404(make_client: MakeClient, path: str) -> None:
    client = make_client(counted({"tiny": (120_001, 1)})[0])
    assert (client.get(path).status, client.request("HEAD", path).status) == (404, 404)


def test_robots_names_every_index_file(make_client: MakeClient) -> None:
    client = make_client(counted({"tiny": (120_001, 1)})[0])
    assert client.get("/sitemap-index.xml").status == 200
    robots = client.get("/robots.txt")
    assert robots.status == 200
    assert robots.body.startswith(b"app:GET /robots.txt")  # the app's own file, merged
    assert sitemap_lines(robots.body) == [f"{BASE}{index_path(n)}" for n in (1, 2, 3)]


def test_robots_before_any_index_file_was_built_names_only_the_first(make_client: MakeClient) -> None:
    # robots.txt never calls a provider (docs/large-catalogues.md, "More than 50,000 sitemap files").
    sitemaps, tables = counted({"tiny": (120_001, 1)})
    client = make_client(sitemaps)
    assert sitemap_lines(client.get("/robots.txt").body) == [f"{BASE}/sitemap-index.xml"]
    assert tables["tiny"].windows == []
    client.get("/sitemap-index-3.xml")
    assert len(sitemap_lines(client.get("/robots.txt").body)) == 3


def test_robots_falls_back_to_the_last_known_index_files_once_they_are_invalidated(
    make_client: MakeClient,
) -> None:
    sitemaps, tables = counted({"tiny": (120_001, 1)})
    client = make_client(sitemaps)
    client.get("/sitemap-index.xml")
    sitemaps.invalidate()
    assert len(sitemap_lines(client.get("/robots.txt").body)) == 3
    tables["tiny"].rows = 50_000
    client.get("/sitemap-index.xml")
    assert sitemap_lines(client.get("/robots.txt").body) == [f"{BASE}/sitemap-index.xml"]


def test_robots_names_at_most_1000_index_files(make_client: MakeClient) -> None:
    client = make_client(counted({"huge": (1_000 * MAX + 1, 1)})[0])
    assert locs(validate(client.get("/sitemap-index-1001.xml").body)) == [f"{BASE}/sitemap-huge-50000001.xml"]
    lines = sitemap_lines(client.get("/robots.txt").body)
    assert (len(lines), lines[-1]) == (1_000, f"{BASE}/sitemap-index-1000.xml")


def test_sitemap_xml_is_the_first_index_file(make_client: MakeClient) -> None:
    client = make_client(counted({"tiny": (120_001, 1)})[0])
    first = client.get("/sitemap-index.xml")
    alias = client.get("/sitemap.xml")
    assert alias.body == first.body
    assert alias.headers["ETag"] == first.headers["ETag"]


@pytest.mark.parametrize("number", [1, 2, 3])
def test_gz_index_file_is_the_same_document_gzipped(make_client: MakeClient, number: int) -> None:
    client = make_client(counted({"tiny": (120_001, 1)})[0])
    plain = client.get(index_path(number))
    gz = client.get(index_path(number) + ".gz")
    assert gz.headers["Content-Type"] == "application/gzip"
    assert gzip.decompress(gz.body) == plain.body


@pytest.mark.parametrize(
    "path",
    [
        pytest.param("/sitemap-index-1.xml", id="first-by-number"),  # the first is /sitemap-index.xml
        pytest.param("/sitemap-index-0.xml", id="zero"),
        pytest.param("/sitemap-index-01.xml", id="leading-zero"),
        pytest.param("/sitemap-index-02.xml", id="leading-zero-of-a-real-one"),
        pytest.param("/sitemap-index-00.xml.gz", id="zeros-gz"),
        pytest.param("/sitemap-index-1.xml.gz", id="first-by-number-gz"),
        pytest.param("/sitemap-index-1234567890.xml", id="absurd-number"),
    ],
)
def test_non_canonical_index_numbers_are_404(make_client: MakeClient, path: str) -> None:
    response = make_client(counted({"tiny": (120_001, 1)})[0]).get(path)
    assert (response.status, response.body) == (404, b"Not Found\n")


@pytest.mark.parametrize(
    "path",
    [
        "/sitemap-index-2.xml/",
        "/sitemap-index-2.XML",
        "/sitemap-index-2.xml.gz.gz",
        "/sitemap-index--2.xml",
        "/sitemap-index-\u0662.xml",
        "/sitemap-index-+2.xml",
        "/sitemap-index-2-.xml",
    ],
)
def test_index_looking_paths_that_are_not_ours_reach_the_app(make_client: MakeClient, path: str) -> None:
    response = make_client(counted({"tiny": (120_001, 1)})[0]).get(path)
    assert response.status == 200
    assert response.body.startswith(b"app:GET ")


def test_section_named_index_is_refused_since_its_pages_would_be_index_files() -> None:
    with pytest.raises(ConfigurationError, match="index"):
        Sitemaps(base_url=BASE).add_provider("index", lambda: ["/"])


def test_section_whose_name_starts_with_index_keeps_its_pages(make_client: MakeClient) -> None:
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.add_provider("index-2", lambda: ["/a"])
    client = make_client(sitemaps)
    assert locs(validate(client.get("/sitemap-index-2-1.xml").body)) == [f"{BASE}/a"]
    assert client.get("/sitemap-index-2.xml").status == 404


# -- the 50,000 boundary ----------------------------------------------------------------------------


def test_exactly_50000_files_are_one_index_file(make_client: MakeClient) -> None:
    client = make_client(counted({"tiny": (MAX, 1)})[0])
    assert locs(validate(client.get("/sitemap-index.xml").body)) == page_urls("tiny", MAX)
    assert client.get("/sitemap-index-2.xml").status == 404
    assert sitemap_lines(client.get("/robots.txt").body) == [f"{BASE}/sitemap-index.xml"]


# -- several sections, mounts, sites ---------------------------------------------------------------


def test_index_files_split_across_sections_in_registration_order_with_their_lastmods(
    make_client: MakeClient,
) -> None:
    sitemaps, _ = counted({"a": (60_000, 1)})
    stamps = [date(2024, 3, day) for day in (1, 2, 3)]
    sitemaps.add_provider("b", lambda: [Url(f"/b/{n}", lastmod=stamps[n]) for n in range(3)], page_size=1)
    sitemaps.add_provider("c", Rows("c", 45_000), page_size=1, count=lambda: 45_000)
    client = make_client(sitemaps)
    roots = [validate(client.get(index_path(n)).body) for n in (1, 2, 3)]
    listed = [locs(root) for root in roots]
    assert list(itertools.chain(*listed)) == page_urls("a", 60_000) + page_urls("b", 3) + page_urls(
        "c", 45_000
    )
    assert [len(files) for files in listed] == [MAX, MAX, 5_003]
    second = dict(zip(listed[1], lastmods(roots[1]), strict=True))
    assert [second[url] for url in page_urls("b", 3)] == [day.isoformat() for day in stamps]
    assert second[f"{BASE}/sitemap-a-60000.xml"] is None  # a counted section measures no lastmod


def test_mounted_index_files_and_robots_live_under_the_mount(make_client: MakeClient) -> None:
    client = make_client(counted({"tiny": (MAX + 2, 1)})[0], mount="/shop")
    second = locs(validate(client.get("/sitemap-index-2.xml").body))
    assert second == [f"{BASE}/shop/sitemap-tiny-{n}.xml" for n in (MAX + 1, MAX + 2)]
    assert sitemap_lines(client.get("/robots.txt").body) == [
        f"{BASE}/shop/sitemap-index.xml",
        f"{BASE}/shop/sitemap-index-2.xml",
    ]


def test_each_site_gets_its_own_index_files(make_client: MakeClient) -> None:
    client = make_client(counted({"tiny": (MAX + 1, 1)}, hosts=["shop.example.de"])[0])
    german = {"Host": "shop.example.de"}
    de = client.get("/sitemap-index-2.xml", german)
    default = client.get("/sitemap-index-2.xml")
    assert locs(validate(de.body)) == [f"https://shop.example.de/sitemap-tiny-{MAX + 1}.xml"]
    assert locs(validate(default.body)) == [f"{BASE}/sitemap-tiny-{MAX + 1}.xml"]
    assert de.headers["ETag"] != default.headers["ETag"]
    assert sitemap_lines(client.get("/robots.txt", german).body) == [
        "https://shop.example.de/sitemap-index.xml",
        "https://shop.example.de/sitemap-index-2.xml",
    ]


# -- caching: each index file its own document, from plans made once ---------------------------------


def test_each_index_file_is_its_own_cached_document_with_its_own_etag(make_client: MakeClient) -> None:
    sitemaps, _ = counted({"tiny": (120_001, 1)})
    client = make_client(sitemaps)
    etags = [client.get(index_path(n)).headers["ETag"] for n in (1, 2, 3)]
    assert len(set(etags)) == 3
    for number, etag in zip((1, 2, 3), etags, strict=True):
        again = client.get(index_path(number), {"If-None-Match": etag})
        assert again.status == 304
        assert again.headers["ETag"] == etag
    assert counter(sitemaps, "", "renders") == 3


def test_declared_versions_give_each_index_file_its_own_etag(make_client: MakeClient) -> None:
    sitemaps = Sitemaps(base_url=BASE)
    rows = Rows("v", MAX + 1)
    sitemaps.add_provider("v", rows, page_size=1, count=rows.count, version=lambda: date(2024, 1, 1))
    client = make_client(sitemaps)
    first, second = (client.get(index_path(n)).headers["ETag"] for n in (1, 2))
    assert first != second
    assert client.get(index_path(2), {"If-None-Match": second}).status == 304
    assert client.get(index_path(1), {"If-None-Match": second}).status == 200


def test_index_files_are_built_from_one_plan_without_reading_the_provider_again(
    make_client: MakeClient,
) -> None:
    sitemaps, tables = counted({"tiny": (120_001, 1)})
    client = make_client(sitemaps)
    for number in (1, 2, 3, 4):
        client.get(index_path(number))
    # Only the count's two checks (a row past it, the last window up to a URL), once.
    assert tables["tiny"].windows == [(120_001, 1), (120_000, 1)]


def test_index_file_failing_with_a_good_one_known_serves_that_last_good_file(make_client: MakeClient) -> None:
    sitemaps, tables = counted({"tiny": (MAX + 1, 1)})
    client = make_client(sitemaps)
    good = client.get("/sitemap-index-2.xml").body
    tables["tiny"].broken = True
    sitemaps.invalidate()
    stale = client.get("/sitemap-index-2.xml")
    assert (stale.status, stale.body) == (200, good)
    assert client.get("/sitemap-index-3.xml").status == 503  # no good one known: never a guess


# -- size: index file k costs what 50,000 entries cost ------------------------------------------------


def test_an_index_file_of_a_20m_page_section_takes_memory_for_50000_entries(make_client: MakeClient) -> None:
    client = make_client(counted({"huge": (20_000_000, 1)})[0])
    tracemalloc.start()
    try:
        last = client.get("/sitemap-index-400.xml")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert locs(parse(last.body))[-1] == f"{BASE}/sitemap-huge-20000000.xml"
    assert len(locs(parse(last.body))) == MAX
    assert peak < 32 * 2**20  # 20M entries would take gigabytes
    assert client.get("/sitemap-index-401.xml").status == 404


# -- property: every page once, whatever the sizes ---------------------------------------------------

PROPERTY = settings(
    max_examples=6, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
section_sizes = st.lists(st.tuples(st.integers(0, 60_000), st.integers(1, 3)), min_size=1, max_size=3)


@PROPERTY
@given(sizes=section_sizes)
@example(sizes=[(MAX, 1)])
@example(sizes=[(MAX - 1, 1), (1, 1)])
@example(sizes=[(MAX - 1, 1), (2, 1)])
@example(sizes=[(0, 1), (2 * MAX + 1, 2)])
@example(sizes=[(0, 1)])
def test_the_index_files_together_list_every_page_exactly_once(
    make_client: MakeClient, sizes: list[tuple[int, int]]
) -> None:
    sections = {f"s{n}": size for n, size in enumerate(sizes)}
    client = make_client(counted(sections)[0])
    expected = [
        url for name, (count, size) in sections.items() for url in page_urls(name, math.ceil(count / size))
    ]
    files = math.ceil(len(expected) / MAX)
    listed: list[str] = []
    for number in range(1, files + 1):
        response = client.get(index_path(number))
        assert response.status == 200
        listed += locs(parse(response.body))
    assert listed == expected
    assert client.get(index_path(files + 1)).status == 404
    assert len(sitemap_lines(client.get("/robots.txt").body)) == max(files, 1)
