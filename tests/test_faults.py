"""Provider faults: 503 before the first URL, stale-if-error for the index, clear errors."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sitemap_middleware import Sitemaps

from .conftest import BASE, make_shop
from .xsd import locs, validate


class Flaky:
    """A provider that fails (before its first URL) while ``broken`` is set."""

    def __init__(self) -> None:
        self.broken = False

    def __call__(self) -> Iterator[str]:
        if self.broken:
            raise ConnectionError("database is down")
        yield from ["/a", "/b"]


def build() -> tuple[Sitemaps, Flaky]:
    """The shared shop, one page and then a `Flaky` provider of products."""
    flaky = Flaky()
    return make_shop(flaky, pages=["/"], sections=["pages", "products"]), flaky


def test_provider_failing_before_its_first_url_gives_503_with_retry_after(make_client):
    sitemaps, flaky = build()
    flaky.broken = True
    response = make_client(sitemaps).get("/sitemap-products-1.xml")
    assert response.status == 503
    assert int(response.headers["Retry-After"]) > 0
    assert sitemaps.stats.snapshot()["products"]["provider_errors"] == 1


def test_index_failing_with_a_good_one_known_serves_the_last_good_index(make_client):
    sitemaps, flaky = build()
    client = make_client(sitemaps)
    good = client.get("/sitemap-index.xml").body
    flaky.broken = True
    sitemaps.invalidate()
    response = client.get("/sitemap-index.xml")
    assert response.status == 200
    assert response.body == good
    assert len(locs(validate(response.body))) == 2  # the failing section is still listed
    assert sitemaps.stats.snapshot()[""]["stale_served"] == 1


def test_index_failing_with_no_good_one_known_gives_503_not_a_shorter_index(make_client):
    sitemaps, flaky = build()
    flaky.broken = True
    response = make_client(sitemaps).get("/sitemap-index.xml")
    assert response.status == 503
    assert "Retry-After" in response.headers


@pytest.mark.parametrize(
    "result",
    [
        pytest.param(42, id="int"),
        pytest.param("/just-a-string", id="str"),
        pytest.param({"loc": "/"}, id="dict"),
    ],
)
def test_provider_returning_the_wrong_type_is_a_503_naming_the_provider(make_client, caplog, result):
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.add_provider("weird", lambda: result)
    response = make_client(sitemaps).get("/sitemap-weird-1.xml")
    assert response.status == 503
    assert any("provider 'weird' returned" in record.getMessage() for record in caplog.records)


def test_index_over_50000_sitemaps_is_split_not_a_503_nor_a_truncated_index(make_client):
    # Google does not follow an index listing an index: a second index file lists the rest.
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.add_provider("tiny", lambda: ["/"] * 50_001, page_size=1, count=lambda: 50_001)
    client = make_client(sitemaps)
    assert len(locs(validate(client.get("/sitemap-index.xml").body))) == 50_000
    assert locs(validate(client.get("/sitemap-index-2.xml").body)) == [f"{BASE}/sitemap-tiny-50001.xml"]
    assert client.get("/sitemap-index-3.xml").status == 404


def test_index_of_exactly_50000_sitemaps_is_served(make_client):
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.add_provider("tiny", lambda: ["/"] * 50_000, page_size=1, count=lambda: 50_000)
    assert len(locs(validate(make_client(sitemaps).get("/sitemap-index.xml").body))) == 50_000


def test_duplicate_locs_are_kept_as_given(make_client):
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.add_provider("pages", lambda: ["/a", "/b", "/a", f"{BASE}/b"])
    page = locs(validate(make_client(sitemaps).get("/sitemap-pages-1.xml").body))
    assert page == [f"{BASE}/a", f"{BASE}/b", f"{BASE}/a", f"{BASE}/b"]
