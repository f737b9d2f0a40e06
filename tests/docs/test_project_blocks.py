"""The docs' blocks that are files of a project (``<!-- run as: ... -->``, ``<!-- run in: ... -->``,
`tests.docs.blocks`) run in a throwaway project built from them (`tests.docs.projects`), and
do what their page says.

Each page's project is written to a folder of its own, its database made by ``manage.py
makemigrations`` and ``migrate``; what a page shows is exercised in a fresh interpreter
(``manage.py shell -c``, Django's test client or the WSGI application itself, no server) and
checked here: sitemaps parsed and validated against the XSDs, naming the rows saved.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from ..django.test_middleware_project import Project
from ..xsd import locs, validate
from .blocks import REPO, file_blocks, pages
from .projects import build

PUBLIC = "https://shop.example"
TIMEOUT = 60.0

# The pages with file blocks, each exercised by this module's tests of its project.
EXERCISED = {"docs/django.md", "docs/caching.md"}

# Run in the project's interpreter before a test's own code: fetch(client, path) returns what
# was answered, as JSON-able data.
PRELUDE = """
import json

def fetch(client, path):
    response = client.get(path)
    if hasattr(response, "get_data"):  # werkzeug's test client, on a WSGI application
        status, headers, body = response.status_code, response.headers, response.get_data()
    else:  # Django's
        body = b"".join(response.streaming_content) if response.streaming else response.content
        status, headers = response.status_code, response.headers
    return {"status": status, "headers": dict(headers), "body": body.decode()}

def write_behind_the_orm(slug):  # on a connection of its own, in plain SQL: no ORM signal hears it
    import sqlite3
    from contextlib import closing
    from django.conf import settings
    with closing(sqlite3.connect(settings.DATABASES["default"]["NAME"])) as db, db:
        db.execute("INSERT INTO shop_product (slug, published, updated_at) VALUES (?, 1, '2026-03')", (slug,))
"""


def made(page: str, home: Path) -> Project:
    """``page``'s project in ``home``, migrated, with products alpha and beta and a post."""
    build(REPO / page, home)
    project = Project(home, {})
    project.manage("makemigrations", "shop")
    project.manage("migrate")
    project.shell("""
        from shop.models import Post, Product
        for slug in ("alpha", "beta"):
            Product.objects.create(slug=slug)
        Post.objects.create(slug="hello")
    """)
    return project


def shell(project: Project, code: str) -> Any:
    """What ``code``, run by ``manage.py shell`` after `PRELUDE`, printed last, as JSON."""
    out = project.manage("shell", "-c", PRELUDE + textwrap.dedent(code))
    return json.loads(out.strip().splitlines()[-1])


def urls(answer: dict[str, Any]) -> list[str]:
    assert answer["status"] == 200, answer
    return locs(validate(answer["body"].encode()))


@pytest.fixture(scope="module")
def django_page(tmp_path_factory: pytest.TempPathFactory) -> Project:
    return made("docs/django.md", tmp_path_factory.mktemp("django-page"))


@pytest.fixture(scope="module")
def caching_page(tmp_path_factory: pytest.TempPathFactory) -> Project:
    return made("docs/caching.md", tmp_path_factory.mktemp("caching-page"))


def test_every_page_with_file_blocks_is_exercised() -> None:
    with_files = {str(page.relative_to(REPO)) for page in pages() if file_blocks(page)}
    assert with_files == EXERCISED


# -- docs/django.md ---------------------------------------------------------------------------------


def test_the_django_pages_project_passes_manage_py_check(django_page: Project) -> None:
    checked = django_page.run("check", "--fail-level", "WARNING")
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_the_django_pages_settings_answer_the_sitemaps_in_middleware_before_the_views(
    django_page: Project,
) -> None:
    got = shell(django_page, """
        from django.test import Client
        client = Client()
        print(json.dumps({path: fetch(client, path) for path in
              ["/sitemap-index.xml", "/sitemap-products-1.xml", "/sitemap-blog-1.xml", "/p/alpha/"]}))
    """)  # fmt: skip
    sections = [f"{PUBLIC}/sitemap-products-1.xml", f"{PUBLIC}/sitemap-blog-1.xml"]
    assert urls(got["/sitemap-index.xml"]) == sections
    assert urls(got["/sitemap-products-1.xml"]) == [f"{PUBLIC}/p/alpha/", f"{PUBLIC}/p/beta/"]
    assert urls(got["/sitemap-blog-1.xml"]) == [f"{PUBLIC}/blog/hello/"]
    # SecurityMiddleware, above it in MIDDLEWARE, saw the answer; the view had the rest.
    assert got["/sitemap-index.xml"]["headers"]["X-Content-Type-Options"] == "nosniff"
    assert got["/p/alpha/"]["status"] == 200 and got["/p/alpha/"]["body"] == "alpha"


