"""``Sitemaps(app=...)`` and ``sitemaps.init_app(app)`` (the application factory), through real servers.

An app made by a factory, as Flask's tutorial makes one, is served by werkzeug's threaded
server in this process and by gunicorn in its own; its sitemaps are answered in front of
it (its robots.txt merged), its own routes untouched.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from flask import Flask

from sitemap_middleware import ConfigurationError, Sitemaps

from ..servers import Server, werkzeug_serving
from ..xsd import locs, validate

pytestmark = pytest.mark.server

REPO = Path(__file__).resolve().parents[2]
BASE = "https://shop.example"
TIMEOUT = 60

APP = """
    import os

    from flask import Flask

    from sitemap_middleware import Sitemaps

    sitemaps = Sitemaps(base_url=os.environ.get("SHOP_BASE_URL", "https://shop.example"))
    sitemaps.provider("products", page_size=2)(lambda: [f"/p/{n}" for n in range(5)])


    def create_app():
        app = Flask(__name__)

        @app.get("/robots.txt")
        def robots():
            return "User-agent: *\\nDisallow: /cart/\\n", {"Content-Type": "text/plain"}

        @app.get("/p/<int:n>")
        def product(n):
            return f"product {n}"

        sitemaps.init_app(app)
        return app
"""


def make_app() -> tuple[Flask, Sitemaps]:
    namespace: dict[str, object] = {"__name__": __name__}  # Flask finds its root path by it
    exec(textwrap.dedent(APP), namespace)  # the factory the subprocess tests import, here in-process
    app = namespace["create_app"]()  # type: ignore[operator]
    return app, namespace["sitemaps"]  # type: ignore[return-value]


def test_init_app_serves_the_tree_in_front_of_the_app_and_leaves_its_routes():
    app, _ = make_app()
    with werkzeug_serving(app) as port:
        server = Server(port, "flask")
        index = validate(server.fetch("/sitemap-index.xml"))
        assert [loc.rsplit("/", 1)[1] for loc in locs(index)] == [
            f"sitemap-products-{n}.xml" for n in (1, 2, 3)
        ]
        assert locs(validate(server.fetch("/sitemap-products-3.xml"))) == [f"{BASE}/p/4"]
        assert server.fetch("/p/3") == b"product 3"
        assert server.get("/sitemap-nosuch-1.xml").status == 404


def test_robots_txt_is_the_apps_own_with_our_sitemap_line():
    app, _ = make_app()
    with werkzeug_serving(app) as port:
        lines = Server(port, "flask").fetch("/robots.txt").decode().splitlines()
    assert "Disallow: /cart/" in lines
    assert f"Sitemap: {BASE}/sitemap-index.xml" in lines


def test_init_app_registers_the_extension_and_the_command_group():
    app, sitemaps = make_app()
    assert app.extensions["sitemaps"] is sitemaps
    assert "sitemaps" in app.cli.commands


def test_sitemaps_app_argument_is_init_app():
    app = Flask("direct")
    sitemaps = Sitemaps(base_url=BASE, app=app)
    sitemaps.provider("pages")(lambda: ["/about"])
    assert app.extensions["sitemaps"] is sitemaps
    response = app.test_client().get("/sitemap-pages-1.xml")
    assert response.status_code == 200
    assert locs(validate(response.data)) == [f"{BASE}/about"]


def test_a_second_init_app_on_one_app_is_refused():
    app, _ = make_app()
    with pytest.raises(ConfigurationError, match="already has its Sitemaps"):
        Sitemaps(base_url=BASE).init_app(app)


@pytest.fixture(scope="module")
def gunicorn_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, dict[str, str], Path]]:
    """The factory's app under gunicorn, its base_url its own origin (so validate can crawl it)."""
    home = tmp_path_factory.mktemp("flaskshop")
    (home / "shopapp.py").write_text(textwrap.dedent(APP).lstrip())
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(home), str(REPO), os.environ.get("PYTHONPATH")])),
        "SHOP_BASE_URL": f"http://127.0.0.1:{port}",
    }
    fd = listener.fileno()
    command = [
        sys.executable,
        "-m",
        "gunicorn",
        "--bind",
        f"fd://{fd}",
        "--threads",
        "4",
        "shopapp:create_app()",
    ]
    server = subprocess.Popen(command, cwd=home, env=env, pass_fds=[fd], stderr=subprocess.PIPE)
    try:
        yield Server(port, "flask"), env, home
    finally:
        server.terminate()
        _, errors = server.communicate(timeout=TIMEOUT)
        listener.close()
        assert b"Traceback" not in errors, errors.decode()


def flask(env: dict[str, str], home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "flask", "--app", "shopapp", "sitemaps", *args]
    return subprocess.run(command, cwd=home, env=env, capture_output=True, text=True, timeout=TIMEOUT)


def test_gunicorn_serves_the_factorys_app(gunicorn_site):
    server, _, _ = gunicorn_site
    assert len(locs(validate(server.fetch("/sitemap-index.xml")))) == 3
    assert server.fetch("/p/1") == b"product 1"
    assert "Disallow: /cart/" in server.fetch("/robots.txt").decode()


def test_flask_sitemaps_validate_checks_the_live_tree_clean(gunicorn_site):
    server, env, home = gunicorn_site
    done = flask(env, home, "validate", f"http://127.0.0.1:{server.port}/robots.txt")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "5 URLs: 0 problems" in done.stdout  # robots.txt, the index, its 3 pages


def test_flask_sitemaps_export_writes_the_tree(gunicorn_site, tmp_path):
    _, env, home = gunicorn_site
    done = flask(env, home, "export", "--out", str(tmp_path / "public"), "--gzip")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("wrote ")
    assert (tmp_path / "public" / "sitemap-products-3.xml.gz").is_file()


def test_flask_sitemaps_refresh_of_an_unknown_section_exits_2(gunicorn_site):
    _, env, home = gunicorn_site
    done = flask(env, home, "refresh", "nosuch")
    assert done.returncode == 2
    assert "no section named 'nosuch'" in done.stderr
