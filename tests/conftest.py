"""What several test modules share: fixtures, providers, waiting, and the schema-skip report.

- `make_client` runs every HTTP behaviour on both adapters; `serve` starts a real server
  (`tests.servers`) in front of a real app; `postgres_url` a throwaway PostgreSQL server.
- `make_shop`, the suite's one shop (sections of products and pages, in any shape);
  `Catalogue` (a counting provider) and `build`, a shop of one; `http_scope` for hand-built ASGI requests.
- `wait_until` / `await_until`: a flag or a counter under a deadline, never a bare sleep;
  `counter` reads one of ``sitemaps.stats``.
- Without the official XSDs (`tests.xsd.validate`), each test whose schema step was skipped
  says so in its report, and the run's summary counts them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import quote, unquote
from wsgiref.validate import validator

import anyio
import httpx2
import pytest
from starlette.testclient import TestClient
from werkzeug.datastructures import Headers
from werkzeug.test import Client as WerkzeugClient

from sitemap_middleware import Sitemaps, Url
from sitemap_middleware.providers import ProviderFunc

from . import xsd

if TYPE_CHECKING:
    from .redis_server import RedisServer
    from .servers import Server

SCHEMA_SKIPPED = "schema validation skipped"  # a report's user property: (name, reason)
WAIT = 10.0  # seconds: what a test waits for something to happen before it fails
POLL = 0.002  # seconds between two looks at a flag or counter that has no event to wait on


@dataclass
class Response:
    status: int
    headers: Headers
    body: bytes


def plain_wsgi_app(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
    """The wrapped app: answers every path with its own name, robots.txt included."""
    body = f"app:{environ['REQUEST_METHOD']} {environ['PATH_INFO']}".encode()
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]


async def plain_asgi_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    assert scope["type"] == "http"
    body = f"app:{scope['method']} {scope['path']}".encode()
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"text/plain"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})


class SitemapClient:
    """Requests through one adapter; ``kind`` is ``"wsgi"`` or ``"asgi"``.

    ``mount`` mounts the app below a prefix: ``SCRIPT_NAME`` under WSGI, ``root_path``
    under ASGI (whose ``path`` then includes it, as the ASGI spec says). Request paths
    are given below the mount and reach the adapter exactly as written, ``//x`` and
    ``/a/..`` included.
    """

    def __init__(
        self, kind: str, sitemaps: Sitemaps, wsgi_app: Any = None, asgi_app: Any = None, mount: str = ""
    ) -> None:
        self.kind = kind
        self.mount = mount
        if kind == "wsgi":
            self._wsgi = WerkzeugClient(validator(sitemaps.wsgi(wsgi_app or plain_wsgi_app)))
        else:
            self._asgi = TestClient(
                sitemaps.asgi(asgi_app or plain_asgi_app), base_url="http://testserver", root_path=mount
            )

    def request(self, method: str, path: str, headers: dict[str, str] | None = None) -> Response:
        headers = dict(headers or {})
        if self.kind == "wsgi":
            # PEP 3333: environ strings carry the UTF-8 bytes of the path, decoded as latin-1.
            environ = {"SCRIPT_NAME": self.mount.encode().decode("latin-1")} if self.mount else {}
            if path.startswith("//"):  # werkzeug would read "//x" as a host name
                target, _, query = path.partition("?")
                environ["PATH_INFO"] = unquote(target).encode().decode("latin-1")  # as werkzeug does
                path = f"/?{query}" if query else "/"
            r = self._wsgi.open(path, method=method, headers=headers, environ_overrides=environ)
            try:
                return Response(r.status_code, r.headers, r.get_data())
            finally:
                r.close()
        if not any(name.lower() == "accept-encoding" for name in headers):
            headers["accept-encoding"] = "identity"  # httpx would add gzip otherwise
        url = httpx2.URL("http://testserver", raw_path=_raw_target(self.mount + path))
        with self._asgi.stream(method, url, headers=headers) as a:
            raw = b"".join(a.iter_raw())  # undecoded, as the wire carried it
            return Response(a.status_code, Headers(list(a.headers.multi_items())), raw)

    def get(self, path: str, headers: dict[str, str] | None = None) -> Response:
        return self.request("GET", path, headers)

    def close(self) -> None:
        if self.kind == "asgi":
            self._asgi.close()


def _raw_target(path: str) -> bytes:
    """``path`` for httpx2, which would resolve dot segments; the app still sees them, unquoted."""
    target, sep, query = path.partition("?")
    segments = ["%2E" * len(segment) if segment in {".", ".."} else segment for segment in target.split("/")]
    return quote("/".join(segments) + sep + query, safe="/?=&%:@!$'()*+,;~").encode("ascii")


@pytest.fixture(params=["wsgi", "asgi"])
def make_client(request: pytest.FixtureRequest) -> Iterator[Callable[..., SitemapClient]]:
    """Build a client for a `Sitemaps` on the adapter this test instance runs on."""
    made: list[SitemapClient] = []

    def make(sitemaps: Sitemaps, **options: Any) -> SitemapClient:
        client = SitemapClient(request.param, sitemaps, **options)
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()


# -- providers and requests that several modules share ------------------------------------------

BASE = "https://shop.example"
NOW = 1_780_000_000.0  # the fake wall clock of `build`: Last-Modified of everything it renders


class Catalogue:
    """A generator provider over mutable data that counts its calls and the URLs it yielded,
    and records whether it was closed before its end."""

    def __init__(self, count: int = 5) -> None:
        self.paths = [f"/p/{n}" for n in range(count)]
        self.calls = 0
        self.yielded = 0
        self.closed = False

    def __call__(self) -> Iterator[str]:
        self.calls += 1
        try:
            for path in list(self.paths):
                self.yielded += 1
                yield path
        except GeneratorExit:
            self.closed = True
            raise


def product_path(n: int) -> str:
    """Product ``n``'s entry in a shop that says nothing else: its path."""
    return f"/p/{n}"


