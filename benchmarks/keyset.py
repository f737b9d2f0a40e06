"""keyset: 10M rows of SQLite served by key, beside Django's own sitemap view on the same file.

    python benchmarks/run.py keyset [--quick] [--rows N]

The catalogue (``product``: ``id INTEGER PRIMARY KEY``, ``slug``, ``updated_at``, and an
index on ``updated_at``, as a site adds for the keysets' newest-first walk) is built once
and kept in ``~/.cache/sitemap-middleware-bench/`` (10M rows, about 700 MB; ``--quick`` uses
1M). Pages of 50,000 URLs, so 200 files at 10M. Each contender runs in a fresh
subprocess (its own ``VmHWM``, the kernel's peak RSS) and is asked, in-process, with
identity encoding: the index (cold, then again), then pages 1, 2, a quarter, half, three
quarters of the way and the last, each cold (never asked before). Contenders:

- ``sqlalchemy.keyset``: `sitemap_middleware.sqlalchemy.keyset` over a sync ``Engine``,
  served through ``sitemaps.wsgi`` with the default in-process cache; with and without
  ``lastmod=`` (the plan's per-page ``MAX(updated_at)`` is what the index cold costs).
- ``django.keyset``: `sitemap_middleware.django.keyset` over the Django model, when that
  module exists (see `django_keyset`).
- ``django view``: ``django.contrib.sitemaps.views.index`` and ``views.sitemap`` over the
  same model (``settings.configure`` in-process), paginated by Django with COUNT and OFFSET.
  Its ``get_latest_lastmod`` is an ``aggregate(Max)``: Django's default would build every
  row's object to find the newest (``lastmod`` is a method), minutes at 10M rows.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from common import BASE_URL, bench_env, close_wsgi, machine, mib, proc_status_kib, ratio, table

PAGE_SIZE = 50_000
CACHE_DIR = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "sitemap-middleware-bench"
EPOCH = 1_735_689_600  # 2025-01-01T00:00:00Z


@dataclass(frozen=True)
class Run:
    """One child process: which contender, over which file, asking for which pages."""

    contender: str
    database: str
    rows: int
    pages: list[int]


# -- the catalogue --------------------------------------------------------------------------------


def catalogue(rows: int) -> Path:
    """The SQLite file of ``rows`` products, built once (in SQL: 10M rows in about 30 s)."""
    path = CACHE_DIR / f"keyset-{rows}-indexed.sqlite3"  # files without the index keep their name
    if path.exists():
        return path
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    building = path.with_suffix(".building")
    building.unlink(missing_ok=True)
    print(f"  building {path} ({rows:,} rows, once)", file=sys.stderr)
    db = sqlite3.connect(building)
    try:
        db.executescript(
            "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"
            "CREATE TABLE product (id INTEGER PRIMARY KEY, slug VARCHAR(64) NOT NULL,"
            " updated_at DATETIME NOT NULL);"
        )
        # lastmods out of key order, so a page's newest is not simply its last row
        db.execute(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?) "
            "INSERT INTO product SELECT i, 'item-' || i, datetime(? + (i * 7919) % ?, 'unixepoch') FROM n",
            (rows, EPOCH, rows * 37),
        )
        # What a site declares for each keyset's lastmods (SQLAlchemy: Index; Django: Meta.indexes).
        db.execute("CREATE INDEX product_updated_at ON product (updated_at)")
        db.commit()
    finally:
        db.close()
    building.rename(path)
    return path


def page_numbers(rows: int) -> list[int]:
    last = -(-rows // PAGE_SIZE)
    return sorted({1, 2, max(1, last // 4), max(1, last // 2), max(1, 3 * last // 4), last})


# -- the contenders (each in a child process) ----------------------------------------------------


def _not_found(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    start_response("404 Not Found", [("Content-Type", "text/plain")])
    return [b""]


def wsgi_get(app: Any, path: str) -> int:
    """GET ``path`` (identity), reading the whole body; its size."""
    environ = {
        "REQUEST_METHOD": "GET",
        "PATH_INFO": path,
        "SCRIPT_NAME": "",
        "SERVER_NAME": "shop.example",
        "SERVER_PORT": "443",
        "wsgi.url_scheme": "https",
        "HTTP_ACCEPT_ENCODING": "identity",
    }
    status: list[str] = []
    result = app(environ, lambda s, h, exc_info=None: status.append(s))
    try:
        size = sum(len(chunk) for chunk in result)
    finally:
        close_wsgi(result)
    if not status[0].startswith("200"):
        raise RuntimeError(f"{path} answered {status[0]}")
    return size


def sqlalchemy_app(database: str, lastmod: bool) -> Any:
    from sqlalchemy import Column, DateTime, Index, Integer, MetaData, String, Table, create_engine, select

    from sitemap_middleware import Sitemaps, Url
    from sitemap_middleware.sqlalchemy import keyset

    product = Table(
        "product",
        MetaData(),
        Column("id", Integer, primary_key=True),
        Column("slug", String(64)),
        Column("updated_at", DateTime),
        Index("product_updated_at", "updated_at"),
    )
    engine = create_engine(f"sqlite:///{database}")
    sitemaps = Sitemaps(base_url=BASE_URL, page_size=PAGE_SIZE)
    source = keyset(
        engine,
        select(product.c.id, product.c.slug, product.c.updated_at),
        key=product.c.id,
        entry=lambda row: Url(f"/p/{row.slug}", lastmod=row.updated_at),
        lastmod=product.c.updated_at if lastmod else None,
    )
    sitemaps.add_provider("products", source)
    return sitemaps.wsgi(_not_found)


def django_setup(database: str) -> type:
    """Django configured in this process over ``database``; the ``Product`` model."""
    import django
    from django.conf import settings
    from django.db import models

    settings.configure(
        DEBUG=False,
        ALLOWED_HOSTS=["*"],
        USE_TZ=True,
        INSTALLED_APPS=["django.contrib.contenttypes", "django.contrib.sitemaps"],
        DATABASES={
            "default": {"ENGINE": "django.db.backends.sqlite3", "NAME": database, "CONN_MAX_AGE": None}
        },
        TEMPLATES=[{"BACKEND": "django.template.backends.django.DjangoTemplates", "APP_DIRS": True}],
        ROOT_URLCONF=__name__,
    )
    django.setup()

    class Product(models.Model):
        slug = models.CharField(max_length=64)
        updated_at = models.DateTimeField()

        class Meta:
            app_label = "bench"
            db_table = "product"
            indexes = (models.Index(fields=["updated_at"], name="product_updated_at"),)

    return Product


urlpatterns: list[Any] = []  # ROOT_URLCONF of the Django contenders: filled by `django_view`


def django_view(database: str) -> Any:
    """Django's own sitemap views over the model, as a callable ``(path) -> body size``."""
    Product = django_setup(database)
    from django.contrib.sitemaps import Sitemap, views
    from django.db.models import Max
    from django.test import RequestFactory
    from django.urls import path

    class ProductSitemap(Sitemap):  # type: ignore[type-arg]
        limit = PAGE_SIZE

        def items(self) -> Any:
            return Product.objects.order_by("id")

        def location(self, item: Any) -> str:
            return f"/p/{item.slug}"

        def lastmod(self, item: Any) -> datetime:
            return item.updated_at  # type: ignore[no-any-return]

        def get_latest_lastmod(self) -> datetime | None:
            return Product.objects.aggregate(newest=Max("updated_at"))["newest"]  # type: ignore[no-any-return]

    sitemaps = {"products": ProductSitemap}
    urlpatterns[:] = [
        path("sitemap.xml", views.index, {"sitemaps": sitemaps}),
        path(
            "sitemap-<section>.xml",
            views.sitemap,
            {"sitemaps": sitemaps},
            name="django.contrib.sitemaps.views.sitemap",
        ),
    ]
    factory = RequestFactory()

    def get(path: str) -> int:
        if path == "/sitemap-index.xml":
            response = views.index(factory.get("/sitemap.xml"), sitemaps)
        else:
            number = int(path.rsplit("-", 1)[1].split(".")[0])
            response = views.sitemap(factory.get(f"/sitemap-products.xml?p={number}"), sitemaps, "products")
        response.render()
        if response.status_code != 200:
            raise RuntimeError(f"{path} answered {response.status_code}")
        return len(response.content)

    return get


