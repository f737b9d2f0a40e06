import sqlite3

import pytest

from sitemap_middleware import Sitemaps, Url

from .xsd import SKIP_REASON, lastmods, locs, schemas_available, validate


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


def test_a_cursors_rows_are_entries_as_they_come(make_client):
    """A provider may hand over a database cursor: each row is `Url`'s fields in order."""
    db = sqlite3.connect(":memory:", check_same_thread=False)
    db.execute("CREATE TABLE product (slug TEXT, updated_at TEXT, changefreq TEXT)")
    db.executemany(
        "INSERT INTO product VALUES (?, ?, ?)",
        [("blue-shoe", "2026-01-05T10:00:00+02:00", "daily"), ("red&hat", "2026-02-01", None)],
    )
    sitemaps = Sitemaps(base_url="https://shop.example")
    sitemaps.provider("products")(
        lambda: db.execute("SELECT '/p/' || slug, updated_at, changefreq FROM product ORDER BY slug")
    )
    page = make_client(sitemaps).get("/sitemap-products-1.xml")
    assert page.status == 200
    root = validate(page.body)
    assert locs(root) == ["https://shop.example/p/blue-shoe", "https://shop.example/p/red&hat"]
    assert lastmods(root) == ["2026-01-05T08:00:00+00:00", "2026-02-01"]
    assert b"<changefreq>daily</changefreq>" in page.body
