"""The demo shop (examples/demo.py) on a small database: its sitemaps hold exactly the database's
URLs, valid and reciprocal; its pages serve what they list; ``validate`` finds it clean.

The demo is imported from ``examples/`` (with its two helper modules) and given a database of
`PRODUCTS` products in a temp folder, with pages of `PAGE_SIZE` URLs so products span several
files. What the sitemaps should hold is read from the database here, with the URL layout
written out, not taken from the example.
"""

from __future__ import annotations

import importlib
import io
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import sysconfig
import tempfile
import time
import venv
from collections.abc import Callable, Iterator
from contextlib import closing
from datetime import UTC, datetime
from itertools import pairwise
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from lxml import etree, html
from starlette.testclient import TestClient

from sitemap_middleware.cli import main

from .conftest import SitemapClient
from .crawl import assert_reciprocal, hreflang_groups, robots_lines
from .servers import uvicorn_serving
from .test_examples import EXAMPLES, REPO, TIMEOUT, fetch_when_ready, free_port, subprocess_env
from .xsd import SCHEMA_DIR, lastmods, locs, parse, schemas_available, validate

ROOT = "http://127.0.0.1:8000"  # the demo's base_url by default
PRODUCTS = 2_000
PAGE_SIZE = 1_000  # URLs: 500 products (each in English and German) a file
# The demo's clock (building, publishing, the news window): on the half hour, so never at a post's time.
NOW = float(int(time.time()) // 3600 * 3600 - 1800)
IMAGE = "{http://www.google.com/schemas/sitemap-image/1.1}"
NEWS = "{http://www.google.com/schemas/sitemap-news/0.9}"
INDEX = ["pages-1", "categories-1", *(f"products-{n}" for n in range(1, 5)), "blog-1"]


@pytest.fixture(scope="module")
def demo() -> Iterator[ModuleType]:
    """examples/demo.py, imported as the script does (its helper modules beside it)."""
    sys.path.insert(0, str(EXAMPLES))
    try:
        yield importlib.import_module("demo")
    finally:
        sys.path.remove(str(EXAMPLES))
        for name in ("demo", "demo_database", "demo_site"):
            sys.modules.pop(name, None)


@pytest.fixture(scope="module")
def demo_db(demo: ModuleType) -> ModuleType:
    """examples/demo_database.py: the demo's database, built and opened."""
    return sys.modules["demo_database"]


@pytest.fixture(scope="module")
def database_path(demo_db: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("demo") / "shop.sqlite3"
    demo_db.prepare(path, PRODUCTS, now=NOW, echo=lambda line: None)
    return path


def make(demo: ModuleType, path: Path, base_url: str = ROOT) -> Any:
    return demo.make_demo(demo.Database(path), base_url, page_size=PAGE_SIZE, clock=lambda: NOW)


@pytest.fixture
def client(demo: ModuleType, database_path: Path, make_client: Callable[..., SitemapClient]) -> SitemapClient:
    """The demo's sitemaps on each adapter (in front of the shop under ASGI)."""
    built = make(demo, database_path)
    return make_client(built.sitemaps, asgi_app=built.shop)


def fetcher(client: SitemapClient) -> Callable[[str], bytes]:
    def fetch(path: str) -> bytes:
        response = client.get(path)
        assert response.status == 200, f"GET {path}: {response.status}"
        return response.body

    return fetch


def documents(fetch: Callable[[str], bytes], root: str = ROOT) -> dict[str, etree._Element]:
    """Every page the index lists, validated against the XSDs, by URL."""
    index = locs(validate(fetch("/sitemap-index.xml")))
    return {loc: validate(fetch(loc.removeprefix(root))) for loc in index}


# -- what the database holds ------------------------------------------------------------------------


def query(path: Path, sql: str) -> list[Any]:
    with closing(sqlite3.connect(path)) as connection:
        return connection.execute(sql).fetchall()


def expected_urls(path: Path, root: str = ROOT) -> set[str]:
    """Every URL the demo's sitemaps must list, from its database."""
    urls = {root + prefix + page for prefix in ("", "/de") for page in ("/", "/about", "/delivery")}
    urls |= {
        f"{root}{prefix}/c/{slug}"
        for (slug,) in query(path, "SELECT slug FROM category")
        for prefix in ("", "/de")
    }
    for product, en, de in query(path, "SELECT id, slug_en, slug_de FROM product"):
        urls |= {f"{root}/p/{product}-{en}", f"{root}/de/p/{product}-{de}"}
    urls |= {f"{root}/blog/{post}-{slug}" for post, slug in query(path, "SELECT id, slug FROM post")}
    return urls | {f"{root}/blog"}


def w3c(timestamp: int) -> str:
    return datetime.fromtimestamp(timestamp, UTC).isoformat()


# -- the sitemaps, on both adapters ------------------------------------------------------------------


def test_the_index_lists_every_page_with_its_newest_lastmod(client, database_path):
    index = validate(fetcher(client)("/sitemap-index.xml"))
    assert locs(index) == [f"{ROOT}/sitemap-{page}.xml" for page in INDEX]
    updated = [at for (at,) in query(database_path, "SELECT updated_at FROM product ORDER BY id")]
    newest = [w3c(max(updated[n : n + PAGE_SIZE // 2])) for n in range(0, PRODUCTS, PAGE_SIZE // 2)]
    assert lastmods(index)[2:6] == newest


def test_the_pages_hold_exactly_the_databases_urls(client, database_path):
    pages = documents(fetcher(client))
    listed = [loc for page in pages.values() for loc in locs(page)]
    assert len(listed) == len(set(listed))
    assert set(listed) == expected_urls(database_path)
    products = [page for url, page in pages.items() if "-products-" in url]
    assert [len(page) for page in products] == [PAGE_SIZE] * 4


def test_every_page_but_the_blog_is_in_english_and_german_with_reciprocal_hreflang(client, database_path):
    pages = documents(fetcher(client))
    groups = hreflang_groups(pages.values())
    assert_reciprocal(groups)
    assert {url for url in expected_urls(database_path) if "/blog" not in url} == set(groups)
    product, en, de = query(database_path, "SELECT id, slug_en, slug_de FROM product WHERE id = 7")[0]
    english, german = f"{ROOT}/p/{product}-{en}", f"{ROOT}/de/p/{product}-{de}"
    assert groups[german] == [("en", english), ("de", german), ("x-default", english)]
    assert groups[f"{ROOT}/de/about"] == [
        ("en", f"{ROOT}/about"),
        ("de", f"{ROOT}/de/about"),
        ("x-default", f"{ROOT}/about"),
    ]


def test_products_list_their_photos(client, database_path):
    pages = documents(fetcher(client))
    photos = {
        url.findtext("{*}loc"): [image.text for image in url.iter(f"{IMAGE}loc")]
        for page in pages.values()
        for url in page
    }
    rows = query(database_path, "SELECT id, slug_en, slug_de, photos FROM product")
    assert any(count == 0 for *_, count in rows) and any(count == 3 for *_, count in rows)
    for product, en, de, count in rows:
        expected = [f"{ROOT}/img/p/{product}-{n}.svg" for n in range(1, count + 1)]
        assert photos[f"{ROOT}/p/{product}-{en}"] == photos[f"{ROOT}/de/p/{product}-{de}"] == expected


def test_posts_of_the_last_two_days_are_news(client, database_path):
    blog = validate(fetcher(client)("/sitemap-blog-1.xml"))
    news = {url.findtext("{*}loc"): url.find(f"{NEWS}news") for url in blog}
    posts = query(database_path, "SELECT id, slug, title, published_at FROM post")
    assert len(posts) == 90  # 30 days, a post every 8 hours
    fresh = 0
    for post, slug, title, published_at in posts:
        element = news[f"{ROOT}/blog/{post}-{slug}"]
        if published_at < NOW - 2 * 86400:
            assert element is None
            continue
        fresh += 1
        assert element.findtext(f"{NEWS}title") == title
        assert element.findtext(f"{NEWS}publication_date") == w3c(published_at)
        assert element.findtext(f"{NEWS}publication/{NEWS}name") == "Demo Shop Journal"
    assert fresh == 6


def test_the_overview_counts_match_the_tree(client, database_path):
    page = html.fromstring(fetcher(client)("/sitemaps/"))
    assert page.findtext(".//span[@id='files']") == str(len(INDEX))
    assert page.findtext(".//span[@id='urls']") == f"{len(expected_urls(database_path)):,}"
    products = page.find(".//section[@id='section-products']")
    assert products.findtext(".//span[@class='urls']") == f"{2 * PRODUCTS:,}"
    rows = [[cell.text_content() for cell in row] for row in products.iterfind(".//tbody/tr")]
    assert [row[3] for row in rows] == [f"{PAGE_SIZE:,}"] * 4


def test_a_change_to_the_database_shows_at_once(demo, database_path, tmp_path, make_client):
    path = tmp_path / "shop.sqlite3"
    shutil.copy(database_path, path)
    client = make_client(make(demo, path).sitemaps)
    fetch = fetcher(client)
    before = set(locs(validate(fetch("/sitemap-products-1.xml"))))
    (slug,) = query(path, "SELECT slug_en FROM product WHERE id = 2")[0]
    assert f"{ROOT}/p/2-{slug}" in before
    with closing(sqlite3.connect(path)) as connection, connection:
        connection.execute("UPDATE product SET slug_en = 'renamed', updated_at = ? WHERE id = 1", (NOW,))
        connection.execute("DELETE FROM product WHERE id = 2")
    after = set(locs(validate(fetch("/sitemap-products-1.xml"))))
    assert f"{ROOT}/p/1-renamed" in after and f"{ROOT}/p/2-{slug}" not in after
    assert lastmods(validate(fetch("/sitemap-index.xml")))[2] == w3c(int(NOW))


# -- the database -----------------------------------------------------------------------------------


def test_the_database_is_built_once_and_rebuilt_when_its_schema_version_changes(demo_db, tmp_path):
    path, built = tmp_path / "shop.sqlite3", []
    for _ in range(2):
        demo_db.prepare(path, 50, now=NOW, echo=built.append)
    assert len(built) == 2  # "Building ..." and "Built in ...", once
    with closing(sqlite3.connect(path)) as connection:
        connection.execute(f"PRAGMA user_version = {demo_db.SCHEMA_VERSION - 1}")
    demo_db.prepare(path, 50, now=NOW, echo=built.append)
    assert len(built) == 4
    demo_db.prepare(path, 60, now=NOW, echo=built.append)  # another product count
    assert query(path, "SELECT COUNT(*) FROM product") == [(60,)]
    path.write_bytes(b"not a database")
    demo_db.prepare(path, 60, now=NOW, echo=built.append)
    assert query(path, "SELECT COUNT(*) FROM product") == [(60,)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["shop.sqlite3"]  # nothing half-built left


def test_each_start_publishes_the_posts_due_since_the_last(demo_db, tmp_path):
    path = tmp_path / "shop.sqlite3"
    demo_db.prepare(path, 50, now=NOW, echo=lambda line: None)
    demo_db.prepare(path, 50, now=NOW + 86400, echo=lambda line: None)
    published = [at for (at,) in query(path, "SELECT published_at FROM post ORDER BY id")]
    assert len(published) == 93
    assert all(later - earlier == 8 * 3600 for earlier, later in pairwise(published))
    assert NOW + 86400 - 8 * 3600 < published[-1] <= NOW + 86400


def test_the_database_lives_in_the_cache_folder_or_else_the_temp_folder(demo_db, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert demo_db.default_path() == tmp_path / "cache" / "sitemap-middleware-demo" / "shop.sqlite3"
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "file"))  # no folder can be made there
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    assert demo_db.default_path() == tmp_path / "tmp" / "sitemap-middleware-demo" / "shop.sqlite3"


def test_building_is_deterministic(demo_db, tmp_path, database_path):
    path = tmp_path / "shop.sqlite3"
    demo_db.prepare(path, PRODUCTS, now=NOW, echo=lambda line: None)
    table = "SELECT * FROM product ORDER BY id"
    assert query(path, table) == query(database_path, table)


# -- the shop's pages --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def shop(demo: ModuleType, database_path: Path) -> Iterator[TestClient]:
    with TestClient(make(demo, database_path).app) as client:
        yield client


def page(shop: TestClient, url: str) -> html.HtmlElement:
    response = shop.get(url.removeprefix(ROOT))
    assert response.status_code == 200, url
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    return html.fromstring(response.content)


def test_every_listed_url_is_a_page_in_its_language(shop, database_path):
    urls = sorted(expected_urls(database_path))
    for url in urls[:40] + urls[40::97]:  # every kind of page, and a sample of products
        language = "de" if url.startswith(f"{ROOT}/de/") else "en"
        assert page(shop, url).get("lang") == language, url


def test_a_product_page_shows_its_photos_and_its_other_language(shop, database_path):
    product, en, de, name = query(
        database_path, "SELECT id, slug_en, slug_de, name_de FROM product WHERE photos = 3 LIMIT 1"
    )[0]
    german = page(shop, f"/de/p/{product}-{de}")
    assert german.findtext(".//h1") == name
    images = [img.get("src") for img in german.iter("img")]
    assert images == [f"/img/p/{product}-{n}.svg" for n in (1, 2, 3)]
    for src in images:
        photo = shop.get(src)
        assert photo.headers["content-type"] == "image/svg+xml"
        parse(photo.content)  # well-formed, product names escaped
    links = {link.get("hreflang"): link.get("href") for link in german.iterfind(".//link[@rel='alternate']")}
    assert links == {
        "en": f"{ROOT}/p/{product}-{en}",
        "de": f"{ROOT}/de/p/{product}-{de}",
        "x-default": links["en"],
    }
    assert shop.get(f"/p/{product}-{de}").status_code == 404  # each language has its own slug


def test_home_and_category_pages_link_what_the_sitemaps_list(shop, database_path):
    home = page(shop, "/")
    categories = query(database_path, "SELECT slug, name_en FROM category")
    assert {a.get("href") for a in home.iterfind(".//ul[@class='grid']//a")} == {
        f"/c/{slug}" for slug, _ in categories
    }
    assert "Bags & Belts" in {a.text for a in home.iter("a")}  # escaped in the HTML, read back whole
    bags = page(shop, "/c/bags")
    first = [a.get("href") for a in bags.iterfind(".//ul[@class='grid']//a")]
    rows = query(
        database_path,
        "SELECT p.id, p.slug_en FROM product p JOIN category c ON c.id = p.category_id"
        " WHERE c.slug = 'bags' ORDER BY p.id",
    )
    assert first == [f"/p/{product}-{slug}" for product, slug in rows[:48]]
    following = page(shop, f"/c/bags?after={rows[47][0]}")
    assert following.find(".//ul[@class='grid']//a").get("href") == f"/p/{rows[48][0]}-{rows[48][1]}"


def test_robots_txt_keeps_the_shops_rules_and_names_the_index(shop):
    lines = robots_lines(shop.get("/robots.txt").content)
    assert lines == ["User-agent: *", "Disallow: /basket", f"Sitemap: {ROOT}/sitemap-index.xml"]


# -- through real servers ----------------------------------------------------------------------------


@pytest.mark.server
def test_validate_finds_the_served_demo_clean(demo, database_path):
    port = free_port()
    root = f"http://127.0.0.1:{port}"
    with uvicorn_serving(make(demo, database_path, root).app, port=port):
        schemas = ["--schemas", str(SCHEMA_DIR)] if schemas_available() else []
        out = io.StringIO()
        code = main(["validate", f"{root}/robots.txt", *schemas], out=out, err=out)
    lines = out.getvalue().splitlines()
    assert code == 0, lines
    files = 2 + len(INDEX)  # robots.txt, the index and its pages
    assert lines == [
        f"checked {files} files, {len(expected_urls(database_path)):,} URLs: 0 problems, 0 warnings"
    ]


@pytest.mark.server
def test_the_script_builds_its_database_and_serves_on_loopback(tmp_path):
    port = free_port()
    env = {
        **subprocess_env(),
        "SITEMAP_DEMO_PRODUCTS": str(PRODUCTS),
        "SITEMAP_DEMO_DB": str(tmp_path / "shop.db"),
    }
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(
            [sys.executable, str(EXAMPLES / "demo.py"), str(port)],
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=REPO,
            env=env,
        )
        try:
            body = fetch_when_ready(port, "/sitemap-index.xml", process)
        finally:
            process.terminate()
            process.wait(TIMEOUT)
            log.seek(0)
            output = log.read().decode(errors="replace")
    root = f"http://127.0.0.1:{port}"
    pages = ["pages-1", "categories-1", "products-1", "blog-1"]  # 50,000 URLs a file
    assert locs(validate(body)) == [f"{root}/sitemap-{page}.xml" for page in pages], output
    assert f"{PRODUCTS:,} products" in output
    for where in (f"{root}/sitemaps/", f"{root}/sitemap-index.xml", f"{root}/robots.txt"):
        assert where in output
    assert f"-m sitemap_middleware validate {root}/robots.txt" in output


# -- the README's validate line, as a newcomer types it ---------------------------------------------


def readme_validate_line() -> str:
    """The command the README's Quick start gives to check the demo's tree."""
    quick_start = (REPO / "README.md").read_text().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    prose = re.sub(r"```.*?```", "", quick_start, flags=re.DOTALL)
    [line] = [span for span in re.findall(r"`([^`]+)`", prose) if " validate http://127.0.0.1:8000/" in span]
    return line


def quick_start_clone(folder: Path) -> Path:
    """A folder as the Quick start leaves a clone: the package's source at its root, and
    ``.tox/demo``, the virtualenv ``tox -e demo`` builds (the package's dependencies and the
    demo's, here this interpreter's, with the source taken from the clone)."""
    folder.mkdir()
    (folder / "sitemap_middleware").symlink_to(REPO / "sitemap_middleware")
    environment = folder / ".tox" / "demo"
    venv.create(environment, with_pip=False, symlinks=True)
    [site_packages] = environment.glob("lib/python*/site-packages")
    installed = {sysconfig.get_path("purelib"), sysconfig.get_path("platlib")}
    (site_packages / "demo_deps.pth").write_text("\n".join(sorted(installed)) + "\n")
    return folder


@pytest.mark.server
def test_the_readmes_validate_line_runs_as_written_from_the_clone(demo, database_path, tmp_path):
    clone = quick_start_clone(tmp_path / "clone")
    # The shell a newcomer has: no virtualenv active, `python` a bare interpreter.
    bare = tmp_path / "bin"
    bare.mkdir()
    for name in ("python", "python3"):
        (bare / name).symlink_to(sys._base_executable)
    port = free_port()
    line = readme_validate_line().replace("127.0.0.1:8000", f"127.0.0.1:{port}")
    with uvicorn_serving(make(demo, database_path, f"http://127.0.0.1:{port}").app, port=port):
        result = subprocess.run(
            line,
            shell=True,
            cwd=clone,
            env={"PATH": os.pathsep.join([str(bare), "/usr/bin", "/bin"]), "HOME": str(tmp_path)},
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
    assert result.returncode == 0, (line, result.stderr[-2000:])
    files, urls = 2 + len(INDEX), len(expected_urls(database_path, f"http://127.0.0.1:{port}"))
    assert result.stdout.splitlines() == [f"checked {files} files, {urls:,} URLs: 0 problems, 0 warnings"]
