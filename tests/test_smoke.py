import pytest

from sitemap_middleware import Sitemaps, Url

from .xsd import SKIP_REASON, locs, schemas_available, validate


def test_index_and_page_served_and_valid(make_client):
    sitemaps = Sitemaps(base_url="https://shop.example")
    sitemaps.provider("pages")(lambda: ["/", Url("/about?a=1&b=2")])
    client = make_client(sitemaps)
    index = client.get("/sitemap-index.xml")
    assert index.status == 200
    assert locs(validate(index.body)) == ["https://shop.example/sitemap-pages-1.xml"]
    page = client.get("/sitemap-pages-1.xml")
    assert locs(validate(page.body)) == ["https://shop.example/", "https://shop.example/about?a=1&b=2"]


def test_official_schemas_are_present_and_reject_a_bad_document():
    # The only test that skips without the schemas: every other test then checks well-formedness
    # only, and the run's summary counts them (conftest.py).
    if not schemas_available():
        pytest.skip(SKIP_REASON)
    url = "<url><loc>https://shop.example/</loc><priority>{}</priority></url>"
    urlset = '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{}</urlset>'
    assert locs(validate(urlset.format(url.format("0.5")).encode())) == ["https://shop.example/"]
    with pytest.raises(AssertionError, match=r"sitemap\.xsd rejects the document"):
        validate(urlset.format(url.format("1.5")).encode())  # sitemaps.org: priority is 0.0 to 1.0
    index = '<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{}</sitemapindex>'
    validate(index.format("<sitemap><loc>https://shop.example/sitemap-pages-1.xml</loc></sitemap>").encode())
    with pytest.raises(AssertionError, match=r"siteindex\.xsd rejects the document"):
        validate(index.format(url.format("0.5")).encode())  # a <url> is no index entry
