from sitemap_middleware import Sitemaps, Url

from .xsd import locs, validate


def test_index_and_page_served_and_valid(make_client):
    sitemaps = Sitemaps(base_url="https://shop.example")
    sitemaps.provider("pages")(lambda: ["/", Url("/about?a=1&b=2")])
    client = make_client(sitemaps)
    index = client.get("/sitemap-index.xml")
    assert index.status == 200
    assert locs(validate(index.body)) == ["https://shop.example/sitemap-pages-1.xml"]
    page = client.get("/sitemap-pages-1.xml")
    assert locs(validate(page.body)) == ["https://shop.example/", "https://shop.example/about?a=1&b=2"]