def django_keyset(model: type) -> Any | None:
    """[django.keyset row] `sitemap_middleware.django.keyset` over ``model``.

    Pages are pk ranges planned by one query (a recursive seek from each page's first key
    to the next, and each page's newest updated_at) and read by key in chunks of 2,000
    rows, never OFFSET.
    """
    from sitemap_middleware import Url
    from sitemap_middleware.django import keyset

    return keyset(
        model._default_manager.all(),  # type: ignore[attr-defined]
        entry=lambda p: Url(f"/p/{p.slug}", lastmod=p.updated_at),
        lastmod="updated_at",
    )


def contender(run: Run) -> Any:
    """``(path) -> body size`` for the run's contender, or ``None`` when it is not available."""
    if run.contender == "sqlalchemy.keyset":
        app = sqlalchemy_app(run.database, lastmod=True)
    elif run.contender == "sqlalchemy.keyset, no lastmod":
        app = sqlalchemy_app(run.database, lastmod=False)
    elif run.contender == "django view":
        return django_view(run.database)
    elif run.contender == "django.keyset":
        source = django_keyset(django_setup(run.database))
        if source is None:
            return None
        from sitemap_middleware import Sitemaps

        sitemaps = Sitemaps(base_url=BASE_URL, page_size=PAGE_SIZE)
        sitemaps.add_provider("products", source)
        app = sitemaps.wsgi(_not_found)
    else:
        raise ValueError(run.contender)
    return lambda path: wsgi_get(app, path)


