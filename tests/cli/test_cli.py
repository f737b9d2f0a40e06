"""The command line: ``validate`` reports each broken rule at its file and line, and
``export`` writes exactly what the middleware serves."""

from __future__ import annotations

import gzip
import io
import subprocess
import sys
from typing import Any

import pytest

from sitemap_middleware import Sitemaps, Url
from sitemap_middleware.cli import main

from ..conftest import make_shop, plain_wsgi_app
from ..servers import Server, werkzeug_serving
from ..xsd import SCHEMA_DIR, schemas_available

NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'
SITE = "https://shop.example"


def run(*argv: str) -> tuple[int, list[str]]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue().splitlines() + err.getvalue().splitlines()


def urlset(*urls: str) -> str:
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset {NS}>\n' + "\n".join(urls) + "\n</urlset>\n"


def url(loc: str, extra: str = "") -> str:
    return f"<url><loc>{loc}</loc>{extra}</url>"


GOOD = url(f"{SITE}/p/1", "<lastmod>2026-01-01T10:00:00+00:00</lastmod><changefreq>daily</changefreq>")


@pytest.mark.parametrize(
    ("document", "line", "message"),
    [
        pytest.param(urlset(GOOD, url(f"{SITE}/a?x=1&y=2")), 0, "not well-formed", id="unescaped-ampersand"),
        pytest.param(urlset(GOOD, url("/p/2")), 4, "not an absolute RFC 3986 URI", id="relative-loc"),
        pytest.param(urlset(GOOD, url(f"{SITE}/a b")), 4, "not an absolute RFC 3986 URI", id="space-in-loc"),
        pytest.param(urlset(GOOD, url(f"{SITE}/%zz")), 4, "not an absolute RFC 3986 URI", id="bad-percent"),
        pytest.param(urlset(GOOD, url("https://other.example/p")), 4, "own host", id="other-host"),
        pytest.param(urlset(GOOD, url("ftp://shop.example/p/2")), 4, "http(s)", id="other-scheme"),
        pytest.param(urlset(GOOD, url(f"{SITE}/" + "a" * 2050)), 4, "over 2,047", id="loc-too-long"),
        pytest.param(
            urlset(GOOD, url(f"{SITE}/p", "<lastmod>2026-13-01</lastmod>")), 4, "W3C", id="bad-month"
        ),
        pytest.param(
            urlset(GOOD, url(f"{SITE}/p", "<lastmod>2026-01-01T10:00:00</lastmod>")), 4, "W3C", id="no-zone"
        ),
        pytest.param(
            urlset(GOOD, url(f"{SITE}/p", "<lastmod>2999-01-01</lastmod>")), 4, "future", id="future-lastmod"
        ),
        pytest.param(
            urlset(GOOD, url(f"{SITE}/p", "<priority>1.5</priority>")), 4, "priority", id="priority"
        ),
        pytest.param(
            urlset(GOOD, url(f"{SITE}/p", "<priority>1e-1</priority>")), 4, "priority", id="exponent"
        ),
        pytest.param(
            urlset(GOOD, url(f"{SITE}/p", "<changefreq>Daily</changefreq>")), 4, "changefreq", id="freq"
        ),
        pytest.param(
            urlset(GOOD, "<url><lastmod>2026-01-01</lastmod></url>"), 4, "without <loc>", id="no-loc"
        ),
        pytest.param(urlset(), 1, "lists no URLs", id="empty-urlset"),
        pytest.param(
            '<?xml version="1.0"?>\n<urlset xmlns="http://www.google.com/x"/>', 2, "root", id="wrong-ns"
        ),
    ],
)
def test_each_broken_rule_is_reported_at_its_file_and_line(tmp_path, document, line, message):
    path = tmp_path / "sitemap.xml"
    path.write_text(document)
    code, lines = run("validate", str(path), "--base-url", f"{SITE}/")
    problems = [text for text in lines if text.startswith(f"{path}:")]
    assert code == 1, lines
    assert len(problems) == 1, problems
    where, _, text = problems[0].partition(": ")
    assert message in text
    if line:
        assert where == f"{path}:{line}"


def test_a_sitemap_over_50_mb_is_reported(tmp_path):
    long = url(f"{SITE}/" + "x" * 2000)
    path = tmp_path / "sitemap.xml.gz"
    path.write_bytes(gzip.compress(urlset(*[long] * 26_000).encode()))  # ~52.6 MB inflated
    code, lines = run("validate", str(path), "--base-url", f"{SITE}/")
    assert code == 1
    assert any("is more than 52,428,800 bytes uncompressed" in text for text in lines), lines


def test_a_sitemap_over_50000_urls_is_reported(tmp_path):
    path = tmp_path / "sitemap.xml"
    path.write_text(urlset(*[url(f"{SITE}/p/{n}") for n in range(50_001)]))
    code, lines = run("validate", str(path), "--base-url", f"{SITE}/")
    assert code == 1
    assert any(f"{path}:1: lists 50,001 URLs, over the limit of 50,000" == text for text in lines), lines[-3:]


