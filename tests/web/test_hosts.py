"""Several sites in one app, only through an explicit allow-list; the Host header never leaks."""

from __future__ import annotations

import pytest

from sitemap_middleware import ConfigurationError, Hosts, Sitemaps

from ..conftest import BASE
from ..xsd import locs, validate

INDEX = "/sitemap-index.xml"
PAGE = "/sitemap-products-1.xml"


def multi(**options: object) -> Sitemaps:
    sitemaps = Sitemaps(base_url=BASE, **options)  # type: ignore[arg-type]
    sitemaps.provider("products")(lambda: ["/p/1", "/p/2"])
    return sitemaps


def test_without_hosts_the_host_header_never_reaches_the_output(make_client):
    client = make_client(multi())
    plain = client.get(PAGE).body
    hostile = client.get(PAGE, {"Host": "evil.example", "X-Forwarded-Host": "evil.example"})
    assert hostile.body == plain
    assert b"evil" not in client.get(INDEX, {"Host": "evil.example"}).body


def test_listed_host_gets_its_own_urls(make_client):
    client = make_client(multi(hosts=["shop.example.de"]))
    index = locs(validate(client.get(INDEX, {"Host": "shop.example.de"}).body))
    page = locs(validate(client.get(PAGE, {"Host": "SHOP.example.de:443"}).body))
    assert index == ["https://shop.example.de/sitemap-products-1.xml"]
    assert page == ["https://shop.example.de/p/1", "https://shop.example.de/p/2"]


def test_sites_never_share_a_cached_document(make_client):
    client = make_client(multi(hosts=["shop.example.de"]))
    german = client.get(PAGE, {"Host": "shop.example.de"})
    default = client.get(PAGE, {"Host": "shop.example"})
    german_again = client.get(PAGE, {"Host": "shop.example.de"})
    assert locs(validate(default.body))[0] == f"{BASE}/p/1"
    assert german_again.body == german.body
    assert german_again.headers["ETag"] != client.get(PAGE, {"Host": "shop.example"}).headers["ETag"]


def test_mapping_gives_each_host_its_base_url(make_client):
    client = make_client(multi(hosts={"blog.example": "https://blog.example/en"}))
    page = locs(validate(client.get(PAGE, {"Host": "blog.example"}).body))
    assert page == ["https://blog.example/en/p/1", "https://blog.example/en/p/2"]


def test_unlisted_host_gets_the_default_site(make_client):
    client = make_client(multi(hosts=["shop.example.de"]))
    assert client.get(PAGE, {"Host": "evil.example"}).body == client.get(PAGE, {"Host": "shop.example"}).body


def test_unlisted_host_gets_400_when_rejecting(make_client):
    client = make_client(multi(hosts=Hosts(["shop.example.de"], reject_unknown=True)))
    assert client.get(PAGE, {"Host": "evil.example"}).status == 400
    assert client.get("/robots.txt", {"Host": "evil.example"}).status == 400
    assert client.get(PAGE, {"Host": "shop.example.de"}).status == 200


def test_unlisted_host_still_reaches_the_app_on_its_own_paths(make_client):
    client = make_client(multi(hosts=Hosts(["shop.example.de"], reject_unknown=True)))
    response = client.get("/cart", {"Host": "evil.example"})
    assert (response.status, response.body) == (200, b"app:GET /cart")


@pytest.mark.parametrize(
    "headers",
    [
        pytest.param({"X-Forwarded-Host": "shop.example.de"}, id="x-forwarded-host"),
        pytest.param({"Forwarded": 'for=1.2.3.4;host="shop.example.de";proto=https'}, id="forwarded"),
    ],
)
def test_forwarded_host_is_ignored_unless_trusted(make_client, headers):
    untrusted = make_client(multi(hosts=["shop.example.de"]))
    trusted = make_client(multi(hosts=Hosts(["shop.example.de"], trust_forwarded=True)))
    request = {"Host": "internal:8000", **headers}
    assert locs(validate(untrusted.get(PAGE, request).body))[0] == f"{BASE}/p/1"
    assert locs(validate(trusted.get(PAGE, request).body))[0] == "https://shop.example.de/p/1"


def test_trusted_forwarded_host_reads_the_value_our_proxy_appended(make_client):
    client = make_client(multi(hosts=Hosts(["shop.example.de"], trust_forwarded=True)))
    spoofed = {"Host": "internal", "X-Forwarded-Host": "shop.example.de, shop.example"}
    assert locs(validate(client.get(PAGE, spoofed).body))[0] == f"{BASE}/p/1"


def test_robots_names_the_index_of_the_requested_site(make_client):
    client = make_client(multi(hosts=["shop.example.de"]))
    body = client.get("/robots.txt", {"Host": "shop.example.de"}).body
    assert body.endswith(b"Sitemap: https://shop.example.de/sitemap-index.xml\n")


def test_provider_taking_base_url_is_told_which_site(make_client):
    sitemaps = Sitemaps(base_url=BASE, hosts=["shop.example.de"])

    @sitemaps.provider("products")
    def products(base_url: str) -> list[str]:
        return ["/de-only"] if base_url.endswith(".de") else ["/everywhere"]

    client = make_client(sitemaps)
    assert locs(validate(client.get(PAGE, {"Host": "shop.example.de"}).body)) == [
        "https://shop.example.de/de-only"
    ]
    assert locs(validate(client.get(PAGE, {"Host": "shop.example"}).body)) == [f"{BASE}/everywhere"]


@pytest.mark.parametrize(
    "options",
    [
        pytest.param({"hosts": "shop.example.de"}, id="hosts-as-string"),
        pytest.param({"hosts": Hosts("shop.example.de")}, id="hosts-names-as-string"),
        pytest.param({"hosts": {"x.example": "ftp://x.example"}}, id="bad-url-in-mapping"),
    ],
)
def test_host_misconfiguration_raises_at_construction(options):
    with pytest.raises(ConfigurationError):
        Sitemaps(base_url=BASE, **options)
