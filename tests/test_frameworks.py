"""End to end through real apps: Flask, Starlette, FastAPI and a Django project on WSGI and ASGI.

Each app of `tests.apps` is wrapped the way its users wrap it and driven in-process by a
real test client (werkzeug's or Flask's for WSGI, Starlette's for ASGI). Bodies are read
as they crossed the wire, undecoded, and every sitemap document is validated against the
official XSD and parsed back.
"""

from __future__ import annotations

import gzip
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol
from wsgiref.validate import validator

import pytest
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.gzip import GZipMiddleware
from starlette.routing import Mount
from starlette.testclient import TestClient
from werkzeug.middleware.dispatcher import DispatcherMiddleware
from werkzeug.test import Client as WerkzeugClient

from sitemap_middleware import SitemapASGIMiddleware

from . import apps
from .crawl import (
    BASE,
    PRODUCT_LOCS,
    PRODUCTS_PAGE_SIZE,
    ROBOTS_MERGED,
    crawl,
    gunzip_locs,
    robots_lines,
    shop_index_locs,
    shop_sitemaps,
)
from .xsd import locs, validate

FRAMEWORKS = [
    "flask",
    "starlette",
    "starlette-middleware",
    "fastapi",
    "fastapi-middleware",
    "django-wsgi",
    "django-asgi",
]
DJANGO_OVERRIDES: dict[str, Any] = {
    "DEBUG": False,
    "ALLOWED_HOSTS": ["localhost", "testserver"],
    "ROOT_URLCONF": apps.__name__,
    "MIDDLEWARE": [
        "django.middleware.security.SecurityMiddleware",
        "django.middleware.common.CommonMiddleware",
    ],
}


class Headers(Protocol):
    """Case-insensitive response headers: werkzeug's or httpx's."""

    def __getitem__(self, name: str, /) -> str: ...

    def __contains__(self, name: str, /) -> bool: ...


@dataclass
class Got:
    status: int
    headers: Headers
    body: bytes  # as on the wire: a Content-Encoding is not undone


Get = Callable[..., Got]


@dataclass
class Served:
    framework: str  # what the app's own answers name it
    get: Get


def werkzeug_get(client: WerkzeugClient) -> Get:
    def get(path: str, headers: dict[str, str] | None = None) -> Got:
        response = client.get(path, headers=headers or {})
        try:
            return Got(response.status_code, response.headers, response.get_data())
        finally:
            response.close()

    return get


def httpx_get(client: TestClient) -> Get:
    def get(path: str, headers: dict[str, str] | None = None) -> Got:
        # httpx would ask for gzip and decode it; ask for what the test means instead.
        headers = {"accept-encoding": "identity", **(headers or {})}
        with client.stream("GET", path, headers=headers) as response:
            return Got(response.status_code, response.headers, b"".join(response.iter_raw()))

    return get


def ok(get: Get) -> Callable[[str], bytes]:
    """A fetch for `crawl`: the body of a 200 response."""

    def fetch(path: str) -> bytes:
        got = get(path)
        assert got.status == 200, f"GET {path}: {got.status} {got.body[:200]!r}"
        return got.body

    return fetch


@pytest.fixture(scope="module")
def django_project() -> Iterator[None]:
    """A minimal Django project (no database) whose ROOT_URLCONF is `tests.apps`.

    Settings may be configured once per process, and other modules use Django too: the
    process's settings come from `tests.djangosite.config`, and this project's own values
    are applied with ``override_settings`` and removed after this module.
    """
    from django.test.utils import override_settings

    from .djangosite.config import configure

    configure()
    with override_settings(**DJANGO_OVERRIDES):
        yield


@pytest.fixture(params=FRAMEWORKS)
def served(request: pytest.FixtureRequest) -> Iterator[Served]:
    """The shop tree (`crawl.shop_sitemaps`) in front of one real framework app."""
    sitemaps, _ = shop_sitemaps()
    framework, _, style = request.param.partition("-")
    if framework == "flask":
        flask_app = apps.flask_app()
        flask_app.wsgi_app = sitemaps.wsgi(flask_app.wsgi_app)  # type: ignore[method-assign]
        yield Served(framework, werkzeug_get(flask_app.test_client()))
    elif framework in ("starlette", "fastapi"):
        build = apps.starlette_app if framework == "starlette" else apps.fastapi_app
        if style == "middleware":
            app: Any = build(middleware=[Middleware(SitemapASGIMiddleware, sitemaps=sitemaps)])
        else:
            app = sitemaps.asgi(build())
        with TestClient(app) as client:  # runs the lifespan, which must pass through us
            yield Served(framework, httpx_get(client))
    else:
        request.getfixturevalue("django_project")
        if style == "wsgi":
            from django.core.wsgi import get_wsgi_application

            wsgi_app = sitemaps.wsgi(get_wsgi_application())
            yield Served(framework, werkzeug_get(WerkzeugClient(validator(wsgi_app))))
        else:
            from django.core.asgi import get_asgi_application

            # Not entered as a context manager: Django's ASGI app refuses lifespan scopes.
            client = TestClient(sitemaps.asgi(get_asgi_application()))
            try:
                yield Served(framework, httpx_get(client))
            finally:
                client.close()


