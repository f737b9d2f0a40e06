"""``validate`` finds hreflang alternates whose pages do not list them back, across every file
of the tree (Google ignores a pair that is not reciprocal), with no fetch."""

from __future__ import annotations

from .test_cli import SITE, index, run

XHTML = 'xmlns:xhtml="http://www.w3.org/1999/xhtml"'
NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'


def page(loc: str, *alternates: tuple[str, str]) -> str:
    """A ``<url>`` over several lines: its ``<loc>``, then one line per alternate."""
    links = "".join(
        f'\n<xhtml:link rel="alternate" hreflang="{lang}" href="{SITE}{path}"/>' for lang, path in alternates
    )
    return f"<url>\n<loc>{SITE}{loc}</loc>{links}\n</url>"


def urlset(*pages: str) -> str:
    return (
        f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset {NS} {XHTML}>\n'
        + "\n".join(pages)
        + "\n</urlset>\n"
    )


def tree(tmp_path, *files: str):
    names = []
    for number, document in enumerate(files, start=1):
        name = f"sitemap-pages-{number}.xml"
        (tmp_path / name).write_text(document)
        names.append(name)
    path = tmp_path / "sitemap-index.xml"
    path.write_text(index(*(f"{SITE}/{name}" for name in names)))
    return run("validate", str(path), "--base-url", f"{SITE}/")


def test_reciprocal_alternates_across_files_are_clean(tmp_path):
    code, lines = tree(
        tmp_path,
        urlset(page("/en/p", ("en", "/en/p"), ("de", "/de/p"))),
        urlset(page("/de/p", ("de", "/de/p"), ("en", "/en/p"))),
    )
    assert code == 0, lines
    assert lines[-1].endswith("0 problems, 0 warnings")


def test_an_alternate_whose_page_does_not_list_it_back_is_reported_at_its_link(tmp_path):
    code, lines = tree(
        tmp_path,
        urlset(
            page("/en/p", ("en", "/en/p"), ("de", "/de/p")), page("/en/q", ("en", "/en/q"), ("de", "/de/q"))
        ),
        urlset(
            page("/de/p", ("de", "/de/p"), ("en", "/en/p")), page("/de/q", ("de", "/de/q"), ("fr", "/fr/q"))
        ),
    )
    first = tmp_path / "sitemap-pages-1.xml"
    problems = [text for text in lines if "hreflang" in text]
    # /en/q's <url> is lines 8-12; its alternate to /de/q is on line 11. /de/q's to /fr/q:
    # /fr/q is listed nowhere, so its alternates are unknown (a warning, at line 11 of file 2).
    assert code == 1, lines
    assert problems == [
        f"{first}:11: the hreflang alternate {SITE}/de/q does not list {SITE}/en/q back "
        "(Google ignores a pair that is not reciprocal)",
        f"{tmp_path / 'sitemap-pages-2.xml'}:11: warning: the hreflang alternate {SITE}/fr/q is listed "
        "in no sitemap of the tree: whether it lists this page back is not known",
    ], lines


def test_an_alternate_listed_without_alternates_of_its_own_is_not_reciprocal(tmp_path):
    code, lines = tree(
        tmp_path,
        urlset(page("/en/p", ("en", "/en/p"), ("de", "/de/p"))),
        urlset(page("/de/p")),
    )
    [problem] = [text for text in lines if "hreflang" in text]
    assert code == 1
    assert problem.startswith(f"{tmp_path / 'sitemap-pages-1.xml'}:6: the hreflang alternate {SITE}/de/p")
