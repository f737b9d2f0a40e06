"""The demo shop's SQLite database: built on first start from deterministic fake data, no network.

    database = prepare(default_path(), products=200_000)   # about 2 s the first time
    database.all("SELECT slug, name_en FROM category")

It lives outside the repository (``~/.cache/sitemap-middleware-demo/shop.sqlite3``, or
under the temp folder when home is not writable) and is rebuilt when `SCHEMA_VERSION` or
the product count changes. Each start publishes the journal posts that fell due since the
last one (a post every 8 hours), so the blog always has news of the last two days.
"""

from __future__ import annotations

import os
import random
import re
import sqlite3
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

PRODUCTS = 200_000
SCHEMA_VERSION = 1  # change it with the tables: a database of another version is rebuilt
POST_EVERY = 8 * 3600  # seconds between two journal posts
BLOG_DAYS = 30  # a new database starts with this many days of posts

SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE category (
    id INTEGER PRIMARY KEY, slug TEXT NOT NULL UNIQUE, name_en TEXT NOT NULL, name_de TEXT NOT NULL,
    products INTEGER NOT NULL DEFAULT 0, updated_at INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE product (
    id INTEGER PRIMARY KEY, category_id INTEGER NOT NULL REFERENCES category,
    slug_en TEXT NOT NULL, slug_de TEXT NOT NULL, name_en TEXT NOT NULL, name_de TEXT NOT NULL,
    price_cents INTEGER NOT NULL, photos INTEGER NOT NULL, updated_at INTEGER NOT NULL
);
CREATE TABLE post (
    id INTEGER PRIMARY KEY, slug TEXT NOT NULL, title TEXT NOT NULL, body TEXT NOT NULL,
    published_at INTEGER NOT NULL, updated_at INTEGER NOT NULL
);
"""
# After the rows are in: cheaper than keeping them up to date row by row.
INDEXES = """
CREATE INDEX product_category ON product (category_id);
CREATE INDEX product_updated ON product (updated_at);
"""

# (slug, English name, German name, [(English noun, German noun)])
CATEGORIES = [
    ("shirts", "Shirts", "Hemden", [("Shirt", "Hemd"), ("Polo", "Poloshirt"), ("Blouse", "Bluse")]),
    ("knitwear", "Knitwear", "Strickwaren", [("Jumper", "Pullover"), ("Cardigan", "Strickjacke")]),
    ("trousers", "Trousers", "Hosen", [("Chinos", "Chino"), ("Jeans", "Jeans"), ("Shorts", "Shorts")]),
    ("jackets", "Jackets & Coats", "Jacken & Mäntel", [("Jacket", "Jacke"), ("Raincoat", "Regenmantel")]),
    ("shoes", "Shoes", "Schuhe", [("Sneaker", "Sneaker"), ("Boot", "Stiefel"), ("Sandal", "Sandale")]),
    ("bags", "Bags & Belts", "Taschen & Gürtel", [("Tote", "Tragetasche"), ("Backpack", "Rucksack")]),
    ("hats", "Hats & Scarves", "Mützen & Schals", [("Beanie", "Mütze"), ("Scarf", "Schal")]),
    ("home", "Home", "Wohnen", [("Cushion", "Kissen"), ("Throw", "Decke"), ("Vase", "Vase")]),
    ("kitchen", "Kitchen", "Küche", [("Mug", "Becher"), ("Teapot", "Teekanne"), ("Bowl", "Schale")]),
    ("garden", "Garden", "Garten", [("Planter", "Pflanztopf"), ("Watering Can", "Gießkanne")]),
    ("stationery", "Stationery", "Schreibwaren", [("Notebook", "Notizbuch"), ("Desk Lamp", "Tischlampe")]),
    ("toys", "Toys", "Spielzeug", [("Kite", "Drachen"), ("Puzzle", "Puzzle"), ("Teddy Bear", "Teddybär")]),
]
COLOURS = [
    ("Blue", "Blau"), ("Red", "Rot"), ("Green", "Grün"), ("White", "Weiß"), ("Black", "Schwarz"),
    ("Grey", "Grau"), ("Yellow", "Gelb"), ("Ochre", "Ocker"), ("Navy", "Marine"), ("Rose", "Rosé"),
]  # fmt: skip
MODELS = ["Aalto", "Bergen", "Como", "Delft", "Elba", "Faro", "Gent", "Hydra", "Ibiza", "Jura", "Kiel"]
TITLES = [
    "How to care for your {noun}",
    "Five ways to wear {colour}",
    "New in {category}: the {model} range",
    "Behind the seams: who makes the {model} {noun}",
    "Our {noun} guide: sizes, fits & fabrics",
]
_ASCII = str.maketrans({"ä": "ae", "ö": "oe", "ü": "ue", "ß": "ss", "é": "e"})


def slugify(text: str) -> str:
    return "-".join(re.findall(r"[a-z0-9]+", text.lower().translate(_ASCII)))


def utc(timestamp: int) -> datetime:
    """A stored time (seconds since the epoch) as an aware datetime."""
    return datetime.fromtimestamp(timestamp, UTC)


@dataclass(frozen=True)
class Database:
    """The shop's SQLite file, read only. Each use opens its own connection (SQLite's cost
    little), so any thread may query it."""

    path: Path

    @contextmanager
    def connect(self) -> Iterator[sqlite3.Connection]:
        # A page's rows (`rows`) are pulled batch by batch, under ASGI each batch from whichever
        # render thread is free: the connection moves between threads, one at a time.
        connection = sqlite3.connect(
            f"{self.path.resolve().as_uri()}?mode=ro", uri=True, check_same_thread=False
        )
        try:
            yield connection
        finally:
            connection.close()

    def all(self, sql: str, *params: object) -> list[Any]:
        with self.connect() as connection:
            return connection.execute(sql, params).fetchall()

    def one(self, sql: str, *params: object) -> Any:
        with self.connect() as connection:
            return connection.execute(sql, params).fetchone()

    def rows(self, sql: str, *params: object) -> Iterator[Any]:
        """The rows as they are read: a generator whose closing closes its connection."""
        with self.connect() as connection:
            yield from connection.execute(sql, params)


def default_path() -> Path:
    """``shop.sqlite3`` in the user's cache folder, else in the temp folder."""
    cache_home = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    for folder in (cache_home, Path(tempfile.gettempdir())):
        with suppress(OSError):
            (folder / "sitemap-middleware-demo").mkdir(parents=True, exist_ok=True)
            if os.access(folder / "sitemap-middleware-demo", os.W_OK):
                return folder / "sitemap-middleware-demo" / "shop.sqlite3"
    raise OSError("no writable folder for the demo database: set SITEMAP_DEMO_DB")


