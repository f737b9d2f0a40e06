"""A sitemap tree to serve through real frameworks, and a crawler that checks what comes back.

    sitemaps, expected = shop_sitemaps()
    tree = crawl(lambda path: client.get(path).data)
    assert tree.urls == expected

`crawl` fetches the index, then every page it lists, validating each document against
the official XSD (`tests.xsd.validate`) and parsing its locs back.
"""

from __future__ import annotations

import asyncio
import gzip
from collections.abc import AsyncIterable, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from sitemap_middleware import Sitemaps, Url
from sitemap_middleware.providers import ProviderFunc

from .xsd import locs, validate

BASE = "https://shop.example"
EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
PRODUCTS = 120  # with PRODUCTS_PAGE_SIZE: pages of 50 + 50 + 20
PRODUCTS_PAGE_SIZE = 50
ROBOTS = b"User-agent: *\nDisallow: /cart\n"
ROBOTS_MERGED = ["User-agent: *", "Disallow: /cart", f"Sitemap: {BASE}/sitemap-index.xml"]  # its lines

PAGE_PATHS = ["/", "/about", "/caf\u00e9"]
PAGE_LOCS = [f"{BASE}/", f"{BASE}/about", f"{BASE}/caf%C3%A9"]  # RFC 3986: UTF-8, percent-encoded
PRODUCT_LOCS = [f"{BASE}/p/{n}?colour=blue&size=m" for n in range(PRODUCTS)]


def shop_sitemaps(base_url: str = BASE) -> tuple[Sitemaps, set[str]]:
    """Two sections, ``pages`` (a list) and ``products`` (a generator over 3 pages), and every loc."""
    sitemaps = Sitemaps(base_url=base_url, strict=True)
    sitemaps.provider("pages")(lambda: PAGE_PATHS)

    @sitemaps.provider("products", page_size=PRODUCTS_PAGE_SIZE)
    def products() -> Iterator[Url]:
        for n in range(PRODUCTS):
            yield Url(
                f"/p/{n}?colour=blue&size=m",
                lastmod=EPOCH + timedelta(minutes=n),
                changefreq="daily",
                priority=0.8,
            )

    return sitemaps, set(PAGE_LOCS) | set(PRODUCT_LOCS)


def shop_index_locs(root: str = BASE) -> list[str]:
    """The page URLs the index of `shop_sitemaps` lists, in order, for a tree mounted at ``root``."""
    return [f"{root}/sitemap-pages-1.xml"] + [f"{root}/sitemap-products-{n}.xml" for n in (1, 2, 3)]


@dataclass
class Tree:
    """What a crawl found: the index's page URLs, and each page's locs."""

    index: list[str]
    pages: dict[str, list[str]] = field(default_factory=dict)

    @property
    def urls(self) -> set[str]:
        return {loc for page in self.pages.values() for loc in page}

    @property
    def url_count(self) -> int:
        return sum(len(page) for page in self.pages.values())


def crawl(fetch: Callable[[str], bytes], *, origin: str = BASE, index: str = "/sitemap-index.xml") -> Tree:
    """Fetch and validate the index at ``index`` and every page it lists.

    ``fetch`` takes a path on ``origin`` (mount prefix included) and returns the body.
    """
    tree = Tree(locs(validate(fetch(index))))
    for loc in tree.index:
        assert loc.startswith(origin + "/"), f"{loc} is not on {origin}"
        tree.pages[loc] = locs(validate(fetch(loc.removeprefix(origin))))
    return tree


def gunzip_locs(data: bytes) -> list[str]:
    """The locs of a ``.gz`` sitemap file, validated once decompressed."""
    return locs(validate(gzip.decompress(data)))


def robots_lines(body: bytes) -> list[str]:
    """robots.txt records, blank lines dropped (they only separate groups)."""
    return [line for line in body.decode().splitlines() if line.strip()]


def provider_locs(root: str, *providers: ProviderFunc) -> set[str]:
    """Every loc the ``providers`` (lists, generators, async generators of str or `Url`) give.

    For examples whose paths need no escaping: each path is simply joined to ``root``.
    """
    found: set[str] = set()
    for provider in providers:
        result = provider()
        if isinstance(result, AsyncIterable):
            result = asyncio.run(_drain(result))
        assert isinstance(result, Iterable)
        for entry in result:
            assert isinstance(entry, str | Url), entry
            found.add(root + (entry if isinstance(entry, str) else entry.loc))
    return found


async def _drain(entries: AsyncIterable[object]) -> list[object]:
    return [entry async for entry in entries]