def test_the_django_pages_hand_wrapped_wsgi_py_answers_before_django(django_page: Project) -> None:
    got = shell(django_page, """
        from werkzeug.test import Client
        from myproject.wsgi import application
        client = Client(application)
        print(json.dumps({path: fetch(client, path) for path in ["/sitemap-products-1.xml", "/p/beta/"]}))
    """)  # fmt: skip
    assert urls(got["/sitemap-products-1.xml"]) == [f"{PUBLIC}/p/alpha/", f"{PUBLIC}/p/beta/"]
    # Answered in front of Django's handler: no middleware of MIDDLEWARE saw it.
    assert "X-Content-Type-Options" not in got["/sitemap-products-1.xml"]["headers"]
    assert got["/p/beta/"]["status"] == 200 and got["/p/beta/"]["body"] == "beta"


def test_the_django_pages_manage_py_sitemaps_validates_and_exports_the_project(
    django_page: Project, tmp_path: Path
) -> None:
    checked = django_page.run("sitemaps", "validate", "--urls", "all")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "0 problems" in checked.stdout.strip().splitlines()[-1]
    django_page.manage("sitemaps", "export", "--out", str(tmp_path / "public"))
    index = locs(validate((tmp_path / "public" / "sitemap-index.xml").read_bytes()))
    assert index == [f"{PUBLIC}/sitemap-products-1.xml", f"{PUBLIC}/sitemap-blog-1.xml"]
    products = locs(validate((tmp_path / "public" / "sitemap-products-1.xml").read_bytes()))
    assert products == [f"{PUBLIC}/p/alpha/", f"{PUBLIC}/p/beta/"]


def test_the_django_pages_model_block_indexes_the_lastmod_field(django_page: Project) -> None:
    with closing(sqlite3.connect(django_page.home / "db.sqlite3")) as db:
        indexed = [
            [column for _, _, column in db.execute(f"PRAGMA index_info('{name}')")]
            for _, name, *_ in db.execute("PRAGMA index_list('shop_product')")
        ]
    assert ["updated_at"] in indexed


def test_the_django_pages_version_shows_another_connections_write_at_once(django_page: Project) -> None:
    got = shell(django_page, """
        from django.test import Client
        client = Client()
        before = fetch(client, "/sitemap-products-1.xml")
        write_behind_the_orm("gamma")
        after = fetch(client, "/sitemap-products-1.xml")
        print(json.dumps([before, after]))
    """)  # fmt: skip
    before, after = got
    assert urls(before) == [f"{PUBLIC}/p/alpha/", f"{PUBLIC}/p/beta/"]
    assert urls(after) == [f"{PUBLIC}/p/alpha/", f"{PUBLIC}/p/beta/", f"{PUBLIC}/p/gamma/"]


# -- docs/caching.md --------------------------------------------------------------------------------


def test_the_caching_pages_django_hooks_show_a_save_and_a_delete_at_once(caching_page: Project) -> None:
    got = shell(caching_page, """
        from django.core.wsgi import get_wsgi_application
        from werkzeug.test import Client
        from myproject.sitemaps import sitemaps
        from shop.models import Product
        client = Client(sitemaps.wsgi(get_wsgi_application()))
        seen = [fetch(client, "/sitemap-products-1.xml")]
        write_behind_the_orm("quiet")
        seen.append(fetch(client, "/sitemap-products-1.xml"))
        Product.objects.create(slug="saved")
        seen.append(fetch(client, "/sitemap-products-1.xml"))
        Product.objects.filter(slug="alpha").get().delete()
        seen.append(fetch(client, "/sitemap-products-1.xml"))
        print(json.dumps(seen))
    """)  # fmt: skip
    cached, unheard, saved, deleted = (urls(answer) for answer in got)
    assert cached == unheard == [f"{PUBLIC}/p/alpha/", f"{PUBLIC}/p/beta/"]  # a write no hook hears
    assert saved == [f"{PUBLIC}/p/alpha/", f"{PUBLIC}/p/beta/", f"{PUBLIC}/p/quiet/", f"{PUBLIC}/p/saved/"]
    assert deleted == [f"{PUBLIC}/p/beta/", f"{PUBLIC}/p/quiet/", f"{PUBLIC}/p/saved/"]


def test_the_caching_pages_sqlalchemy_hook_shows_a_commit_at_once(caching_page: Project) -> None:
    code = PRELUDE + textwrap.dedent("""
        from werkzeug.test import Client
        from catalogue import Product, Session, engine, sitemaps
        client = Client(sitemaps.wsgi(lambda environ, start_response: []))
        with Session(engine) as session:
            session.add(Product(slug="first"))
            session.commit()
        seen = [fetch(client, "/sitemap-products-1.xml")]
        with engine.begin() as connection:  # no Session: no after_commit
            connection.exec_driver_sql("INSERT INTO product (slug) VALUES ('quiet')")
        seen.append(fetch(client, "/sitemap-products-1.xml"))
        with Session(engine) as session:
            session.add(Product(slug="committed"))
            session.commit()
        seen.append(fetch(client, "/sitemap-products-1.xml"))
        print(json.dumps(seen))
    """)
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=caching_page.home,
        env=caching_page.env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    cached, unheard, committed = (urls(answer) for answer in json.loads(done.stdout.splitlines()[-1]))
    assert cached == unheard == [f"{PUBLIC}/p/first"]  # a write no hook hears
    assert committed == [f"{PUBLIC}/p/first", f"{PUBLIC}/p/quiet", f"{PUBLIC}/p/committed"]