def test_app_route_still_answers(served: Served) -> None:
    got = served.get("/")
    assert (got.status, got.body) == (200, f"{served.framework} home".encode())


def test_app_not_found_handler_answers_unknown_paths(served: Served) -> None:
    got = served.get("/no/such/page")
    assert (got.status, got.body) == (404, f"{served.framework} 404".encode())


def test_unregistered_section_sitemap_is_served_by_the_app(served: Served) -> None:
    got = served.get("/sitemap-foo-1.xml")
    assert (got.status, got.body) == (200, apps.APP_SITEMAP)
    assert locs(validate(got.body)) == apps.APP_SITEMAP_LOCS


def test_robots_txt_is_the_apps_own_plus_our_sitemap_line(served: Served) -> None:
    got = served.get("/robots.txt")
    assert got.status == 200
    assert robots_lines(got.body) == ROBOTS_MERGED


def test_index_lists_every_page_of_every_section(served: Served) -> None:
    got = served.get("/sitemap-index.xml")
    assert got.status == 200
    assert got.headers["content-type"] == "application/xml; charset=utf-8"
    assert locs(validate(got.body)) == shop_index_locs()


def test_pages_hold_exactly_the_provider_urls(served: Served) -> None:
    _, expected = shop_sitemaps()
    tree = crawl(ok(served.get))
    assert [len(page) for page in tree.pages.values()] == [3, 50, 50, 20]
    assert tree.url_count == len(expected)
    assert tree.urls == expected


@pytest.mark.parametrize("path", ["/sitemap-index.xml", "/sitemap-products-2.xml"], ids=["index", "page"])
def test_gz_file_is_the_same_document_gzipped(served: Served, path: str) -> None:
    gz = served.get(path + ".gz")
    assert gz.status == 200
    assert gz.headers["content-type"] == "application/gzip"
    assert "content-encoding" not in gz.headers  # a gzip file, not a gzip-encoded XML response
    assert gunzip_locs(gz.body) == locs(validate(served.get(path).body))


def test_page_is_gzip_encoded_when_the_client_accepts_it(served: Served) -> None:
    got = served.get("/sitemap-products-1.xml", headers={"accept-encoding": "gzip"})
    assert got.status == 200
    assert got.headers["content-encoding"] == "gzip"
    assert got.headers["content-type"] == "application/xml; charset=utf-8"
    assert locs(validate(gzip.decompress(got.body))) == PRODUCT_LOCS[:PRODUCTS_PAGE_SIZE]


@pytest.mark.parametrize("gzip_first", [True, False], ids=["gzip-outside-us", "gzip-inside-us"])
def test_starlette_gzip_middleware_does_not_encode_our_page_twice(gzip_first: bool) -> None:
    sitemaps, _ = shop_sitemaps()
    stack = [Middleware(GZipMiddleware, minimum_size=1), Middleware(SitemapASGIMiddleware, sitemaps=sitemaps)]
    app = apps.starlette_app(middleware=stack if gzip_first else stack[::-1])
    with TestClient(app) as client:
        got = httpx_get(client)("/sitemap-products-1.xml", headers={"accept-encoding": "gzip"})
    assert got.headers["content-encoding"] == "gzip"
    assert locs(validate(gzip.decompress(got.body))) == PRODUCT_LOCS[:PRODUCTS_PAGE_SIZE]


# Mounted below a prefix: paths match below it, and the URLs we emit include it.


@pytest.fixture(params=["starlette-mount", "werkzeug-dispatcher"])
def mounted(request: pytest.FixtureRequest) -> Iterator[Served]:
    """The shop tree in front of an app mounted at ``/shop`` of an outer app."""
    sitemaps, _ = shop_sitemaps()
    if request.param == "starlette-mount":
        outer = Starlette(routes=[Mount("/shop", app=sitemaps.asgi(apps.starlette_app()))])
        with TestClient(outer) as client:
            yield Served("starlette", httpx_get(client))
    else:
        inner = apps.flask_app()
        inner.wsgi_app = sitemaps.wsgi(inner.wsgi_app)  # type: ignore[method-assign]
        dispatcher = DispatcherMiddleware(apps.flask_app(), {"/shop": inner})
        yield Served("flask", werkzeug_get(WerkzeugClient(validator(dispatcher))))


def test_mounted_index_lists_pages_under_the_mount(mounted: Served) -> None:
    got = mounted.get("/shop/sitemap-index.xml")
    assert got.status == 200
    assert locs(validate(got.body)) == shop_index_locs(f"{BASE}/shop")


def test_mounted_pages_are_served_under_the_mount(mounted: Served) -> None:
    _, expected = shop_sitemaps()
    tree = crawl(ok(mounted.get), index="/shop/sitemap-index.xml")
    # A provider's paths are the app's own, so they live below the mount point too.
    assert tree.urls == {url.replace(BASE, f"{BASE}/shop", 1) for url in expected}


def test_mounted_robots_txt_names_the_index_under_the_mount(mounted: Served) -> None:
    got = mounted.get("/shop/robots.txt")
    assert got.status == 200
    assert robots_lines(got.body)[-1] == f"Sitemap: {BASE}/shop/sitemap-index.xml"


def test_mounted_app_route_still_answers(mounted: Served) -> None:
    got = mounted.get("/shop/")
    assert (got.status, got.body) == (200, f"{mounted.framework} home".encode())
