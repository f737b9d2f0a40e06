"""The demo shop: 200,000 products on SQLite in English and German, a blog, and live sitemaps.

    python examples/demo.py [PORT]      # or: tox -e demo -- 8001

On first start it builds its database (a few seconds, `demo_database`); then it serves the
shop (`demo_site`) on http://127.0.0.1:8000/ and its sitemaps, in four sections:

- ``pages``: a list, in English and German, the languages declared once (``languages=``).
- ``categories``: rows of the category table, with ``languages=`` too.
- ``products``: `ProductPages`, a paged source over sqlite3. Pages are ranges of product
  ids, each read with ``WHERE id >= ? AND id < ? ORDER BY id``, and one query plans them all,
  so page 8 costs what page 1 costs and the index never iterates a row. A product is two
  URLs (its English and German slugs differ: hreflang ``alternates`` per `Url`) with its
  photos (``Image``).
- ``blog``: the journal, a post every 8 hours; posts of the last two days carry ``News``.

Each section over the database declares a ``version`` (``MAX(updated_at), COUNT(*)``): a
change made by any process shows at the next request. /sitemaps/ is the HTML overview.
``SITEMAP_DEMO_PRODUCTS`` and ``SITEMAP_DEMO_DB`` set another product count and database
file (the tests use 2,000 products).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from functools import partial
from pathlib import Path

from demo_database import CATEGORIES, PRODUCTS, Database, default_path, prepare, utc
from demo_site import LANGUAGES, OVERVIEW, PAGES, PUBLICATION, Shop, photo_path, post_path, product_path
from starlette.applications import Starlette

from sitemap_middleware import Alternate, Image, News, SitemapASGIMiddleware, Sitemaps, Url
from sitemap_middleware.sources import Key, PageStart

# Where every page starts, its newest updated_at and its size: one query, no row in Python.
# Each page's first id is found by seeking ? ids on from the one before (LIMIT 1 OFFSET over
# the primary key, as sitemap_middleware.sqlalchemy.keyset plans), never by numbering every
# row; a page is then every id from its first up to the next page's.
PLAN = """
WITH RECURSIVE start(id) AS (
    SELECT MIN(id) FROM product
    UNION ALL
    SELECT (SELECT id FROM product WHERE id >= start.id ORDER BY id LIMIT 1 OFFSET ?1)
    FROM start WHERE start.id IS NOT NULL
), page(first, next) AS (
    SELECT id, LEAD(id, 1, (SELECT MAX(id) + 1 FROM product)) OVER (ORDER BY id)
    FROM start WHERE id IS NOT NULL
)
SELECT first, MAX(updated_at), COUNT(*) FROM page JOIN product ON product.id >= first AND product.id < next
GROUP BY first ORDER BY first
"""
# A page's products: its id range, at most ? of them (the core asks for one URL past a
# file's limit, to see a range that grew past it).
PAGE = """
SELECT id, slug_en, slug_de, photos, updated_at FROM product
WHERE id >= ?1 AND (?2 IS NULL OR id < ?2) ORDER BY id LIMIT ?3
"""


class ProductPages:
    """The products section as a paged source over sqlite3: pages are ranges of product ids.

    A product is one URL per language, so a page of ``page_size`` URLs holds
    ``page_size // 2`` products. All pages are planned by one query (`pages`); a page's rows
    come from one keyset read (`entries`), up to the next page's first id (``end``), so a
    product added inside a planned range shows on its page at once.
    """

    extensions = ("alternates", "images")  # what its entries carry (`add_provider` reads it)

    def __init__(self, database: Database) -> None:
        self.database = database

    def pages(self, page_size: int) -> list[PageStart]:
        planned = self.database.all(PLAN, self._products(page_size))
        urls = len(LANGUAGES)
        return [PageStart(first, utc(newest), count * urls) for first, newest, count in planned]

    def entries(self, first: Key | None, limit: int, end: Key | None = None) -> Iterator[Url]:
        # Page 1 (``first`` is None) starts below its planned first id: a product added before
        # it shows at once too. SQLite's smallest integer key keeps the read a seek by id.
        lowest = -(2**63) if first is None else first
        rows = self.database.rows(PAGE, lowest, end, -(-limit // len(LANGUAGES)))  # a URL past limit shows
        for product, slug_en, slug_de, photos, updated_at in rows:
            en, de = product_path("en", product, slug_en), product_path("de", product, slug_de)
            group = (Alternate("en", en), Alternate("de", de), Alternate("x-default", en))
            images = [Image(photo_path(product, n)) for n in range(1, photos + 1)] or None
            lastmod = utc(updated_at)
            yield Url(en, lastmod=lastmod, alternates=group, images=images)
            yield Url(de, lastmod=lastmod, alternates=group, images=images)

    def version(self) -> object:
        # Moved by any change: an edit (its updated_at), an insert or a delete (the count).
        return self.database.one("SELECT MAX(updated_at), COUNT(*) FROM product")

    @staticmethod
    def _products(urls: int) -> int:
        if urls < len(LANGUAGES):
            raise ValueError(f"a page of {urls} URLs cannot hold a product in each of its languages")
        return urls // len(LANGUAGES)


def make_sitemaps(
    database: Database, base_url: str, *, page_size: int = 50_000, clock: Callable[[], float] = time.time
) -> Sitemaps:
    """The shop's sitemaps: ``pages``, ``categories``, ``products`` and ``blog``."""
    sitemaps = Sitemaps(base_url=base_url, page_size=page_size, overview_path=OVERVIEW, clock=clock)
    sitemaps.add_provider("pages", lambda: PAGES, languages=LANGUAGES, x_default="en")

    def categories() -> Iterator[Url]:
        for slug, updated_at in database.rows("SELECT slug, updated_at FROM category ORDER BY id"):
            yield Url(f"/c/{slug}", lastmod=utc(updated_at))

    def posts() -> Iterator[Url]:
        newest = database.one("SELECT MAX(updated_at) FROM post")[0]
        yield Url("/blog", lastmod=None if newest is None else utc(newest))
        for post, slug, title, published_at, updated_at in database.rows(
            "SELECT id, slug, title, published_at, updated_at FROM post ORDER BY id"
        ):
            news = News(PUBLICATION, "en", utc(published_at), title)
            yield Url(post_path(post, slug), lastmod=utc(updated_at), news=news)

    def version(table: str) -> Callable[[], object]:
        return partial(database.one, f"SELECT MAX(updated_at), COUNT(*) FROM {table}")

    sitemaps.add_provider(
        "categories", categories, languages=LANGUAGES, x_default="en", version=version("category")
    )
    products = ProductPages(database)
    sitemaps.add_provider("products", products, version=products.version)
    # Google News reads two days: older posts keep their URL and lose <news:news>.
    sitemaps.add_provider(
        "blog", posts, extensions=["news"], news_window=timedelta(days=2), version=version("post")
    )
    return sitemaps


