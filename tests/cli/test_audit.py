"""``validate --urls``: every listed URL is requested and each one crawlers will not index is
reported at its ``<loc>``'s line with its kind (not a 200, a redirect and its target, noindex,
another canonical, disallowed by robots.txt); no good one is. Over a real loopback server, and
in-process through ``validate module:attr``."""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from typing import Any

import pytest

from ..servers import werkzeug_serving
from . import audit_site
from .audit_site import BAD, GOOD, PAGES, Site, make_sitemaps
from .test_cli import run


@pytest.fixture
def served() -> Iterator[tuple[str, Site]]:
    """The audit site behind the middleware on 127.0.0.1; its origin and its own app."""
    holder: dict[str, Any] = {}
    site = Site()
    with werkzeug_serving(lambda environ, start: holder["app"](environ, start)) as port:
        origin = f"http://127.0.0.1:{port}"
        holder["app"] = make_sitemaps(origin).wsgi(site)
        yield origin, site


def reported(lines: list[str], origin: str) -> dict[str, str]:
    """Each audited URL's path -> its problem line."""
    found: dict[str, str] = {}
    for line in lines:
        match = re.search(rf"\d: ({re.escape(origin)}(/\S*)) ", line)
        if match is not None:
            assert match[2] not in found, f"{match[2]} reported twice: {line}"
            found[match[2]] = line
    return found


def assert_each_bad_url_reported_with_its_kind(lines: list[str], origin: str) -> None:
    found = reported(lines, origin)
    assert sorted(found) == sorted(BAD), lines
    for path, words in BAD.items():
        assert words.format(origin=origin) in found[path], found[path]


@pytest.mark.server
def test_each_bad_url_is_reported_with_its_kind_and_no_good_one(served):
    origin, _ = served
    code, lines = run("validate", f"{origin}/robots.txt", "--urls", "all")
    assert code == 1
    assert_each_bad_url_reported_with_its_kind(lines, origin)
    assert (
        lines[-1]
        == f"checked 5 files, {len(PAGES)} URLs ({len(PAGES) - 3} requested): {len(BAD)} problems, 0 warnings"
    )


@pytest.mark.server
def test_a_problem_is_at_the_line_of_its_loc(served):
    origin, _ = served
    _, lines = run("validate", f"{origin}/robots.txt", "--urls", "all")
    # page_size=10: /gone is the 8th URL of sitemap-pages-1.xml, its <loc> on line 3 + 7.
    [gone] = [line for line in lines if f"{origin}/gone " in line]
    assert gone.startswith(f"{origin}/sitemap-pages-1.xml:10: ")


@pytest.mark.server
def test_a_disallowed_url_is_not_requested_and_an_html_page_is_read_with_get(served):
    origin, site = served
    run("validate", f"{origin}/robots.txt", "--urls", "all")
    for path in ("/private/page", "/no-google", "/no-bing"):
        assert not site.hits["HEAD", path] and not site.hits["GET", path], path
    assert site.hits["HEAD", "/good/1"] == 1 and site.hits["GET", "/good/1"] == 1
    # Not HTML, or not a 200: the HEAD says all there is.
    assert site.hits["HEAD", "/good/plain.txt"] == 1 and not site.hits["GET", "/good/plain.txt"]
    assert site.hits["HEAD", "/gone"] == 1 and not site.hits["GET", "/gone"]


@pytest.mark.server
def test_without_urls_no_listed_url_is_requested(served):
    origin, site = served
    code, lines = run("validate", f"{origin}/robots.txt")
    assert code == 0, lines
    assert not any(path in PAGES for _, path in site.hits)


@pytest.mark.server
def test_a_sample_of_n_requests_n_urls_spread_over_every_file_the_same_each_run(served):
    origin, site = served
    _, first = run("validate", f"{origin}/robots.txt", "--urls", "3")
    asked = {path for (method, path) in site.hits if method == "HEAD" and path in PAGES}
    site.hits.clear()
    _, second = run("validate", f"{origin}/robots.txt", "--urls", "3")
    again = {path for (method, path) in site.hits if method == "HEAD" and path in PAGES}
    files = [list(PAGES)[n : n + 10] for n in range(0, len(PAGES), 10)]
    assert first == second and asked == again
    # The sample: those requested, and those robots.txt disallows (reported, never requested).
    picked = asked | set(reported(first, origin))
    assert len(picked) == 3, (picked, first)
    assert f"({len(asked)} requested)" in first[-1]
    assert all(any(path in file for path in picked) for file in files), picked


def test_in_process_a_sitemaps_and_its_app_are_audited_without_a_server():
    code, lines = run(
        "validate", "tests.cli.audit_site:sitemaps", "--app", "tests.cli.audit_site:site", "--urls", "all"
    )
    assert code == 1
    assert_each_bad_url_reported_with_its_kind(lines, audit_site.ORIGIN)


def test_in_process_a_wrapped_wsgi_app_is_audited_at_the_base_url():
    code, lines = run(
        "validate",
        "tests.cli.audit_site:application",
        "--base-url",
        audit_site.ORIGIN,
        "--urls",
        "all",
    )
    assert code == 1
    assert_each_bad_url_reported_with_its_kind(lines, audit_site.ORIGIN)


def test_in_process_the_tree_alone_is_checked_without_urls():
    code, lines = run("validate", "tests.cli.audit_site:sitemaps")
    assert code == 0, lines
    assert lines[-1] == f"checked 5 files, {len(PAGES)} URLs: 0 problems, 0 warnings"


def test_in_process_urls_with_a_sitemaps_and_no_app_is_refused():
    code, lines = run("validate", "tests.cli.audit_site:sitemaps", "--urls", "all")
    assert code == 2
    assert "needs --app" in lines[0]


def test_good_urls_are_good():
    assert GOOD and not set(GOOD) & set(BAD)


class Terminal(io.StringIO):
    """stderr as a terminal: the progress line shows (it never does in a pipe)."""

    def isatty(self) -> bool:
        return True


@pytest.mark.server
def test_the_audit_shows_its_progress_on_a_terminal_and_clears_it(served):
    from sitemap_middleware import cli

    origin, _ = served
    out, err = io.StringIO(), Terminal()
    assert cli.main(["validate", f"{origin}/robots.txt", "--urls", "all"], out=out, err=err) == 1
    shown = err.getvalue()
    requested = len(PAGES) - 3  # the three robots.txt disallows are never requested
    assert f"requested {requested:,} of {len(PAGES):,} listed URLs, {len(BAD)} problems" in shown
    assert shown.endswith("\r\033[K")  # the line is cleared before the summary is read
    assert "\r" not in out.getvalue()  # the report itself stays plain


def test_no_progress_is_written_where_stderr_is_no_terminal(tmp_path):
    from sitemap_middleware import cli

    page = tmp_path / "sitemap.xml"
    page.write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
        "<url><loc>https://shop.example/a</loc></url>\n</urlset>\n"
    )
    out, err = io.StringIO(), io.StringIO()
    assert cli.main(["validate", str(page), "--base-url", "https://shop.example/"], out=out, err=err) == 0
    assert err.getvalue() == ""
