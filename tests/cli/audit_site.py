"""A small site listing each kind of URL crawlers will not index beside good ones, for the audit
tests: a plain WSGI app (`site`), the `Sitemaps` listing every page (`make_sitemaps`), and both
wrapped together (`application`), importable as ``tests.cli.audit_site:…`` for in-process runs.

`BAD` maps each bad path to the words its problem must hold; `GOOD` are the paths that must
not be reported.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from sitemap_middleware import Sitemaps

ROBOTS = """User-agent: *
Disallow: /private/

User-agent: Googlebot
Disallow: /no-google

User-agent: Bingbot
Disallow: /no-bing
"""


def html(head: str = "", body: str = "") -> bytes:
    return f"<!doctype html><html><head><title>t</title>{head}</head><body>{body}</body></html>".encode()


def canonical(href: str) -> str:
    return f'<link rel="canonical" href="{href}">'


# path -> (status, extra headers, body); a body of None is an HTML page with a self canonical.
PAGES: dict[str, tuple[int, list[tuple[str, str]], bytes | None]] = {
    "/good/1": (200, [], None),
    "/good/2": (200, [], html(canonical("/good/2"))),
    "/good/relative": (200, [], html('<link rel="canonical" href="relative">')),
    "/good/plain.txt": (200, [("Content-Type", "text/plain")], b"text"),
    "/good/otherbot": (200, [("X-Robots-Tag", "otherbot: noindex")], None),
    "/good/body-meta": (200, [], html(body='<meta name="robots" content="noindex">')),
    "/good/big": (200, [], html(canonical("/good/big"), "x" * 2_000_000)),
    "/gone": (404, [], b"missing"),
    "/removed": (410, [], b"gone"),
    "/broken": (503, [], b"down"),
    "/moved": (301, [("Location", "/good/1")], b""),
    "/noindex-header": (200, [("X-Robots-Tag", "noindex, nofollow")], None),
    "/noindex-googlebot": (200, [("X-Robots-Tag", "googlebot: noindex")], None),
    "/noindex-meta": (200, [], html('<meta name="robots" content="noindex">')),
    "/noindex-meta-googlebot": (200, [], html('<meta name="googlebot" content="none">')),
    "/canonical-other": (200, [], html(canonical("/good/1"))),
    "/canonical-slash": (200, [], html(canonical("/canonical-slash/"))),
    "/canonical-case": (200, [], html(canonical("/Canonical-Case"))),
    "/canonical-header": (200, [("Link", '<http://{host}/good/1>; rel="canonical"')], b"%PDF-1.4"),
    "/private/page": (200, [], None),
    "/no-google": (200, [], None),
    "/no-bing": (200, [], None),
}
BAD = {
    "/gone": "answers 404",
    "/removed": "answers 410",
    "/broken": "answers 503",
    "/moved": "redirects (301) to {origin}/good/1: list that instead",
    "/noindex-header": "is noindex (X-Robots-Tag: noindex, nofollow)",
    "/noindex-googlebot": "is noindex (X-Robots-Tag: googlebot: noindex)",
    "/noindex-meta": 'is noindex (<meta name="robots" content="noindex">)',
    "/noindex-meta-googlebot": 'is noindex (<meta name="googlebot" content="none">)',
    "/canonical-other": 'declares another canonical, {origin}/good/1 (<link rel="canonical">)',
    "/canonical-slash": "declares another canonical, {origin}/canonical-slash/",
    "/canonical-case": "declares another canonical, {origin}/Canonical-Case",
    "/canonical-header": "declares another canonical, {origin}/good/1 (a Link header)",
    "/private/page": "is disallowed by robots.txt for *",
    "/no-google": "is disallowed by robots.txt for Googlebot",
    "/no-bing": "is disallowed by robots.txt for Bingbot",
}
GOOD = [path for path in PAGES if path not in BAD]


class Site:
    """The site's own WSGI app; it counts the requests each path gets, by method."""

    def __init__(self) -> None:
        self.hits: Counter[tuple[str, str]] = Counter()
        self._lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        path, method = environ["PATH_INFO"], environ["REQUEST_METHOD"]
        with self._lock:
            self.hits[method, path] += 1
        host = environ.get("HTTP_HOST", "")
        if path == "/robots.txt":
            status, headers, body = 200, [("Content-Type", "text/plain")], ROBOTS.encode()
        elif path in PAGES:
            status, headers, body = PAGES[path]
            headers = [(name, value.replace("{host}", host)) for name, value in headers]
            if body is None:
                body = html(canonical(f"http://{host}{path}"))
            if not any(name == "Content-Type" for name, _ in headers):
                headers = [*headers, ("Content-Type", "text/html; charset=utf-8")]
        else:
            status, headers, body = 404, [("Content-Type", "text/plain")], b"no such page"
        reason = {
            200: "OK",
            301: "Moved Permanently",
            404: "Not Found",
            410: "Gone",
            503: "Service Unavailable",
        }
        start_response(f"{status} {reason[status]}", [*headers, ("Content-Length", str(len(body)))])
        return [b""] if method == "HEAD" else [body]


def make_sitemaps(base_url: str) -> Sitemaps:
    sitemaps = Sitemaps(base_url=base_url, page_size=10)
    sitemaps.add_provider("pages", lambda: list(PAGES))
    return sitemaps


ORIGIN = "http://shop.test"  # in-process: any host will do, nothing leaves the process
site = Site()
sitemaps = make_sitemaps(ORIGIN)
application = sitemaps.wsgi(site)