def prepare(
    path: Path, products: int = PRODUCTS, *, now: float | None = None, echo: Callable[[str], None] = print
) -> Database:
    """The database at ``path``, built unless it has this schema version and ``products``,
    with the posts due by ``now`` published."""
    now = time.time() if now is None else now
    if _built_for(path) != (SCHEMA_VERSION, products):
        echo(f"Building the demo database: {products:,} products in {path} ...")
        started = time.perf_counter()
        _build(path, products, int(now))
        echo(f"Built in {time.perf_counter() - started:.1f} s.")
    _publish_posts(path, int(now))
    return Database(path)


def _built_for(path: Path) -> tuple[int, int] | None:
    """(schema version, products) of the database at ``path``; ``None`` if there is none."""
    if not path.is_file():
        return None
    try:
        with closing(sqlite3.connect(path)) as connection:
            version = connection.execute("PRAGMA user_version").fetchone()[0]
            products = connection.execute("SELECT value FROM meta WHERE key = 'products'").fetchone()
    except sqlite3.DatabaseError:  # not a database, or not one of ours
        return None
    return (version, products[0]) if products else None


def _build(path: Path, products: int, now: int) -> None:
    """Write a new database beside ``path``, then move it there: a crash leaves no half-built one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    building = path.with_name(f"{path.name}.{os.getpid()}.building")
    building.unlink(missing_ok=True)
    try:
        with closing(sqlite3.connect(building)) as connection:
            # A new file, moved into place once whole: nothing to roll back to or to sync before.
            connection.execute("PRAGMA journal_mode = OFF")
            connection.execute("PRAGMA synchronous = OFF")
            connection.executescript(SCHEMA)
            with connection:  # one transaction
                connection.executemany(
                    "INSERT INTO category (id, slug, name_en, name_de) VALUES (?, ?, ?, ?)",
                    ((n, slug, en, de) for n, (slug, en, de, _) in enumerate(CATEGORIES, 1)),
                )
                connection.executemany(
                    "INSERT INTO product VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", _fake_products(products, now)
                )
                connection.executescript(INDEXES)
                connection.execute(
                    "UPDATE category SET (products, updated_at) = (SELECT COUNT(*),"
                    " COALESCE(MAX(updated_at), 0) FROM product WHERE category_id = category.id)"
                )
                connection.execute("INSERT INTO meta VALUES ('products', ?)", (products,))
            connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        os.replace(building, path)
    finally:
        building.unlink(missing_ok=True)


def _fake_products(count: int, now: int) -> Iterator[tuple[object, ...]]:
    rng = random.Random(14)  # the same catalogue on every machine
    for product in range(1, count + 1):
        category = rng.randrange(len(CATEGORIES))
        noun = rng.randrange(len(CATEGORIES[category][3]))
        names = _names(category, noun, rng.randrange(len(MODELS)), rng.randrange(len(COLOURS)))
        price = rng.randrange(5, 250) * 100 - 10
        photos = rng.choice((0, 1, 1, 2, 3))  # a fifth of the catalogue has no photo yet
        yield (product, category + 1, *names, price, photos, now - rng.randrange(365 * 86400))


@cache
def _names(category: int, noun: int, model: int, colour: int) -> tuple[str, str, str, str]:
    """English and German slugs, then names: 'Aalto Shirt in Blue', 'Hemd Aalto in Blau'."""
    noun_en, noun_de = CATEGORIES[category][3][noun]
    colour_en, colour_de = COLOURS[colour]
    en, de = f"{MODELS[model]} {noun_en} in {colour_en}", f"{noun_de} {MODELS[model]} in {colour_de}"
    return slugify(en), slugify(de), en, de


def _publish_posts(path: Path, now: int) -> None:
    """Add the posts due since the last one; a new database gets `BLOG_DAYS` of them."""
    with closing(sqlite3.connect(path)) as connection, connection:
        last = connection.execute("SELECT MAX(published_at) FROM post").fetchone()[0]
        since = now - BLOG_DAYS * 86400 if last is None else last + 1
        first = -(-since // POST_EVERY) * POST_EVERY  # on the hour, every 8 hours
        connection.executemany(
            "INSERT INTO post (slug, title, body, published_at, updated_at) VALUES (?, ?, ?, ?, ?)",
            (_fake_post(at) for at in range(first, now + 1, POST_EVERY)),
        )


def _fake_post(at: int) -> tuple[object, ...]:
    rng = random.Random(at)
    _, category, _, nouns = rng.choice(CATEGORIES)
    model, (noun, _), (colour, _) = rng.choice(MODELS), rng.choice(nouns), rng.choice(COLOURS)
    noun, colour = noun.lower(), colour.lower()
    title = rng.choice(TITLES).format(noun=noun, colour=colour, category=category, model=model)
    body = (
        f"This week in {category.lower()}: the {model} {noun} in {colour}, and what we learnt making it."
        f"\n\nWe asked our makers about cut, cloth & care. Every {noun} we sell is in our sitemaps"
        " the moment it goes live: nothing to rebuild, nothing to upload."
        "\n\nSee you in eight hours for the next post."
    )
    return slugify(title), title, body, at, at
