"""A Django project laid out the usual way, served by real servers through its own entry points.

The project (`PROJECT`: a settings module, an app with models, ``myproject/sitemaps.py``
holding the `Sitemaps`, ``wsgi.py`` and ``asgi.py`` wrapping Django's handlers) is written
to a temporary directory, its SQLite database made with ``manage.py migrate``, and served
by gunicorn (``myproject.wsgi:application``) and uvicorn (``myproject.asgi:application``)
in a process of their own. Rows saved or deleted by the app's own views show at once (the
``post_save``/``post_delete`` receivers invalidate the section); rows changed by another
process show through the section's ``version``.
"""

from __future__ import annotations

import http.client
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
from ..xsd import lastmods, locs, validate

pytestmark = pytest.mark.server

REPO = Path(__file__).resolve().parents[2]
TIMEOUT = 60  # seconds for manage.py and for a server to exit

PROJECT = {
    "manage.py": """
        import os
        import sys

        if __name__ == "__main__":
            os.environ.setdefault("DJANGO_SETTINGS_MODULE", "myproject.settings")
            from django.core.management import execute_from_command_line

            execute_from_command_line(sys.argv)
    """,
    "myproject/__init__.py": "",
    "myproject/settings.py": """
        import os

        SECRET_KEY = "test-only"
        DEBUG = False
        ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
        INSTALLED_APPS = ["shop"]
        MIDDLEWARE = ["django.middleware.common.CommonMiddleware"]
        ROOT_URLCONF = "myproject.urls"
        DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": os.environ["SHOP_DB"]}}
        DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
        USE_TZ = True
        SITEMAP_BASE_URL = "https://shop.example"  # the canonical origin, never the Host header
    """,
    "myproject/urls.py": """
        from django.urls import path

        from shop import views

        urlpatterns = [
            path("p/<slug:slug>/", views.product, name="product"),
            path("blog/<slug:slug>/", views.post, name="post"),
            # The shop's back office, reduced to what the test needs: a save and a delete.
            path("admin/products/<slug:slug>/save", views.save_product),
            path("admin/products/<slug:slug>/delete", views.delete_product),
        ]
    """,
    "myproject/sitemaps.py": """
        from django.conf import settings
        from django.db.models import Count, Max
        from django.db.models.signals import post_delete, post_save
        from django.dispatch import receiver

        from sitemap_middleware import Sitemaps
        from sitemap_middleware.django import from_sitemap, keyset
        from shop.models import Post, Product
        from shop.sitemaps import BlogSitemap

        sitemaps = Sitemaps(base_url=settings.SITEMAP_BASE_URL)
        sitemaps.add_provider("products", keyset(Product.objects.filter(published=True)), page_size=2)
        sitemaps.add_provider(
            "blog",
            from_sitemap(BlogSitemap(), lastmod="updated_at"),
            # Posts are written by another process (a management command): a version sees that.
            version=lambda: tuple(Post.objects.aggregate(Count("pk"), Max("updated_at")).values()),
        )


        @receiver([post_save, post_delete], sender=Product, dispatch_uid="sitemaps:products")
        def refresh_products(sender, **kwargs):
            sitemaps.invalidate("products")
    """,
    "myproject/wsgi.py": """
        import os

        from django.core.wsgi import get_wsgi_application

        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "myproject.settings")
        django_application = get_wsgi_application()  # sets Django up: models may be imported now

        from myproject.sitemaps import sitemaps  # noqa: E402

        application = sitemaps.wsgi(django_application)
    """,
    "myproject/asgi.py": """
        import os

        from django.core.asgi import get_asgi_application

        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "myproject.settings")
        django_application = get_asgi_application()

        from myproject.sitemaps import sitemaps  # noqa: E402

        application = sitemaps.asgi(django_application)
    """,
    "shop/__init__.py": "",
    "shop/models.py": """
        from django.db import models
        from django.urls import reverse


        class Product(models.Model):
            slug = models.SlugField(unique=True)
            published = models.BooleanField(default=True)
            updated_at = models.DateTimeField(auto_now=True)

            def get_absolute_url(self):
                return reverse("product", args=[self.slug])


        class Post(models.Model):
            slug = models.SlugField(unique=True)
            updated_at = models.DateTimeField(auto_now=True)
    """,
    "shop/sitemaps.py": """
        from django.contrib.sitemaps import Sitemap
        from django.urls import reverse

        from shop.models import Post


        class BlogSitemap(Sitemap):
            changefreq = "weekly"

            def items(self):
                return Post.objects.order_by("pk")

            def location(self, post):
                return reverse("post", args=[post.slug])

            def lastmod(self, post):
                return post.updated_at
    """,
    "shop/views.py": """
        from django.http import HttpResponse
        from django.shortcuts import get_object_or_404
        from django.views.decorators.csrf import csrf_exempt
        from django.views.decorators.http import require_POST

        from shop.models import Post, Product


        def product(request, slug):
            return HttpResponse(get_object_or_404(Product, slug=slug).slug)


        def post(request, slug):
            return HttpResponse(get_object_or_404(Post, slug=slug).slug)


        @csrf_exempt
        @require_POST
        def save_product(request, slug):
            product = Product.objects.filter(slug=slug).first() or Product(slug=slug)
            product.published = request.POST.get("published", "1") == "1"
            product.save()
            return HttpResponse(status=204)


        @csrf_exempt
        @require_POST
        def delete_product(request, slug):
            get_object_or_404(Product, slug=slug).delete()
            return HttpResponse(status=204)
    """,
}


