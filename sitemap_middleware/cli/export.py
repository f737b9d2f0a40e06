"""``export``: write a `Sitemaps` object's whole tree as static files, byte for byte as served.

Every file is fetched through the middleware itself (in-process, no server), so what is
written is exactly what the middleware answers for the same ``base_url``: the index
files robots.txt names, every page they list, and with ``gzip`` each one's ``.gz``::

    written = export_tree(sitemaps, Path("public"), gzip=True)
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from lxml import etree
from werkzeug.test import Client

from ..protocol.render import SITEMAP_NS
from ..sitemaps import Sitemaps

__all__ = ["ExportError", "export_tree"]


class ExportError(Exception):
    """The tree could not be exported (the reason is the message)."""


def _no_robots(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    """The app behind the middleware: no robots.txt of its own, so ours names every index."""
    start_response("404 Not Found", [("Content-Type", "text/plain")])
    return [b""]


def export_tree(
    sitemaps: Sitemaps,
    out: Path,
    *,
    gzip: bool = False,
    progress: Callable[[int], None] | None = None,
) -> list[Path]:
    """Write every index and page under ``out``, under the names they are served at."""
    client = Client(sitemaps.wsgi(_no_robots))
    root = urllib.parse.urlsplit(sitemaps.site.root).path  # "" or the base_url's path
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []

    def fetch(path: str) -> bytes:
        response = client.get(path)
        try:
            if response.status_code != 200:
                raise ExportError(f"GET {path}: {response.status}")
            return response.get_data()
        finally:
            response.close()

    def save(path: str) -> bytes:
        body = fetch(path)
        names = [(path, body)]
        if gzip:
            names.append((path + ".gz", fetch(path + ".gz")))
        for name, data in names:
            target = out / name.rsplit("/", 1)[-1]
            target.write_bytes(data)
            written.append(target)
            if progress is not None:
                progress(len(written))
        return body

    robots = fetch("/robots.txt").decode()
    indexes = [
        line.partition(":")[2].strip() for line in robots.splitlines() if line.lower().startswith("sitemap:")
    ]
    for index_url in indexes:
        index = save(_below(index_url, root))
        for loc in etree.fromstring(index).iterfind(f"{{{SITEMAP_NS}}}sitemap/{{{SITEMAP_NS}}}loc"):
            save(_below(loc.text or "", root))
    return written


def _below(url: str, root: str) -> str:
    """The path the app sees for one of our URLs (below ``base_url``'s own path)."""
    path = urllib.parse.urlsplit(url).path
    return path[len(root) :] if root and path.startswith(root) else path
