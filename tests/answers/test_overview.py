"""The HTML overview: every section, its files and URLs, each file's newest lastmod and
cache state, links to the index and every file; read by a person, in a real browser too."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from typing import Any

import pytest
from lxml import html

from sitemap_middleware import ConfigurationError, Sitemaps, Url

from ..conftest import BASE, make_shop
from ..servers import werkzeug_serving

PATH = "/sitemaps/"


def shop(**options: Any) -> Sitemaps:
    """The shared shop (100 dated products, a loc to escape among the pages) plus a third
    section, ``counted``: the overview tells a section that declares its count from the others."""
    sitemaps = make_shop(
        100,
        product=lambda n: Url(f"/p/{n}", lastmod=f"2026-01-{1 + n % 28:02d}"),
        pages=["/", "/about", "/<b>&amp"],
        page_size=40,
        overview_path=PATH,
        **options,
    )
    sitemaps.add_provider("counted", lambda offset, limit: ["/c/1", "/c/2", "/c/3"][offset:], count=lambda: 3)
    return sitemaps


def test_the_overview_lists_every_section_file_and_count(make_client):
    client = make_client(shop())
    client.get("/sitemap-products-2.xml")  # one page cached, the others cold
    response = client.get(PATH)
    assert response.status == 200
    assert response.headers["Content-Type"] == "text/html; charset=utf-8"
    assert response.headers["X-Robots-Tag"] == "noindex"
    assert response.headers["Cache-Control"] == "no-store"
    page = html.fromstring(response.body)
    assert page.findtext(".//span[@id='files']") == "5"
    assert page.findtext(".//span[@id='urls']") == "106"
    assert [a.get("href") for a in page.iterfind(".//a[@class='index']")] == [f"{BASE}/sitemap-index.xml"]
    products = page.find(".//section[@id='section-products']")
    assert products.findtext(".//span[@class='pages']") == "3"
    assert products.findtext(".//span[@class='urls']") == "100"
    rows = [[cell.text_content() for cell in row] for row in products.iterfind(".//tbody/tr")]
    assert [row[1] for row in rows] == [f"{BASE}/sitemap-products-{n}.xml" for n in (1, 2, 3)]
    assert [row[3] for row in rows] == ["40", "40", "20"]
    assert [row[4] for row in rows] == ["cold", "cached", "cold"]
    assert rows[0][2] == "2026-01-28"  # the newest lastmod of page 1
    assert page.find(".//section[@id='section-counted']").findtext(".//span[@class='urls']") == "3"


def test_the_overview_escapes_what_providers_give_and_ignores_the_host(make_client):
    client = make_client(shop())
    plain = client.get(PATH)
    hostile = client.get(PATH, {"Host": "evil.example", "X-Forwarded-Host": "evil.example"})
    assert b"evil" not in hostile.body
    assert b"<b>" not in plain.body  # the loc of "/<b>&amp" is escaped, as a loc and as HTML


def test_the_overview_is_off_by_default_and_answers_only_get_and_head(make_client):
    off = make_client(Sitemaps(base_url=BASE))
    assert off.get(PATH).body == b"app:GET /sitemaps/"
    client = make_client(shop())
    assert client.request("POST", PATH).status == 405
    head = client.request("HEAD", PATH)
    assert head.status == 200 and head.body == b""


@pytest.mark.parametrize("path", ["sitemaps", "/sitemap-index.xml", "/robots.txt", "/a?b", 3])
def test_a_bad_overview_path_is_refused_at_construction(path):
    with pytest.raises(ConfigurationError, match="overview_path"):
        Sitemaps(base_url=BASE, overview_path=path)


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@pytest.mark.server
def test_the_overview_renders_in_headless_chromium_with_its_counts_and_links():
    browser = chromium()
    if browser is None:
        pytest.skip("no Chromium on this machine (CI installs Debian's chromium package)")
    with (
        werkzeug_serving(shop().wsgi(lambda environ, start: [])) as port,
        tempfile.TemporaryDirectory() as profile,
    ):
        result = subprocess.run(
            [
                browser,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                f"--user-data-dir={profile}",
                "--dump-dom",
                f"http://127.0.0.1:{port}{PATH}",
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert result.returncode == 0, result.stderr[-2000:]
    page = html.fromstring(result.stdout)  # the DOM as the browser built it
    assert page.findtext(".//h1") == f"Sitemaps of {BASE}"
    assert page.findtext(".//span[@id='files']") == "5"
    assert page.findtext(".//span[@id='urls']") == "106"
    links = [a.get("href") for a in page.iterfind(".//a[@class='page']")]
    assert links == [
        *(f"{BASE}/sitemap-products-{n}.xml" for n in (1, 2, 3)),
        f"{BASE}/sitemap-pages-1.xml",
        f"{BASE}/sitemap-counted-1.xml",
    ]


def test_the_overview_shows_when_each_section_was_last_refreshed_and_its_changes_of_the_last_day(
    make_client, tmp_path
):
    from datetime import UTC, datetime

    from sitemap_middleware.changes import ChangeLog

    now = [datetime(2026, 12, 1, 12, tzinfo=UTC).timestamp()]
    rows = {f"/p/{n}": None for n in range(5)}
    sitemaps = Sitemaps(
        base_url=BASE,
        page_size=2,
        overview_path=PATH,
        changes=ChangeLog.sqlite(tmp_path / "changes.sqlite3"),
        clock=lambda: now[0],
    )
    sitemaps.add_provider("products", lambda: [Url(path, lastmod=rows[path]) for path in sorted(rows)])
    sitemaps.add_provider("pages", lambda: ["/", "/about"])
    sitemaps.recent("recent")
    client = make_client(sitemaps)
    never = html.fromstring(client.get(PATH).body).find(".//section[@id='section-products']")
    assert never.findtext(".//span[@class='refreshed']") == "never"
    sitemaps.refresh()  # the baseline
    rows["/p/9"] = None
    del rows["/p/0"]
    now[0] += 60
    sitemaps.refresh()  # two changes, two days ago by the time the overview is read
    now[0] += 2 * 86_400
    rows["/p/1"] = "2026-12-03"
    sitemaps.refresh()
    page = html.fromstring(client.get(PATH).body)
    products = page.find(".//section[@id='section-products']")
    refreshed = datetime.fromisoformat(products.findtext(".//span[@class='refreshed']"))
    assert refreshed == datetime.fromtimestamp(now[0], UTC)
    assert products.findtext(".//span[@class='changed']") == "1"  # the older two are past the day
    assert products.findtext(".//span[@class='kinds']") == "0 added, 1 changed, 0 removed"
    unchanged = page.find(".//section[@id='section-pages']")
    assert unchanged.findtext(".//span[@class='changed']") == "0"
    assert unchanged.findtext(".//span[@class='refreshed']") is not None
    assert page.find(".//section[@id='section-recent']").find(".//span[@class='refreshed']") is None