def index(*locs: str) -> str:
    children = "".join(f"<sitemap><loc>{loc}</loc></sitemap>\n" for loc in locs)
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<sitemapindex {NS}>\n{children}</sitemapindex>\n'


def test_a_child_that_cannot_be_fetched_is_reported_at_the_index_line(tmp_path):
    (tmp_path / "sitemap-a-1.xml").write_text(urlset(GOOD))
    path = tmp_path / "sitemap-index.xml"
    path.write_text(index(f"{SITE}/sitemap-a-1.xml", f"{SITE}/sitemap-missing-1.xml"))
    code, lines = run("validate", str(path), "--base-url", f"{SITE}/")
    assert code == 1
    [problem] = [text for text in lines if text.startswith(str(tmp_path))]
    assert problem.startswith(f"{path}:4: ") and "cannot be fetched" in problem


def test_an_index_inside_an_index_is_reported(tmp_path):
    (tmp_path / "sitemap-inner.xml").write_text(index(f"{SITE}/sitemap-a-1.xml"))
    path = tmp_path / "sitemap-index.xml"
    path.write_text(index(f"{SITE}/sitemap-inner.xml"))
    code, lines = run("validate", str(path), "--base-url", f"{SITE}/")
    assert code == 1
    assert any("indexes do not nest" in text and "sitemap-inner.xml:2" in text for text in lines), lines


def test_duplicates_across_files_are_a_warning_not_a_problem(tmp_path):
    for name in ("a", "b"):
        (tmp_path / f"sitemap-{name}-1.xml").write_text(urlset(GOOD))
    path = tmp_path / "sitemap-index.xml"
    path.write_text(index(f"{SITE}/sitemap-a-1.xml", f"{SITE}/sitemap-b-1.xml"))
    code, lines = run("validate", str(path), "--base-url", f"{SITE}/")
    assert code == 0
    [warning] = [text for text in lines if "warning:" in text]
    assert "sitemap-b-1.xml:3: warning: " in warning and "more than once" in warning


def test_schemas_add_the_xsd_checks(tmp_path):
    if not schemas_available():
        pytest.skip(f"official sitemap XSDs not found in {SCHEMA_DIR}")
    path = tmp_path / "sitemap.xml"
    path.write_text(urlset(GOOD, url(f"{SITE}/p", "<unknown>1</unknown>")))
    code, lines = run("validate", str(path), "--base-url", f"{SITE}/", "--schemas", str(SCHEMA_DIR))
    assert code == 1
    assert [text.partition(": ")[0] for text in lines if "schema:" in text] == [f"{path}:4"]


def test_an_unreadable_target_exits_2(tmp_path):
    code, lines = run("validate", str(tmp_path / "nothing.xml"))
    assert code == 2
    assert "cannot be read" in lines[0]


def shop(base_url: str = "http://127.0.0.1") -> Sitemaps:
    """The shared shop with 100 dated products in files of 40 (a module `export` can import)."""
    return make_shop(
        100, product=lambda n: Url(f"/p/{n}?a=1&b=2", lastmod="2026-01-02"), base_url=base_url, page_size=40
    )


@pytest.mark.server
def test_a_served_tree_validates_clean_from_robots_txt():
    served: dict[str, Any] = {}
    with werkzeug_serving(lambda environ, start: served["app"](environ, start)) as port:
        # The site's origin is the server's own: its locs are on the sitemap's host.
        served["app"] = shop(f"http://127.0.0.1:{port}").wsgi(plain_wsgi_app)
        # The wrapped app answers robots.txt itself ("app:GET /robots.txt"), plus our line.
        code, lines = run("validate", f"http://127.0.0.1:{port}/robots.txt")
    assert code == 0, lines
    assert lines[-1] == "checked 6 files, 102 URLs: 0 problems, 0 warnings"


@pytest.mark.server
def test_export_writes_exactly_what_the_server_serves(tmp_path, monkeypatch):
    module = tmp_path / "exported_shop.py"
    module.write_text("from tests.cli.test_cli import shop\n\nsitemaps = shop()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    code, lines = run("export", "exported_shop:sitemaps", "--out", str(tmp_path / "out"), "--gzip")
    assert code == 0, lines
    written = sorted(path.name for path in (tmp_path / "out").iterdir())
    pages = ["sitemap-index.xml", *(f"sitemap-products-{n}.xml" for n in (1, 2, 3)), "sitemap-pages-1.xml"]
    assert written == sorted(pages + [name + ".gz" for name in pages])
    with werkzeug_serving(shop().wsgi(plain_wsgi_app)) as port:
        server = Server(port, "plain")
        for name in written:
            assert (tmp_path / "out" / name).read_bytes() == server.fetch(f"/{name}"), name


def test_python_dash_m_runs_the_command_line():
    result = subprocess.run(
        [sys.executable, "-m", "sitemap_middleware", "--help"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0
    assert "validate" in result.stdout and "export" in result.stdout