class Project:
    """The project in ``home``, with its database at ``database``."""

    def __init__(self, home: Path, database: Path) -> None:
        self.home = home
        self.env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(home), str(REPO), os.environ.get("PYTHONPATH")])),
            "SHOP_DB": str(database),
            "DJANGO_SETTINGS_MODULE": "myproject.settings",
        }

    def manage(self, *args: str) -> None:
        command = [sys.executable, "manage.py", *args]
        done = subprocess.run(
            command, cwd=self.home, env=self.env, capture_output=True, text=True, timeout=TIMEOUT
        )
        assert done.returncode == 0, done.stderr

    def shell(self, code: str) -> None:
        """Run ``code`` with the ORM in another process, as a management command would."""
        self.manage("shell", "-c", textwrap.dedent(code))


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("project")
    for name, text in PROJECT.items():
        (home / name).parent.mkdir(parents=True, exist_ok=True)
        (home / name).write_text(textwrap.dedent(text).lstrip())
    Project(home, home / "unused.sqlite3").manage("makemigrations", "shop")
    return home


@pytest.fixture(scope="module", params=["gunicorn-wsgi", "uvicorn-asgi"])
def site(request: pytest.FixtureRequest, project: Path) -> Iterator[tuple[Server, Project]]:
    """The project served by a real server in its own process, on a fresh database."""
    kind = request.param
    database = project / f"{kind}.sqlite3"
    shop = Project(project, database)
    shop.manage("migrate")
    listener = socket.create_server(("127.0.0.1", 0))
    fd = listener.fileno()
    if kind == "gunicorn-wsgi":
        command = ["gunicorn", "--bind", f"fd://{fd}", "--workers", "1", "myproject.wsgi:application"]
    else:
        command = ["uvicorn", "--fd", str(fd), "--log-level", "warning", "myproject.asgi:application"]
    command = [sys.executable, "-m", *command]
    # Requests queue on the listening socket until the server accepts them: no port to wait for.
    server = subprocess.Popen(command, cwd=project, env=shop.env, pass_fds=[fd], stderr=subprocess.PIPE)
    try:
        yield Server(listener.getsockname()[1], kind), shop
    finally:
        server.terminate()
        _, errors = server.communicate(timeout=TIMEOUT)
        listener.close()
        assert b"Traceback" not in errors, errors.decode()


def listed(server: Server, section: str) -> dict[str, str | None]:
    """Every URL of ``section`` (path -> lastmod), found through the index."""
    index = validate(server.fetch("/sitemap-index.xml"))
    found: dict[str, str | None] = {}
    for loc in locs(index):
        if urlsplit(loc).path.startswith(f"/sitemap-{section}-"):
            page = validate(server.fetch(urlsplit(loc).path))
            found.update(
                (urlsplit(url).path, lastmod) for url, lastmod in zip(locs(page), lastmods(page), strict=True)
            )
    return found


def post(server: Server, path: str, form: str = "") -> None:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=TIMEOUT)
    try:
        connection.request("POST", path, form, {"Content-Type": "application/x-www-form-urlencoded"})
        response = connection.getresponse()
        assert response.status == 204, (path, response.status, response.read())
    finally:
        connection.close()


def stocked(site: tuple[Server, Project]) -> tuple[Server, Project]:
    """The site with a product and a post, whichever test of the module runs first on it
    (xdist may give each test a server of its own): an empty site has no index to list."""
    server, shop = site
    post(server, "/admin/products/alpha/save")
    shop.shell("from shop.models import Post; Post.objects.get_or_create(slug='hello')")
    return server, shop


def test_the_project_serves_its_sections_and_its_own_routes(site):
    server, shop = site
    for slug in ("alpha", "beta", "gamma"):
        post(server, f"/admin/products/{slug}/save")
    post(server, "/admin/products/hidden/save", "published=0")
    shop.shell("from shop.models import Post; Post.objects.create(slug='hello')")
    products = listed(server, "products")
    assert {"/p/alpha/", "/p/beta/", "/p/gamma/"} <= set(products)
    assert "/p/hidden/" not in products
    assert all(lastmod and "T" in lastmod for lastmod in products.values())  # true lastmods, to the second
    assert "/blog/hello/" in listed(server, "blog")
    assert server.fetch("/p/alpha/") == b"alpha"  # the app's own route still answers


def test_a_save_through_the_app_shows_at_once_and_a_delete_removes_it(site):
    server, _ = stocked(site)
    assert "/p/fresh/" not in listed(server, "products")  # now cached
    post(server, "/admin/products/fresh/save")
    assert "/p/fresh/" in listed(server, "products")  # post_save invalidated the section
    post(server, "/admin/products/fresh/save", "published=0")
    assert "/p/fresh/" not in listed(server, "products")
    post(server, "/admin/products/fresh/save")
    assert "/p/fresh/" in listed(server, "products")
    post(server, "/admin/products/fresh/delete")
    assert "/p/fresh/" not in listed(server, "products")  # post_delete too


def test_a_change_made_by_another_process_shows_through_the_version(site):
    server, shop = stocked(site)
    assert "/blog/elsewhere/" not in listed(server, "blog")  # now cached
    shop.shell("from shop.models import Post; Post.objects.create(slug='elsewhere')")
    assert "/blog/elsewhere/" in listed(server, "blog")  # no signal reached the server: its version did
    shop.shell("from shop.models import Post; Post.objects.filter(slug='elsewhere').delete()")
    assert "/blog/elsewhere/" not in listed(server, "blog")
