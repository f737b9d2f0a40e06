"""The native Django setup, served by real servers: ``MIDDLEWARE``, ``SITEMAPS`` and ``manage.py sitemaps``.

The project of `tests.django.test_project` with nothing wrapped by hand: its ``wsgi.py``
and ``asgi.py`` are Django's own, ``settings.py`` lists
``sitemap_middleware.django.SitemapMiddleware`` in ``MIDDLEWARE``, names the `Sitemaps`
in ``SITEMAPS`` and installs ``sitemap_middleware.django`` for its management command.
gunicorn (a sync middleware stack) and uvicorn (an async one) serve it, each on SQLite
and on PostgreSQL (a throwaway server, `tests.postgres_server`, a database per run).
"""

from __future__ import annotations

import gzip
import os
import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from ..servers import Server
from ..xsd import locs, validate
from .test_project import PROJECT, TIMEOUT, listed, post, stocked

pytestmark = pytest.mark.server

REPO = Path(__file__).resolve().parents[2]

NATIVE = {
    **{
        name: text for name, text in PROJECT.items() if name not in ("myproject/wsgi.py", "myproject/asgi.py")
    },
    "myproject/settings.py": """
        import os

        SECRET_KEY = "test-only"
        DEBUG = False
        ALLOWED_HOSTS = ["127.0.0.1", "localhost", "shop.example"]
        WSGI_APPLICATION = "myproject.wsgi.application"
        INSTALLED_APPS = ["sitemap_middleware.django", "shop"]
        MIDDLEWARE = [
            "django.middleware.security.SecurityMiddleware",
            "sitemap_middleware.django.SitemapMiddleware",
            "django.middleware.common.CommonMiddleware",
        ]
        ROOT_URLCONF = "myproject.urls"
        if os.environ.get("SHOP_PG"):
            host, port, name = os.environ["SHOP_PG"].split(":")
            DATABASES = {"default": {"ENGINE": "django.db.backends.postgresql", "HOST": host,
                                     "PORT": port, "USER": "postgres", "NAME": name}}
        else:
            DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": os.environ["SHOP_DB"]}}
        DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
        USE_TZ = True
        SITEMAP_BASE_URL = "https://shop.example"
        SITEMAPS = "myproject.sitemaps.sitemaps"
    """,
    "myproject/urls.py": PROJECT["myproject/urls.py"].replace(
        "urlpatterns = [",
        'urlpatterns = [\n            path("robots.txt", views.robots),',
    ),
    "shop/views.py": PROJECT["shop/views.py"]
    + """

        def robots(request):
            return HttpResponse("User-agent: *\\nDisallow: /admin/\\n", content_type="text/plain")
    """,
    # Django's own entry points, untouched: the middleware is in settings.
    "myproject/wsgi.py": """
        import os

        from django.core.wsgi import get_wsgi_application

        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "myproject.settings")
        application = get_wsgi_application()
    """,
    "myproject/asgi.py": """
        import os

        from django.core.asgi import get_asgi_application

        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "myproject.settings")
        application = get_asgi_application()
    """,
}


class Project:
    """The project in ``home`` on one database: ``SHOP_DB`` (SQLite) or ``SHOP_PG`` (PostgreSQL)."""

    def __init__(self, home: Path, database: dict[str, str]) -> None:
        self.home = home
        self.env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(home), str(REPO), os.environ.get("PYTHONPATH")])),
            "DJANGO_SETTINGS_MODULE": "myproject.settings",
            **database,
        }

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "manage.py", *args]
        return subprocess.run(
            command, cwd=self.home, env=self.env, capture_output=True, text=True, timeout=TIMEOUT
        )

    def manage(self, *args: str) -> str:
        done = self.run(*args)
        assert done.returncode == 0, done.stderr
        return done.stdout

    def shell(self, code: str) -> None:
        self.manage("shell", "-c", textwrap.dedent(code))


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("native")
    for name, text in NATIVE.items():
        (home / name).parent.mkdir(parents=True, exist_ok=True)
        (home / name).write_text(textwrap.dedent(text).lstrip())
    Project(home, {"SHOP_DB": str(home / "unused.sqlite3")}).manage("makemigrations", "shop")
    return home


def _database(request: pytest.FixtureRequest, project: Path, name: str) -> dict[str, str]:
    if request.param.endswith("sqlite"):
        return {"SHOP_DB": str(project / f"{name}.sqlite3")}
    import psycopg

    url = urlsplit(request.getfixturevalue("postgres_url"))
    with psycopg.connect(
        f"host={url.hostname} port={url.port} user=postgres dbname=postgres", autocommit=True
    ) as db:
        db.execute(f'DROP DATABASE IF EXISTS "{name}"')
        db.execute(f'CREATE DATABASE "{name}"')
    return {"SHOP_PG": f"{url.hostname}:{url.port}:{name}"}