def dated_product(n: int) -> Url:
    """Product ``n`` changed on day ``n + 1`` of January 2024 (a shop of at most 31 products)."""
    return Url(f"/p/{n}", lastmod=date(2024, 1, n + 1))


def make_shop(
    products: int | ProviderFunc = 5,
    *,
    product: Callable[[int], object] = product_path,
    shape: Literal["list", "generator", "window"] = "list",
    products_page_size: int | None = None,
    products_options: Mapping[str, Any] | None = None,
    pages: Sequence[str] = ("/", "/about"),
    sections: Sequence[Literal["products", "pages"]] = ("products", "pages"),
    base_url: str = BASE,
    **options: Any,
) -> Sitemaps:
    """The suite's shop: a `Sitemaps` on ``base_url`` (``options`` are its own) with ``sections``,
    registered in that order (the index lists them so).

    - ``products``: ``product(n)`` for each of the first ``products`` integers, in files of
      ``products_page_size`` (else the ``page_size`` of ``options``), registered with
      ``products_options`` (``add_provider``'s others: languages, extensions, ...). ``shape`` is how the
      provider gives them: a list, a generator (an unsized iterable, pulled as it goes), or a
      window (``offset`` and ``limit``) with a ``count``. A provider given as ``products``
      (a `Catalogue`, say) is registered as it is.
    - ``pages``: the paths ``pages`` lists, as a list.
    """
    sitemaps = Sitemaps(base_url=base_url, **options)
    for section in sections:
        if section == "pages":
            sitemaps.add_provider("pages", lambda: list(pages))
            continue
        provider, count = (products, None) if callable(products) else _products(products, product, shape)
        sitemaps.add_provider(
            "products", provider, page_size=products_page_size, count=count, **(products_options or {})
        )
    return sitemaps


