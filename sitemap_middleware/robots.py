"""robots.txt: add our ``Sitemap:`` line to the app's own file, or serve a minimal one.

merge_robots(b"User-agent: *\\nDisallow: /cart\\n", "https://shop.example/sitemap-index.xml")
# b"User-agent: *\\nDisallow: /cart\\n\\nSitemap: https://shop.example/sitemap-index.xml\\n"
"""

from __future__ import annotations

__all__ = ["default_robots", "merge_robots"]


def default_robots(index_url: str) -> bytes:
    """What a site with no robots.txt of its own gets: allow all, name the index."""
    return f"User-agent: *\nAllow: /\n\nSitemap: {index_url}\n".encode()


def merge_robots(body: bytes, index_url: str) -> bytes:
    """The app's robots.txt with a ``Sitemap:`` line for ``index_url``, never twice.

    ``Sitemap`` is a non-group record (RFC 9309 §2.2.4 leaves it to crawlers; Google
    and Bing read it anywhere), so appending it after the groups is safe.
    """
    for line in body.splitlines():
        field, _, value = line.partition(b":")
        if field.strip().lower() == b"sitemap" and value.strip() == index_url.encode():
            return body
    separator = b"" if not body or body.endswith(b"\n\n") else b"\n" if body.endswith(b"\n") else b"\n\n"
    return body + separator + f"Sitemap: {index_url}\n".encode()