@pytest.fixture(
    scope="module",
    params=["gunicorn-sqlite", "uvicorn-sqlite", "gunicorn-postgres", "uvicorn-postgres"],
)
def site(request: pytest.FixtureRequest, project: Path) -> Iterator[tuple[Server, Project]]:
    """The project served by gunicorn (sync stack) or uvicorn (async stack), on a fresh database."""
    kind = request.param
    shop = Project(project, _database(request, project, kind.replace("-", "_")))
    shop.manage("migrate")
    listener = socket.create_server(("127.0.0.1", 0))
    fd = listener.fileno()
    if kind.startswith("gunicorn"):
        command = [
            "gunicorn",
            "--bind",
            f"fd://{fd}",
            "--workers",
            "1",
            "--threads",
            "4",
            "myproject.wsgi:application",
        ]
    else:
        command = ["uvicorn", "--fd", str(fd), "--log-level", "warning", "myproject.asgi:application"]
    server = subprocess.Popen(
        [sys.executable, "-m", *command], cwd=project, env=shop.env, pass_fds=[fd], stderr=subprocess.PIPE
    )
    try:
        yield Server(listener.getsockname()[1], kind), shop
    finally:
        server.terminate()
        _, errors = server.communicate(timeout=TIMEOUT)
        listener.close()
        assert b"Traceback" not in errors, errors.decode()


def test_the_middleware_serves_the_sections_and_leaves_the_app_its_routes(site):
    server, shop = site
    for slug in ("alpha", "beta", "gamma"):
        post(server, f"/admin/products/{slug}/save")
    shop.shell("from shop.models import Post; Post.objects.get_or_create(slug='hello')")
    assert {"/p/alpha/", "/p/beta/", "/p/gamma/"} <= set(listed(server, "products"))
    assert "/blog/hello/" in listed(server, "blog")
    assert server.fetch("/p/alpha/") == b"alpha"
    assert server.get("/p/missing/").status == 404
    assert server.get("/sitemap-nosuch-1.xml").status == 404  # not ours: the app's 404


def test_robots_txt_is_the_apps_own_with_our_sitemap_line(site):
    server, _ = stocked(site)
    lines = server.fetch("/robots.txt").decode().splitlines()
    assert "Disallow: /admin/" in lines  # the app's own view, reached through get_response
    assert "Sitemap: https://shop.example/sitemap-index.xml" in lines


def test_a_page_streams_as_the_adapters_answer_it(site):
    server, _ = stocked(site)
    server.fetch("/sitemap-index.xml")
    server.fetch("/sitemap-products-1.xml")  # rendered and stored: the next answer has its ETag
    got = server.get("/sitemap-products-1.xml", {"Accept-Encoding": "gzip"})
    assert got.status == 200
    assert got.headers["Content-Encoding"] == "gzip"
    assert "https://shop.example/p/alpha/" in locs(validate(gzip.decompress(got.body)))
    again = server.get(
        "/sitemap-products-1.xml", {"Accept-Encoding": "gzip", "If-None-Match": got.headers["ETag"]}
    )
    assert again.status == 304
    assert "Content-Type" not in again.headers


def test_a_save_through_the_app_shows_at_once(site):
    server, _ = stocked(site)
    assert "/p/fresh/" not in listed(server, "products")
    post(server, "/admin/products/fresh/save")
    assert "/p/fresh/" in listed(server, "products")
    post(server, "/admin/products/fresh/delete")
    assert "/p/fresh/" not in listed(server, "products")


def test_manage_py_sitemaps_export_validate_and_refresh(site, tmp_path):
    server, shop = stocked(site)
    out = shop.manage("sitemaps", "refresh")
    assert "refreshed 1 page of products" in out or "pages of products" in out
    assert "of blog" in out
    written = shop.manage("sitemaps", "export", "--out", str(tmp_path / "public"))
    assert written.startswith("wrote ")
    assert (tmp_path / "public" / "sitemap-index.xml").is_file()
    checked = shop.manage(
        "sitemaps",
        "validate",
        str(tmp_path / "public" / "sitemap-index.xml"),
        "--base-url",
        "https://shop.example/",
    )
    assert "0 problems" in checked
    live = shop.run("sitemaps", "validate", f"http://127.0.0.1:{server.port}/robots.txt")
    # The live tree names the public origin, unreachable from here: validate says so, exit 2.
    assert live.returncode in (1, 2) and "checked" in live.stdout


def test_manage_py_sitemaps_validate_without_a_target_audits_the_project_in_process(site):
    _, shop = stocked(site)
    checked = shop.run("sitemaps", "validate", "--urls", "all")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    summary = checked.stdout.strip().splitlines()[-1]
    assert "0 problems" in summary and " requested)" in summary  # every listed URL asked of the app
    assert int(summary.split("(")[1].split()[0].replace(",", "")) >= 2


def test_manage_py_sitemaps_refresh_of_an_unknown_section_fails(site):
    _, shop = site
    done = shop.run("sitemaps", "refresh", "nosuch")
    assert done.returncode == 2
    assert "no section named 'nosuch'" in done.stderr
