"""The HTML overview: a page a person can read, listing every section, page and file.

Browsers are dropping XSLT (Chrome removes it in version 155), so a styled sitemap is no
longer a way to show one to people. This is a plain HTML page instead, with no script,
built from the section plans the index is built from (never from the request)::

    html = render_overview(Overview(index_urls=[...], sections=[SectionRow(...)], generated=...))
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html import escape

__all__ = ["Logged", "Overview", "PageRow", "SectionRow", "render_overview"]


@dataclass(frozen=True, slots=True)
class PageRow:
    """One file of a section: where it is, its newest lastmod, its URLs, whether it is cached."""

    number: int
    url: str
    lastmod: str | None
    urls: int | None  # None when not known without rendering it
    cached: bool | None  # None when not checked (no store, or past the pages checked)


@dataclass(frozen=True, slots=True)
class Logged:
    """What the change log says of a section: when its last pass ended (text, or ``None``:
    never), and how many changes of each kind it had in the last day."""

    refreshed: str | None
    changed: dict[str, int]


@dataclass(frozen=True, slots=True)
class SectionRow:
    name: str
    pages: list[PageRow]
    error: str | None = None  # why the section could not be planned (shown, not hidden)
    logged: Logged | None = None  # None without a change log, or for a section it never records

    @property
    def urls(self) -> int | None:
        counts = [page.urls for page in self.pages]
        return None if None in counts else sum(c for c in counts if c is not None)


@dataclass(frozen=True, slots=True)
class Overview:
    site: str
    index_urls: list[str]
    sections: list[SectionRow] = field(default_factory=list)
    generated: str = ""


_STYLE = """
body { font: 15px/1.45 system-ui, sans-serif; margin: 2rem auto; max-width: 60rem; padding: 0 1rem }
h1 { font-size: 1.4rem } h2 { font-size: 1.1rem; margin-top: 2rem }
table { border-collapse: collapse; width: 100% } th, td { text-align: left; padding: .25rem .6rem }
th { border-bottom: 2px solid #ccc } td { border-bottom: 1px solid #eee } td.n { text-align: right }
.muted { color: #777 } .error { color: #a00 }
"""


def render_overview(overview: Overview) -> bytes:
    """The whole page, UTF-8. Every value from a provider is HTML-escaped."""
    files = sum(len(section.pages) for section in overview.sections)
    counts = [section.urls for section in overview.sections]
    total = "?" if None in counts else f"{sum(c for c in counts if c is not None):,}"
    parts = [
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">',
        '<meta name="robots" content="noindex">',
        f"<title>Sitemaps of {escape(overview.site)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>Sitemaps of {escape(overview.site)}</h1>",
        f'<p id="summary">{len(overview.sections):,} sections, <span id="files">{files:,}</span> files, '
        f'<span id="urls">{total}</span> URLs.</p>',
        "<p>Index: "
        + ", ".join(f'<a class="index" href="{escape(url)}">{escape(url)}</a>' for url in overview.index_urls)
        + "</p>",
    ]
    for section in overview.sections:
        parts.append(_section(section))
    if overview.generated:
        parts.append(f'<p class="muted">Generated {escape(overview.generated)}.</p>')
    parts.append("</body></html>\n")
    return "".join(parts).encode()


def _section(section: SectionRow) -> str:
    name = escape(section.name)
    urls = "?" if section.urls is None else f"{section.urls:,}"
    head = (
        f'<section id="section-{name}"><h2>{name}</h2>'
        f'<p><span class="pages">{len(section.pages):,}</span> files, '
        f'<span class="urls">{urls}</span> URLs.</p>'
    )
    if section.logged is not None:
        head += _logged(section.logged)
    if section.error is not None:
        return head + f'<p class="error">{escape(section.error)}</p></section>'
    rows = "".join(_row(page) for page in section.pages)
    table = (
        "<table><thead><tr><th>#</th><th>file</th><th>newest lastmod</th><th>URLs</th><th>cache</th></tr>"
        f"</thead><tbody>{rows}</tbody></table>"
    )
    return head + table + "</section>"


def _logged(logged: Logged) -> str:
    kinds = ", ".join(f"{logged.changed.get(kind, 0):,} {kind}" for kind in ("added", "changed", "removed"))
    return (
        f'<p>Last refreshed <span class="refreshed">{escape(logged.refreshed or "never")}</span>; '
        f'<span class="changed">{sum(logged.changed.values()):,}</span> changes in the last day '
        f'(<span class="kinds">{kinds}</span>).</p>'
    )


_CACHE_STATE = {True: "cached", False: "cold", None: "-"}


def _row(page: PageRow) -> str:
    url = escape(page.url)
    urls = "?" if page.urls is None else f"{page.urls:,}"
    return (
        f'<tr><td class="n">{page.number:,}</td><td><a class="page" href="{url}">{url}</a></td>'
        f'<td>{escape(page.lastmod or "-")}</td><td class="n">{urls}</td>'
        f"<td>{_CACHE_STATE[page.cached]}</td></tr>"
    )
