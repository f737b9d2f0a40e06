"""The examples work: each app serves a valid sitemap tree of exactly its providers' URLs.

Flask and Starlette examples are imported from ``examples/`` and driven in-process by their
framework's test client. The Django example configures Django's settings when imported,
which can happen once per process (test_frameworks.py configures a project of its own), so
it is imported and driven in a subprocess (`DJANGO_DRIVER`) that hands the raw responses
back; they are validated here. The ``server`` tests run each example as a script. The demo
shop (``demo.py``, on its own database) has its tests in test_demo.py.
"""

from __future__ import annotations

import base64
import importlib.util
import json
import os
import socket
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest
from starlette.testclient import TestClient

from .conftest import wait_until
from .crawl import assert_reciprocal, crawl, hreflang_groups, provider_locs, robots_lines
from .xsd import locs, parse, validate

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
ROOT = "http://127.0.0.1:8000"  # every example's base_url
TIMEOUT = 30.0

# Per example: its providers (module attributes) and the pages its index lists.
PROVIDERS = {
    "flask_app": ("pages", "posts"),
    "starlette_app": ("pages", "products", "articles"),
    "django_app": ("pages", "events"),
    "multilingual_shop": ("pages", "products"),
}
INDEX = {
    "flask_app": ["pages-1", "posts-1", "posts-2"],
    "starlette_app": ["pages-1", "products-1", "articles-1"],
    "django_app": ["pages-1", "events-1"],
    "multilingual_shop": ["pages-1", "products-1"],
}
APP_ROUTE = {
    "flask_app": "/posts/post-7",
    "starlette_app": "/about",
    "django_app": "/events/meetup-3",
    "multilingual_shop": "/de/p/blue-shoe",
}

# Runs in a fresh interpreter: import the Django example, GET the app route, robots.txt,
# the index and every page it lists through a WSGI test client, and print what came back (and what the
# providers give) as JSON.
DJANGO_DRIVER = """
import base64, importlib.util, json, sys
from lxml import etree
from werkzeug.test import Client
from tests.crawl import provider_locs

path, route, providers = sys.argv[1], sys.argv[2], sys.argv[3:]
spec = importlib.util.spec_from_file_location("django_app", path)
module = importlib.util.module_from_spec(spec)
sys.modules["django_app"] = module  # the example's ROOT_URLCONF is its own __name__
spec.loader.exec_module(module)
client = Client(module.application)
got = {}

def get(path):
    response = client.get(path)
    got[path] = [response.status_code, base64.b64encode(response.get_data()).decode()]
    return response.get_data()

get(route)
get("/robots.txt")
index = etree.fromstring(get("/sitemap-index.xml"))
for loc in index.iterfind(".//{http://www.sitemaps.org/schemas/sitemap/0.9}loc"):
    get(loc.text.removeprefix("http://127.0.0.1:8000"))
expected = provider_locs("http://127.0.0.1:8000", *(getattr(module, name) for name in providers))
print(json.dumps({"got": got, "expected": sorted(expected)}))
"""


@dataclass
class Driven:
    """An example app behind a client: ``get(path) -> (status, body)``, and its providers' locs."""

    name: str
    get: Callable[[str], tuple[int, bytes]]
    expected: set[str]

    def fetch(self, path: str) -> bytes:
        status, body = self.get(path)
        assert status == 200, f"GET {path}: {status} {body[:200]!r}"
        return body


def subprocess_env() -> dict[str, str]:
    """This environment, with the repository importable (tests and the package)."""
    path = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path}


