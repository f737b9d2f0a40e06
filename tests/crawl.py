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

from lxml import etree

from sitemap_middleware import Alternate, Image, News, Sitemaps, Url, Video
from sitemap_middleware.providers import ProviderFunc

from .conftest import BASE, make_shop
from .xsd import NS, locs, validate

XHTML_LINK = "{http://www.w3.org/1999/xhtml}link"

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
    sitemaps = make_shop(
        PRODUCTS,
        product=lambda n: Url(
            f"/p/{n}?colour=blue&size=m",
            lastmod=EPOCH + timedelta(minutes=n),
            changefreq="daily",
            priority=0.8,
        ),
        shape="generator",
        products_page_size=PRODUCTS_PAGE_SIZE,
        pages=PAGE_PATHS,
        sections=["pages", "products"],
        base_url=base_url,
        strict=True,
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


# -- a tree with every extension ----------------------------------------------------------------------

EXT_EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
# Each section of `extension_shop` and the extensions its pages carry.
EXTENSION_SECTIONS = {
    "pages": set(),
    "products": {"alternates", "images"},
    "videos": {"videos"},
    "news": {"news"},
    "mixed": {"alternates", "images", "videos", "news"},
}


def extension_shop(base_url: str = BASE) -> tuple[Sitemaps, list[str]]:
    """A tree whose sections use each extension (`EXTENSION_SECTIONS`), and every loc it serves.

    ``mixed`` holds all four in one page, its hreflang groups given entry by entry; ``products``
    declares its languages and expands each entry into both.
    """
    # The shared shop's pages and products (in two languages, with images), then a section
    # for each other extension on top.
    sitemaps = make_shop(
        4,
        product=lambda n: Url(f"/p/{n}", images=[f"https://cdn.example.net/p/{n}/{i}.jpg" for i in range(n)]),
        products_page_size=5,
        products_options={"languages": ["en", "de"], "x_default": "en", "extensions": ["images"]},
        sections=["pages", "products"],
        base_url=base_url,
        strict=True,
        clock=lambda: EXT_EPOCH.timestamp(),
    )

    def video(n: int) -> Video:
        return Video(
            thumbnail_loc=f"/t/{n}.jpg",
            title=f"Video {n} ]]> & \u05e9\u05dc\u05d5\u05dd",
            description="Caf\u00e9 \U0001f969 'quoted' \"twice\" <b>",
            content_loc=f"https://cdn.example.net/v/{n}.mp4",
            duration=60 * (n + 1),
            publication_date=EXT_EPOCH,
            family_friendly=True,
            tags=["a", "b"],
        )

    sitemaps.provider("videos", extensions=["videos"])(
        lambda: [Url(f"/v/{n}", videos=[video(n)]) for n in range(3)]
    )

    def article(n: int) -> News:
        return News("The Example Times", "en", EXT_EPOCH - timedelta(hours=n), f"Headline {n} & more")

    sitemaps.provider("news", extensions=["news"], news_window=timedelta(days=2))(
        lambda: [Url(f"/a/{n}", news=article(n)) for n in range(3)]
    )

    def mixed() -> Iterator[Url]:
        group = [Alternate("en", "/m/en"), Alternate("fr", "/m/fr"), Alternate("x-default", "/m/en")]
        for alternate in group[:2]:
            yield Url(
                alternate.href,
                lastmod=EXT_EPOCH,
                alternates=group,
                images=[Image("/i/m.jpg")],
                videos=[video(9)],
                news=article(1),
            )
        yield Url("/m/plain")

    sitemaps.provider("mixed", extensions=["alternates", "images", "videos", "news"])(mixed)
    expected = [f"{base_url}/", f"{base_url}/about"]
    expected += [f"{base_url}/{lang}/p/{n}" for n in range(4) for lang in ("en", "de")]
    expected += [f"{base_url}/v/{n}" for n in range(3)] + [f"{base_url}/a/{n}" for n in range(3)]
    expected += [f"{base_url}/m/en", f"{base_url}/m/fr", f"{base_url}/m/plain"]
    return sitemaps, expected


def hreflang_groups(pages: Iterable[etree._Element]) -> dict[str, list[tuple[str, str]]]:
    """Each URL's hreflang group, (hreflang, href) in document order, by loc (URLs with one only)."""
    groups = {}
    for page in pages:
        for url in page:
            links = [(link.get("hreflang") or "", link.get("href") or "") for link in url.iter(XHTML_LINK)]
            if links:
                groups[url.findtext("sm:loc", namespaces=NS) or ""] = links
    return groups


def assert_reciprocal(groups: dict[str, list[tuple[str, str]]]) -> None:
    """Every member of every group is served with that very group (Google: return links)."""
    for loc, group in groups.items():
        assert loc in {href for _, href in group}, f"{loc} is not in its own group"
        assert sum(tag == "x-default" for tag, _ in group) <= 1
        assert len({tag for tag, _ in group}) == len(group)
        for _, href in group:
            assert sorted(groups.get(href, [])) == sorted(group), f"{href} does not return {loc}'s group"