def _products(
    total: int, product: Callable[[int], object], shape: str
) -> tuple[ProviderFunc, Callable[[], int] | None]:
    """The provider of `make_shop`'s ``products`` in one ``shape``, and its count (a window's only)."""
    if shape == "list":
        return (lambda: [product(n) for n in range(total)]), None
    if shape == "generator":
        return (lambda: (product(n) for n in range(total))), None

    def window(offset: int, limit: int | None) -> Iterator[object]:
        # product(n) is called as its turn comes: one that raises fails the render mid-page.
        for n in range(offset, total if limit is None else min(offset + limit, total)):
            yield product(n)

    return window, lambda: total


class Shelf:
    """A section's rows (path -> lastmod), served in path order as a database would: edit
    ``rows`` between renders to insert, update and delete (the change log's tests)."""

    def __init__(self, count: int, *, width: int = 3) -> None:
        self.rows: dict[str, str | None] = {f"/p/{n:0{width}d}": None for n in range(count)}

    def __call__(self) -> Iterator[Url]:
        for path in sorted(self.rows):
            yield Url(path, lastmod=self.rows[path])


def build(catalogue: Catalogue | None = None, **options: Any) -> tuple[Sitemaps, Catalogue]:
    """A `make_shop` of ``catalogue`` (a `Catalogue` of 5) alone, at the fixed clock `NOW`."""
    catalogue = catalogue or Catalogue()
    options.setdefault("clock", lambda: NOW)
    return make_shop(catalogue, sections=("products",), **options), catalogue


class Recorder:
    """A ``send`` that keeps every message."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []

    async def __call__(self, message: dict[str, Any]) -> None:
        self.messages.append(message)

    @property
    def status(self) -> int:
        [start] = [m for m in self.messages if m["type"] == "http.response.start"]
        return int(start["status"])

    @property
    def body(self) -> bytes:
        return b"".join(m.get("body", b"") for m in self.messages if m["type"] == "http.response.body")


class Receive:
    """A server's ``receive``: the (empty) request body, then nothing until the client leaves."""

    def __init__(self) -> None:
        self.requested = False

    async def __call__(self) -> dict[str, Any]:
        if not self.requested:
            self.requested = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await anyio.sleep_forever()  # the client stays until the response is complete
        raise AssertionError("unreachable")


def http_scope(
    path: str, root_path: str = "", method: str = "GET", headers: tuple[tuple[bytes, bytes], ...] = ()
) -> dict[str, Any]:
    """A hand-built ASGI ``http`` scope for ``https://shop.example`` (``headers`` after Host)."""
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "https",
        "path": path,
        "raw_path": path.encode(),
        "root_path": root_path,
        "query_string": b"",
        "headers": [(b"host", b"shop.example"), *headers],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 443),
    }


# -- real servers ----------------------------------------------------------------------------------