def child(run: Run) -> dict[str, Any] | None:
    get = contender(run)
    if get is None:
        return None
    result: dict[str, Any] = {"baseline_kib": proc_status_kib("VmHWM")}
    for label in ("index", "index again"):
        start = time.perf_counter()
        get("/sitemap-index.xml")
        result[label] = time.perf_counter() - start
    result["after_index_kib"] = proc_status_kib("VmHWM")
    result["pages"] = {}
    for number in run.pages:
        start = time.perf_counter()
        size = get(f"/sitemap-products-{number}.xml")
        elapsed = time.perf_counter() - start
        peak = proc_status_kib("VmHWM")
        result["pages"][str(number)] = {"seconds": elapsed, "bytes": size, "peak_kib": peak}
    return result


# -- the parent ---------------------------------------------------------------------------------

CONTENDERS = ("sqlalchemy.keyset", "sqlalchemy.keyset, no lastmod", "django.keyset", "django view")


def spawn(run: Run) -> dict[str, Any] | None:
    argv = [sys.executable, str(Path(__file__).resolve()), "--child", json.dumps(asdict(run))]
    done = subprocess.run(argv, capture_output=True, text=True, env=bench_env(), check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{run.contender} failed:\n{done.stderr[-3000:]}")
    print(f"  {run.contender}: done", file=sys.stderr)
    result: dict[str, Any] | None = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def medians(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Each figure's median over the runs of one contender (peaks: the highest)."""
    merged: dict[str, Any] = {
        key: statistics.median(r[key] for r in results) for key in ("index", "index again")
    }
    merged["pages"] = {
        number: {
            "seconds": statistics.median(r["pages"][number]["seconds"] for r in results),
            "peak_kib": max(r["pages"][number]["peak_kib"] for r in results),
        }
        for number in results[0]["pages"]
    }
    return merged


def report(rows: int, pages: list[int], results: dict[str, dict[str, Any]], repeat: int) -> None:
    first, last = str(pages[0]), str(pages[-1])
    print(f"### keyset: {rows:,} rows of SQLite, pages of {PAGE_SIZE:,} ({pages[-1]} files)\n")
    print(f"Medians of {repeat} fresh processes per contender; peak RSS: the highest.\n")
    print(f"{machine()}\n")
    summary = []
    for name, result in results.items():
        page_1, page_n = result["pages"][first]["seconds"], result["pages"][last]["seconds"]
        summary.append(
            [
                name,
                f"{result['index'] * 1000:,.0f}",
                f"{result['index again'] * 1000:,.1f}",
                f"{page_1 * 1000:,.0f}",
                f"{page_n * 1000:,.0f}",
                ratio(page_n, page_1),
                mib(result["pages"][first]["peak_kib"]),
                mib(result["pages"][last]["peak_kib"]),
            ]
        )
    headers = [
        "contender",
        "index cold, ms",
        "index again, ms",
        f"page {first} cold, ms",
        f"page {last} cold, ms",
        f"page {last} / page {first}",
        f"peak RSS after page {first}",
        f"peak RSS after page {last}",
    ]
    print(table(headers, summary))
    print("\nEvery page asked, cold, in ms (peak RSS after it):\n")
    print(
        table(
            ["contender", *(f"page {n}" for n in pages)],
            [
                [
                    name,
                    *(
                        f"{result['pages'][str(n)]['seconds'] * 1000:,.0f} "
                        f"({result['pages'][str(n)]['peak_kib'] / 1024:,.0f} MiB)"
                        for n in pages
                    ),
                ]
                for name, result in results.items()
            ],
        )
    )
    missing = [name for name in CONTENDERS if name not in results]
    if missing:
        print(f"\nNot measured (not available in this checkout): {', '.join(missing)}")


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="run.py keyset", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="1M rows instead of 10M")
    parser.add_argument("--rows", type=int, help="rows in the catalogue (overrides --quick)")
    parser.add_argument("--repeat", type=int, default=3, help="fresh processes per contender (medians)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(Run(**json.loads(args.child)))))
        return
    rows = args.rows or (1_000_000 if args.quick else 10_000_000)
    database = catalogue(rows)
    pages = page_numbers(rows)
    results: dict[str, dict[str, Any]] = {}
    for name in CONTENDERS:
        runs = [spawn(Run(name, str(database), rows, pages)) for _ in range(args.repeat)]
        if runs[0] is not None:
            results[name] = medians([r for r in runs if r is not None])
    report(rows, pages, results, args.repeat)
    print(f"\n(measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC)", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