@dataclass
class Demo:
    database: Database
    sitemaps: Sitemaps
    shop: Starlette  # the site alone
    app: SitemapASGIMiddleware  # the site behind its sitemaps: what is served


def make_demo(
    database: Database,
    base_url: str = "http://127.0.0.1:8000",
    *,
    page_size: int = 50_000,
    clock: Callable[[], float] = time.time,
) -> Demo:
    sitemaps = make_sitemaps(database, base_url, page_size=page_size, clock=clock)
    shop = Starlette(routes=Shop(database, base_url).routes())
    return Demo(database, sitemaps, shop, sitemaps.asgi(shop))


def main(argv: list[str]) -> None:
    import uvicorn

    port = int(argv[1]) if len(argv) > 1 else 8000
    products = int(os.environ.get("SITEMAP_DEMO_PRODUCTS") or PRODUCTS)
    path = Path(os.environ.get("SITEMAP_DEMO_DB") or default_path())
    database = prepare(path, products)
    root = f"http://127.0.0.1:{port}"
    demo = make_demo(database, root)
    count, posts = (database.one(f"SELECT COUNT(*) FROM {table}")[0] for table in ("product", "post"))
    python = os.path.relpath(sys.executable)
    print(
        f"\nDemo shop: {count:,} products in {len(CATEGORIES)} categories, {posts} journal posts"
        f" (database: {path})\n\n"
        f"  the shop          {root}/  (German: {root}/de/)\n"
        f"  sitemap overview  {root}{OVERVIEW}\n"
        f"  sitemap index     {root}/sitemap-index.xml\n"
        f"  robots.txt        {root}/robots.txt\n\n"
        "Check the whole tree from another terminal:\n"
        f"  {sys.executable if python.startswith('..') else python} -m sitemap_middleware validate"
        f" {root}/robots.txt\n",
        flush=True,
    )
    uvicorn.run(demo.app, host="127.0.0.1", port=port)


if __name__ == "__main__":
    main(sys.argv)