def load_example(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"examples_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # Flask finds its root path through sys.modules
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[spec.name]
        raise
    return module


def drive_django_example() -> Driven:
    result = subprocess.run(
        [
            *(sys.executable, "-W", "error", "-c", DJANGO_DRIVER),
            *(str(EXAMPLES / "django_app.py"), APP_ROUTE["django_app"], *PROVIDERS["django_app"]),
        ],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        cwd=REPO,
        env=subprocess_env(),
        check=False,
    )
    assert result.returncode == 0, result.stderr
    output = json.loads(result.stdout)
    responses = {path: (status, base64.b64decode(body)) for path, (status, body) in output["got"].items()}
    return Driven("django_app", responses.__getitem__, set(output["expected"]))


@pytest.fixture(scope="module", params=list(PROVIDERS))
def example(request: pytest.FixtureRequest) -> Iterator[Driven]:
    name: str = request.param
    if name == "django_app":
        yield drive_django_example()
        return
    module = load_example(name)
    expected = provider_locs(ROOT, *(getattr(module, provider) for provider in PROVIDERS[name]))
    languages = getattr(module, "LANGUAGES", None)
    if languages is not None:  # its sections serve each entry below each language's prefix
        expected = {
            ROOT + prefix + loc.removeprefix(ROOT) for loc in expected for prefix in languages.values()
        }
    try:
        if name == "flask_app":
            client = module.app.test_client()

            def get(path: str) -> tuple[int, bytes]:
                response = client.get(path)
                return response.status_code, response.get_data()

            yield Driven(name, get, expected)
        else:
            with TestClient(module.app) as starlette_client:
                yield Driven(name, lambda path: _httpx(starlette_client, path), expected)
    finally:
        sys.modules.pop(module.__name__, None)


def _httpx(client: TestClient, path: str) -> tuple[int, bytes]:
    response = client.get(path)
    return response.status_code, response.content


def test_example_index_lists_every_page(example: Driven) -> None:
    index = validate(example.fetch("/sitemap-index.xml"))
    assert locs(index) == [f"{ROOT}/sitemap-{page}.xml" for page in INDEX[example.name]]


def test_example_pages_hold_exactly_its_providers_urls(example: Driven) -> None:
    tree = crawl(example.fetch, origin=ROOT)
    assert tree.url_count == len(example.expected)
    assert tree.urls == example.expected


def test_example_robots_txt_names_the_index(example: Driven) -> None:
    lines = robots_lines(example.fetch("/robots.txt"))  # no example has one: ours is served
    assert lines == ["User-agent: *", "Allow: /", f"Sitemap: {ROOT}/sitemap-index.xml"]


def test_multilingual_example_lists_each_product_in_each_language_with_its_photos() -> None:
    module = load_example("multilingual_shop")
    try:
        with TestClient(module.app) as client:
            pages = [parse(client.get(f"/sitemap-{name}-1.xml").content) for name in ("pages", "products")]
    finally:
        sys.modules.pop(module.__name__, None)
    groups = hreflang_groups(pages)
    assert_reciprocal(groups)
    assert groups[f"{ROOT}/fr/p/red-scarf"] == [
        ("en", f"{ROOT}/p/red-scarf"),
        ("de", f"{ROOT}/de/p/red-scarf"),
        ("fr", f"{ROOT}/fr/p/red-scarf"),
        ("x-default", f"{ROOT}/p/red-scarf"),
    ]
    image = "{http://www.google.com/schemas/sitemap-image/1.1}"
    photos = {url[0].text: [loc.text for loc in url.iter(f"{image}loc")] for url in pages[1]}
    assert photos[f"{ROOT}/de/p/blue-shoe"] == [
        f"https://cdn.example.net/p/blue-shoe/{photo}.jpg" for photo in ("front", "side", "sole")
    ]


def test_example_app_route_answers(example: Driven) -> None:
    status, _ = example.get(APP_ROUTE[example.name])
    assert status == 200


# Each example as a script: it serves on 127.0.0.1 (the port is its first argument).


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT).close()
    except ConnectionRefusedError:
        return False
    return True


def fetch_when_ready(port: int, path: str, process: subprocess.Popen[bytes]) -> bytes:
    """GET ``path`` once the script listens (failing if it exits or never listens)."""
    import http.client

    wait_until(lambda: process.poll() is not None or listening(port), "the example listens", TIMEOUT)
    assert process.poll() is None, "the example exited"
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        assert response.status == 200
        return response.read()
    finally:
        connection.close()


@pytest.mark.server
@pytest.mark.parametrize("name", list(PROVIDERS))
def test_example_script_serves_its_index_on_loopback(name: str) -> None:
    port = free_port()
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(
            [sys.executable, str(EXAMPLES / f"{name}.py"), str(port)],
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=REPO,
            env=subprocess_env(),
        )
        try:
            body = fetch_when_ready(port, "/sitemap-index.xml", process)
        except AssertionError as failure:
            log.seek(0)
            output = log.read().decode(errors="replace")
            raise AssertionError(f"{failure}\n--- the example's output ---\n{output}") from None
        finally:
            process.terminate()
            process.wait(TIMEOUT)
    assert locs(validate(body)) == [f"{ROOT}/sitemap-{page}.xml" for page in INDEX[name]]
