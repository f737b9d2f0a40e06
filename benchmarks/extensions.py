"""render, extensions: pages of hreflang groups and of images, ours against the peers.

Part of ``python benchmarks/run.py render`` (its third table). Every renderer writes the same
page: ``n`` products (``common.make_rows``) in three languages (en, de, fr; ``/<lang>`` path
prefixes), each URL with the whole group and x-default, so ``3n`` URLs of four
``xhtml:link`` each; or ``3n`` URLs with five CDN images each. Django has hreflang
(``Sitemap.i18n``) but no images; sitemap.js (Node) has both, and is measured when
``SITEMAP_JS`` names a folder whose ``node_modules`` holds it (``npm install sitemap``)::

    SITEMAP_JS=/tmp/sitemapjs python benchmarks/run.py render --quick

sitemap.js runs in its own Node process (`sitemapjs.mjs`), timing its rounds itself on the
same rows, so its row is not interleaved with the others.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from common import BASE_URL, Row

from sitemap_middleware import Alternate, Image, Sitemaps, Url
from sitemap_middleware.engine import Engine
from sitemap_middleware.plans.measured import measured_page
from sitemap_middleware.protocol.extensions import Extensions
from sitemap_middleware.protocol.render import MAX_URLS
from sitemap_middleware.providers import LoopRunner, Provider, Section

Render = Callable[[], bytes]
LANGUAGES = ("en", "de", "fr")
IMAGES = 5
HERE = Path(__file__).resolve().parent


def _engine(provider: Callable[[], Iterable[object]], extensions: Extensions) -> Render:
    """One measured page (`plans.measured`), as render.py's ``ours_engine`` measures plain URLs."""
    sitemaps = Sitemaps(base_url=BASE_URL)
    engine = Engine(sitemaps.site, on_skip=sitemaps.stats.skip)
    section = Section("products", Provider.wrap("products", provider), MAX_URLS, extensions=extensions)
    runner = LoopRunner()

    def render() -> bytes:
        stream = measured_page(engine, section, 0, runner, "")
        assert stream is not None
        try:
            return b"".join(stream)
        finally:
            stream.close()  # type: ignore[attr-defined]

    return render


def ours_languages(items: list[Row]) -> Render:
    """``languages=["en", "de", "fr"], x_default="en"``: one entry per product."""

    def products() -> Iterable[Url]:
        return (Url(p, lastmod=m, changefreq=c, priority=r) for p, m, c, r in items)

    return _engine(products, Extensions.declare(languages=list(LANGUAGES), x_default="en"))


def ours_alternates(items: list[Row]) -> Render:
    """The same page from ``alternates=``: three `Url` per product, each given the group."""

    def products() -> Iterable[Url]:
        for p, m, c, r in items:
            group = [Alternate(lang, f"/{lang}{p}") for lang in LANGUAGES]
            group.append(Alternate("x-default", f"/en{p}"))
            for alternate in group[:-1]:
                yield Url(alternate.href, lastmod=m, changefreq=c, priority=r, alternates=group)

    return _engine(products, Extensions.declare(["alternates"]))


def image_urls(path: str) -> list[str]:
    slug = path.split("?")[0].rsplit("/", 1)[-1]
    return [f"https://cdn.example.net/img/{slug}/{n}.jpg" for n in range(IMAGES)]


def ours_images(rows: list[Row]) -> Render:
    def products() -> Iterable[Url]:
        return (
            Url(p, lastmod=m, changefreq=c, priority=r, images=[Image(u) for u in image_urls(p)])
            for p, m, c, r in rows
        )

    return _engine(products, Extensions.declare(["images"]))


def django_i18n(products: list[Row]) -> Render:
    """django.contrib.sitemaps with ``i18n``, ``alternates`` and ``x_default`` (Django has no images)."""
    import django
    from django.conf import settings

    if not settings.configured:
        settings.configure(
            DEBUG=False,
            ALLOWED_HOSTS=["shop.example"],
            USE_TZ=True,
            LANGUAGE_CODE="en",
            INSTALLED_APPS=["django.contrib.sitemaps"],
            TEMPLATES=[{"BACKEND": "django.template.backends.django.DjangoTemplates", "APP_DIRS": True}],
        )
        django.setup()
    from django.contrib.sitemaps import Sitemap
    from django.contrib.sitemaps.views import sitemap
    from django.test import RequestFactory
    from django.utils.translation import get_language

    class Products(Sitemap):  # type: ignore[type-arg]
        limit = len(products) * len(LANGUAGES)
        protocol = "https"
        i18n = True
        languages = list(LANGUAGES)  # noqa: RUF012 (Django reads it as a class attribute)
        alternates = True
        x_default = True

        def items(self) -> list[Row]:
            return products

        def location(self, item: Row) -> str:
            return f"/{get_language()}{item[0]}"  # what i18n_patterns' reverse() gives

        def lastmod(self, item: Row) -> Any:
            return item[1]

        def changefreq(self, item: Row) -> str:
            return item[2]

        def priority(self, item: Row) -> float:
            return item[3]

    request = RequestFactory().get("/sitemap.xml", HTTP_HOST="shop.example")

    def render() -> bytes:
        response = sitemap(request, sitemaps={"products": Products})
        response.render()
        return bytes(response.content)

    return render


def sitemapjs_folder() -> Path | None:
    folder = os.environ.get("SITEMAP_JS")
    if not folder or shutil.which("node") is None:
        return None
    path = Path(folder)
    return path if (path / "node_modules" / "sitemap").is_dir() else None


def sitemapjs(items: int, rounds: int) -> dict[str, tuple[float, int]] | None:
    """sitemap.js's median seconds and bytes per mode (``links``, ``images``), or ``None`` if absent."""
    folder = sitemapjs_folder()
    if folder is None:
        return None
    script = HERE / "sitemapjs.mjs"
    done = subprocess.run(
        ["node", str(script), str(items), str(rounds), str(IMAGES)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "NODE_PATH": str(folder / "node_modules")},
        cwd=folder,
    )
    got = json.loads(done.stdout)
    return {mode: (statistics.median(times), size) for mode, (times, size) in got.items()}


def cases(rows: list[Row]) -> tuple[dict[str, Render], int]:
    """The interleaved renderers, and how many URLs each page holds."""
    items = rows[: len(rows) // len(LANGUAGES)]
    urls = len(items) * len(LANGUAGES)
    return {
        "ours: languages=[en, de, fr], x_default (+4 links/URL)": ours_languages(items),
        "ours: alternates= per Url, same page": ours_alternates(items),
        "django.contrib.sitemaps i18n, alternates, x_default": django_i18n(items),
        f"ours: {IMAGES} CDN images/URL": ours_images(rows[:urls]),
    }, urls