@pytest.fixture(params=["uvicorn", "werkzeug", "werkzeug-helpers"])
def serve(request: pytest.FixtureRequest) -> Iterator[Callable[[Sitemaps], Server]]:
    """Start a real server for a `Sitemaps`: uvicorn + Starlette, or werkzeug + Flask (rendering
    on the request thread, or with ``helper_threads`` on helper threads)."""
    # Imported here: servers.py imports this module, and only server tests need the frameworks.
    from . import apps
    from .servers import Server, uvicorn_serving, werkzeug_serving

    with ExitStack() as stack:

        def start(sitemaps: Sitemaps) -> Server:
            if request.param == "uvicorn":
                port = stack.enter_context(uvicorn_serving(sitemaps.asgi(apps.starlette_app())))
                return Server(port, "starlette")
            helpers = 4 if request.param == "werkzeug-helpers" else 0
            flask_app = apps.flask_app()
            flask_app.wsgi_app = sitemaps.wsgi(flask_app.wsgi_app, helper_threads=helpers)  # type: ignore[method-assign]
            return Server(stack.enter_context(werkzeug_serving(flask_app)), "flask")

        yield start


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """A throwaway redis-server for the session (`tests.redis_server`); tests share it by prefix."""
    from .redis_server import RedisServer

    with RedisServer(tmp_path_factory.mktemp("redis")) as server:
        yield server


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A throwaway PostgreSQL server for this test session (`tests.postgres_server`); its
    SQLAlchemy URL without a driver. A server that cannot start fails the test, never skips it."""
    from .postgres_server import postgres_server

    with postgres_server() as url:
        yield url


# -- waiting for something to happen ------------------------------------------------------------


def counter(sitemaps: Sitemaps, section: str, name: str) -> int:
    """One counter of ``sitemaps.stats`` (0 until first counted)."""
    return sitemaps.stats.snapshot().get(section, {}).get(name, 0)


def wait_until(condition: Callable[[], object], what: str, timeout: float = WAIT) -> None:
    """Block until ``condition()`` is true (a flag or counter with no event to wait on).

    Raises `AssertionError` naming ``what`` after ``timeout`` seconds, so a regression fails
    instead of hanging; also inside a provider, where it becomes that render's error.
    """
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"still waiting after {timeout} s until {what}")
        time.sleep(POLL)


async def await_until(condition: Callable[[], object], what: str, timeout: float = WAIT) -> None:
    """`wait_until` for a coroutine: the event loop runs while it waits."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"still waiting after {timeout} s until {what}")
        await anyio.sleep(POLL)


# -- schema steps skipped without the official XSDs --------------------------------------------------

_unvalidated: set[str] = set()  # node ids of the tests whose schema step was skipped


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[pytest.TestReport]:
    report: pytest.TestReport = yield
    if xsd.take_steps_skipped():  # during this phase (setup, call or teardown) of this test
        report.user_properties.append((SCHEMA_SKIPPED, xsd.SKIP_REASON))
    return report


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    # Runs where reports are gathered: with xdist, on the controller (user properties travel).
    if any(name == SCHEMA_SKIPPED for name, _ in report.user_properties):
        _unvalidated.add(report.nodeid)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _unvalidated:
        terminalreporter.write_sep(
            "-", f"schema validation skipped in {len(_unvalidated)} tests: {xsd.SKIP_REASON}"
        )


# -- Django and its databases ---------------------------------------------------------------------

DATABASES = {"sqlite": "default", "postgresql": "postgres"}  # test name -> Django alias


def _create_tables(alias: str) -> None:
    from django.apps import apps
    from django.db import connections

    with connections[alias].schema_editor() as editor:
        for model in apps.get_app_config("djangosite").get_models():
            editor.create_model(model)


@pytest.fixture(scope="session")
def django_sqlite() -> None:
    """Django set up for this process (`tests.djangosite.config`), the test app's tables in SQLite."""
    from .djangosite.config import configure

    configure()
    _create_tables("default")


@pytest.fixture(scope="session")
def django_postgres(django_sqlite: None) -> Iterator[None]:
    """A throwaway PostgreSQL server (`tests.postgres`) holding the test app's tables."""
    from django.db import connections

    from .djangosite.config import POSTGRES_SOCKETS
    from .postgres import postgres_server

    with postgres_server(POSTGRES_SOCKETS):
        _create_tables("postgres")
        yield
        connections["postgres"].close()


@pytest.fixture(params=list(DATABASES))
def database(request: pytest.FixtureRequest) -> str:
    """The alias of a database holding the test app's tables, all empty: SQLite, then PostgreSQL."""
    request.getfixturevalue("django_sqlite" if request.param == "sqlite" else "django_postgres")
    alias = DATABASES[request.param]
    empty_tables(alias)
    return alias


def empty_tables(alias: str) -> None:
    from django.apps import apps

    for model in apps.get_app_config("djangosite").get_models():
        model.objects.using(alias).all().delete()  # type: ignore[attr-defined]
