"""``validate`` reports each problem at the line of the element at fault: a bad ``<lastmod>``
at its own line, not at its ``<url>``'s, whatever the layout of the file."""

from __future__ import annotations

import pytest

from .test_cli import NS, SITE, run


def spread(*children: str) -> str:
    """One ``<url>`` with each child on a line of its own (lines 3 to 3 + len(children) + 1)."""
    inner = "\n".join(f"    {child}" for child in children)
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset {NS}>\n  <url>\n{inner}\n  </url>\n</urlset>\n'


@pytest.mark.parametrize(
    ("children", "line", "message"),
    [
        pytest.param((f"<loc>{SITE}/p</loc>", "<lastmod>2026-13-01</lastmod>"), 5, "W3C", id="bad-lastmod"),
        pytest.param(
            (f"<loc>{SITE}/p</loc>", "<changefreq>Daily</changefreq>"), 5, "changefreq", id="changefreq"
        ),
        pytest.param((f"<loc>{SITE}/p</loc>", "<priority>2</priority>"), 5, "priority", id="priority"),
        pytest.param(
            ("<changefreq>daily</changefreq>", "<loc>https://other.example/p</loc>"), 5, "own host", id="loc"
        ),
    ],
)
def test_a_problem_is_reported_at_the_line_of_its_own_element(tmp_path, children, line, message):
    path = tmp_path / "sitemap.xml"
    path.write_text(spread(*children))
    code, lines = run("validate", str(path), "--base-url", f"{SITE}/")
    [problem] = [text for text in lines if text.startswith(f"{path}:")]
    assert code == 1
    assert problem.startswith(f"{path}:{line}: ") and message in problem, problem


def test_a_duplicate_is_reported_at_the_line_of_its_loc(tmp_path):
    path = tmp_path / "sitemap.xml"
    entry = f"<url>\n<lastmod>2026-01-01</lastmod>\n<loc>{SITE}/p</loc>\n</url>"
    path.write_text(f'<?xml version="1.0"?>\n<urlset {NS}>\n{entry}\n{entry}\n</urlset>\n')
    code, lines = run("validate", str(path), "--base-url", f"{SITE}/")
    [warning] = [text for text in lines if "more than once" in text]
    assert code == 0
    assert warning.startswith(f"{path}:9: warning: ")  # the second <url> is lines 7-10, its <loc> 9


def test_an_index_childs_bad_lastmod_is_reported_at_its_own_line(tmp_path):
    (tmp_path / "sitemap-a-1.xml").write_text(spread(f"<loc>{SITE}/p</loc>"))
    path = tmp_path / "sitemap-index.xml"
    child = f"<sitemap>\n<loc>{SITE}/sitemap-a-1.xml</loc>\n<lastmod>yesterday</lastmod>\n</sitemap>"
    path.write_text(f'<?xml version="1.0"?>\n<sitemapindex {NS}>\n{child}\n</sitemapindex>\n')
    code, lines = run("validate", str(path), "--base-url", f"{SITE}/")
    [problem] = [text for text in lines if text.startswith(f"{path}:")]
    assert code == 1
    assert problem.startswith(f"{path}:5: ") and "W3C" in problem
