"""Every HTTP behaviour of the middleware, on both adapters (the ``make_client`` fixture)."""

from __future__ import annotations

import asyncio
import gzip
import logging
from collections.abc import Callable, Iterator
from http import HTTPStatus
from typing import Any
from wsgiref.util import setup_testing_defaults
from wsgiref.validate import validator

import pytest

from sitemap_middleware import ConfigurationError, EntryError, Sitemaps, Url

from ..conftest import BASE, Response, SitemapClient, dated_product, make_shop
from ..xsd import locs, validate

INDEX_URL = f"{BASE}/sitemap-index.xml"
XML_TYPE = "application/xml; charset=utf-8"

MakeClient = Callable[..., SitemapClient]


def shop(**options: Any) -> Sitemaps:
    """``products``: 5 URLs in pages of 2 (3 pages); ``pages``: 2 URLs (1 page)."""
    return make_shop(5, product=dated_product, products_page_size=2, **options)


def apps(routes: dict[str, tuple[int, bytes]] | None = None) -> dict[str, Any]:
    """A WSGI and an ASGI app answering ``routes`` (full path -> status, body) and, elsewhere,
    418 with ``app:<method> <full path>``, so a test can tell the app's answer from ours."""
    routes = routes or {}

    def answer(method: str, path: str) -> tuple[int, bytes]:
        return routes.get(path, (418, f"app:{method} {path}".encode()))

    def wsgi_app(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        status, body = answer(environ["REQUEST_METHOD"], environ["SCRIPT_NAME"] + environ["PATH_INFO"])
        headers = [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))]
        start_response(f"{status} {HTTPStatus(status).phrase}", headers)
        return [body]

    async def asgi_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        status, body = answer(scope["method"], scope["path"])
        headers = [(b"content-type", b"text/plain"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return {"wsgi_app": wsgi_app, "asgi_app": asgi_app}


def tokens(header: str | None) -> set[str]:
    """A comma-separated header's values, lowercased."""
    return {part.strip().lower() for part in (header or "").split(",") if part.strip()}


def robots_records(body: bytes) -> list[tuple[str, str]]:
    """robots.txt as (lowercase field, value) records, comments and blank lines dropped."""
    records = []
    for line in body.decode().splitlines():
        field, sep, value = line.split("#", 1)[0].partition(":")
        if sep:
            records.append((field.strip().lower(), value.strip()))
    return records


def assert_xml_document(response: Response) -> list[str]:
    assert response.status == 200
    assert response.headers["Content-Type"] == XML_TYPE
    assert "Content-Encoding" not in response.headers
    return locs(validate(response.body))


# -- what we serve ---------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/sitemap-index.xml", "/sitemap.xml"])
def test_index_is_served_at_both_names(make_client: MakeClient, path: str) -> None:
    assert assert_xml_document(make_client(shop()).get(path)) == [
        f"{BASE}/sitemap-products-1.xml",
        f"{BASE}/sitemap-products-2.xml",
        f"{BASE}/sitemap-products-3.xml",
        f"{BASE}/sitemap-pages-1.xml",
    ]


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        pytest.param("/sitemap-products-1.xml", ["/p/0", "/p/1"], id="first-page"),
        pytest.param("/sitemap-products-3.xml", ["/p/4"], id="last-page"),
        pytest.param("/sitemap-pages-1.xml", ["/", "/about"], id="other-section"),
    ],
)
def test_page_is_served(make_client: MakeClient, path: str, expected: list[str]) -> None:
    assert assert_xml_document(make_client(shop()).get(path)) == [BASE + loc for loc in expected]


@pytest.mark.parametrize("path", ["/sitemap-index.xml", "/sitemap.xml", "/sitemap-products-2.xml"])
def test_gz_file_is_the_same_document_as_a_gzip_file(make_client: MakeClient, path: str) -> None:
    client = make_client(shop())
    plain = client.get(path)
    gz = client.get(path + ".gz")
    assert gz.status == 200
    assert gz.headers["Content-Type"] == "application/gzip"
    assert "Content-Encoding" not in gz.headers
    assert gzip.decompress(gz.body) == plain.body
    validate(gzip.decompress(gz.body))


def test_gz_file_is_not_encoded_again_when_the_client_accepts_gzip(make_client: MakeClient) -> None:
    response = make_client(shop()).get("/sitemap-products-1.xml.gz", {"Accept-Encoding": "gzip"})
    assert response.headers["Content-Type"] == "application/gzip"
    assert "Content-Encoding" not in response.headers
    assert locs(validate(gzip.decompress(response.body))) == [f"{BASE}/p/0", f"{BASE}/p/1"]


@pytest.mark.parametrize(
    "accept_encoding",
    [
        pytest.param("gzip", id="gzip"),
        pytest.param("gzip, deflate, br", id="list"),
        pytest.param("br;q=1.0, gzip;q=0.5", id="lower-quality"),
        pytest.param("*", id="wildcard"),
        pytest.param("x-gzip", id="x-gzip"),  # RFC 9110 §8.4.1.3: the same coding
    ],
)
@pytest.mark.parametrize("path", ["/sitemap-index.xml", "/sitemap-products-1.xml"])
def test_xml_is_gzip_encoded_when_the_client_accepts_it(
    make_client: MakeClient, path: str, accept_encoding: str
) -> None:
    client = make_client(shop())
    response = client.get(path, {"Accept-Encoding": accept_encoding})
    assert response.status == 200
    assert response.headers["Content-Type"] == XML_TYPE
    assert response.headers["Content-Encoding"] == "gzip"
    assert "accept-encoding" in tokens(response.headers.get("Vary"))
    assert gzip.decompress(response.body) == client.get(path).body
    validate(gzip.decompress(response.body))


@pytest.mark.parametrize(
    "accept_encoding",
    [
        pytest.param("gzip;q=0", id="gzip-refused"),
        pytest.param("identity", id="identity"),
        pytest.param("br, deflate", id="other-codings"),
        pytest.param("*;q=0", id="wildcard-refused"),
        pytest.param("gzip;q=0, *", id="gzip-refused-wildcard-accepted"),
    ],
)
@pytest.mark.parametrize("path", ["/sitemap-index.xml", "/sitemap-products-1.xml"])
def test_xml_is_plain_when_the_client_refuses_gzip(
    make_client: MakeClient, path: str, accept_encoding: str
) -> None:
    response = make_client(shop()).get(path, {"Accept-Encoding": accept_encoding})
    assert_xml_document(response)
    assert "accept-encoding" in tokens(response.headers.get("Vary"))


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH"])
@pytest.mark.parametrize(
    "path",
    ["/sitemap-index.xml", "/sitemap.xml.gz", "/sitemap-products-1.xml", "/sitemap-products-9.xml"],
)
def test_other_methods_on_our_paths_get_405_with_allow(
    make_client: MakeClient, path: str, method: str
) -> None:
    response = make_client(shop()).request(method, path)
    assert response.status == 405
    assert tokens(response.headers.get("Allow")) == {"get", "head"}


@pytest.mark.parametrize(
    ("path", "content_type"),
    [
        pytest.param("/sitemap-index.xml", XML_TYPE, id="index"),
        pytest.param("/sitemap-products-2.xml", XML_TYPE, id="page"),
        pytest.param("/sitemap-products-2.xml.gz", "application/gzip", id="gz-file"),
    ],
)
def test_head_gets_the_headers_and_no_body(make_client: MakeClient, path: str, content_type: str) -> None:
    response = make_client(shop()).request("HEAD", path)
    assert response.status == 200
    assert response.headers["Content-Type"] == content_type
    assert response.body == b""


@pytest.mark.parametrize(
    "path",
    [
        pytest.param("/sitemap-products-0.xml", id="page-0"),
        pytest.param("/sitemap-products-01.xml", id="leading-zero"),
        pytest.param("/sitemap-products-00.xml", id="zeros"),
        pytest.param("/sitemap-products-4.xml", id="one-past-the-last"),
        pytest.param("/sitemap-products-99.xml", id="far-out-of-range"),
        pytest.param("/sitemap-products-12345678901.xml", id="absurd-number"),
        pytest.param("/sitemap-products-4.xml.gz", id="out-of-range-gz"),
        pytest.param("/sitemap-pages-2.xml", id="out-of-range-other-section"),
    ],
)
def test_bad_page_of_a_registered_section_is_404(make_client: MakeClient, path: str) -> None:
    client = make_client(shop(), **apps())
    assert client.get(path).status == 404
    assert client.request("HEAD", path).status == 404


@pytest.mark.parametrize(
    "path",
    [
        pytest.param("/other", id="other-path"),
        pytest.param("/", id="root"),
        pytest.param("/sitemap-foo-1.xml", id="unregistered-section"),
        pytest.param("/sitemap-foo-1.xml.gz", id="unregistered-section-gz"),
        pytest.param("/sitemap-product-1.xml", id="section-name-prefix"),
        pytest.param("/sitemap-products.xml", id="no-page-number"),
        pytest.param("/sitemap-products-1.xml/..", id="dot-segment-after-page"),
        pytest.param("//sitemap-index.xml", id="double-slash"),
        pytest.param("/sitemap-index.xml/", id="trailing-slash"),
        pytest.param("/sitemap-products-1.xmlx", id="extension-suffix"),
        pytest.param("/sitemap-products-1.XML", id="uppercase-extension"),
        pytest.param("/Sitemap.xml", id="uppercase-index"),
        pytest.param("/sitemap-products-1.xml.gz.gz", id="double-gz"),
        pytest.param("/robots.txt/", id="robots-trailing-slash"),
    ],
)
def test_paths_we_do_not_own_reach_the_app(make_client: MakeClient, path: str) -> None:
    response = make_client(shop(), **apps()).get(path)
    assert (response.status, response.body) == (418, f"app:GET {path}".encode())


def test_wsgi_path_we_do_not_own_reaches_the_app_with_the_same_environ_and_start_response() -> None:
    calls: list[tuple[Any, Any]] = []

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        calls.append((environ, start_response))
        return []

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
        raise AssertionError("the app never calls it here")

    environ: dict[str, Any] = {"SCRIPT_NAME": "", "PATH_INFO": "/sitemap-foo-1.xml", "QUERY_STRING": ""}
    setup_testing_defaults(environ)
    snapshot = dict(environ)
    assert shop().wsgi(app)(environ, start_response) == []
    [(seen_environ, seen_start_response)] = calls
    assert seen_environ is environ
    assert seen_environ == snapshot
    assert seen_start_response is start_response


def test_other_methods_on_paths_we_do_not_own_reach_the_app(make_client: MakeClient) -> None:
    response = make_client(shop(), **apps()).request("POST", "/sitemap-foo-1.xml")
    assert (response.status, response.body) == (418, b"app:POST /sitemap-foo-1.xml")


# -- robots.txt ------------------------------------------------------------------------------------

ROBOTS = b"User-agent: *\nDisallow: /cart\n"


@pytest.mark.parametrize(
    "robots",
    [
        pytest.param(ROBOTS, id="trailing-newline"),
        pytest.param(ROBOTS.rstrip(b"\n"), id="no-trailing-newline"),
        pytest.param(ROBOTS.replace(b"\n", b"\r\n"), id="crlf"),
        pytest.param(ROBOTS + b"\n", id="trailing-blank-line"),
    ],
)
def test_robots_txt_is_the_apps_plus_one_sitemap_line(make_client: MakeClient, robots: bytes) -> None:
    response = make_client(shop(), **apps({"/robots.txt": (200, robots)})).get("/robots.txt")
    assert response.status == 200
    assert response.body.startswith(robots)
    assert robots_records(response.body) == [*robots_records(robots), ("sitemap", INDEX_URL)]


def test_robots_txt_that_names_the_index_is_left_alone(make_client: MakeClient) -> None:
    robots = ROBOTS + b"\nSitemap: " + INDEX_URL.encode() + b"\n"
    response = make_client(shop(), **apps({"/robots.txt": (200, robots)})).get("/robots.txt")
    assert (response.status, response.body) == (200, robots)


def test_robots_txt_keeps_the_apps_other_sitemap_lines(make_client: MakeClient) -> None:
    robots = ROBOTS + b"Sitemap: https://shop.example/legacy.xml\n"
    response = make_client(shop(), **apps({"/robots.txt": (200, robots)})).get("/robots.txt")
    sitemaps = [value for field, value in robots_records(response.body) if field == "sitemap"]
    assert sitemaps == ["https://shop.example/legacy.xml", INDEX_URL]


def test_robots_txt_is_a_minimal_allow_all_when_the_app_has_none(make_client: MakeClient) -> None:
    response = make_client(shop(), **apps({"/robots.txt": (404, b"not here")})).get("/robots.txt")
    assert response.status == 200
    assert response.headers["Content-Type"].startswith("text/plain")
    records = robots_records(response.body)
    assert ("user-agent", "*") in records
    assert not [value for field, value in records if field == "disallow" and value]
    assert [value for field, value in records if field == "sitemap"] == [INDEX_URL]


@pytest.mark.parametrize("status", [403, 500, 503])
def test_robots_txt_error_from_the_app_passes_through(make_client: MakeClient, status: int) -> None:
    response = make_client(shop(), **apps({"/robots.txt": (status, b"app says no")})).get("/robots.txt")
    assert (response.status, response.body) == (status, b"app says no")


def test_head_robots_txt_gets_the_headers_and_no_body(make_client: MakeClient) -> None:
    client = make_client(shop(), **apps({"/robots.txt": (200, ROBOTS)}))
    response = client.request("HEAD", "/robots.txt")
    assert response.status == 200
    assert response.body == b""
    assert response.headers["Content-Length"] == str(len(client.get("/robots.txt").body))


def test_post_robots_txt_reaches_the_app(make_client: MakeClient) -> None:
    response = make_client(shop(), **apps({"/robots.txt": (200, ROBOTS)})).request("POST", "/robots.txt")
    assert (response.status, response.body) == (200, ROBOTS)


# -- mount prefix ----------------------------------------------------------------------------------


def test_mounted_index_lists_pages_under_the_mount(make_client: MakeClient) -> None:
    client = make_client(shop(), mount="/shop")
    assert assert_xml_document(client.get("/sitemap-index.xml")) == [
        f"{BASE}/shop/sitemap-products-1.xml",
        f"{BASE}/shop/sitemap-products-2.xml",
        f"{BASE}/shop/sitemap-products-3.xml",
        f"{BASE}/shop/sitemap-pages-1.xml",
    ]


def test_mounted_page_is_served_below_the_mount(make_client: MakeClient) -> None:
    client = make_client(shop(), mount="/shop")
    # The provider's paths are the mounted app's own, so they live below the mount too.
    expected = [f"{BASE}/shop/p/0", f"{BASE}/shop/p/1"]
    assert assert_xml_document(client.get("/sitemap-products-1.xml")) == expected


def test_mounted_robots_txt_names_the_index_under_the_mount(make_client: MakeClient) -> None:
    client = make_client(shop(), mount="/shop", **apps({"/shop/robots.txt": (404, b"")}))
    records = robots_records(client.get("/robots.txt").body)
    assert [value for field, value in records if field == "sitemap"] == [f"{BASE}/shop/sitemap-index.xml"]


def test_mounted_paths_we_do_not_own_reach_the_app(make_client: MakeClient) -> None:
    response = make_client(shop(), mount="/shop", **apps()).get("/sitemap-foo-1.xml")
    assert (response.status, response.body) == (418, b"app:GET /shop/sitemap-foo-1.xml")


def test_mount_prefix_is_percent_encoded_in_emitted_urls(make_client: MakeClient) -> None:
    client = make_client(shop(), mount="/caf\u00e9 shop")
    assert locs(validate(client.get("/sitemap-index.xml").body))[0] == (
        f"{BASE}/caf%C3%A9%20shop/sitemap-products-1.xml"
    )


# -- providers -------------------------------------------------------------------------------------


def test_sync_provider_runs_off_the_event_loop(make_client: MakeClient) -> None:
    loops: list[bool] = []

    def provider() -> list[str]:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            loops.append(False)
        else:
            loops.append(True)
        return ["/"]

    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.provider("pages")(provider)
    assert assert_xml_document(make_client(sitemaps).get("/sitemap-pages-1.xml")) == [f"{BASE}/"]
    assert loops == [False]


async def _async_provider() -> Iterator[str]:  # an awaitable of a sync iterable
    return iter(["/a", "/b"])


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        pytest.param("/sitemap-index.xml", [f"{BASE}/sitemap-pages-1.xml"], id="index"),
        pytest.param("/sitemap-pages-1.xml", [f"{BASE}/a", f"{BASE}/b"], id="page"),
    ],
)
def test_async_provider_is_served(make_client: MakeClient, path: str, expected: list[str]) -> None:
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.provider("pages")(_async_provider)
    assert assert_xml_document(make_client(sitemaps).get(path)) == expected


def _raise_at_once() -> list[str]:
    raise RuntimeError("database is down")


def _raise_before_first_url() -> Iterator[str]:
    raise RuntimeError("database is down")
    yield "/never"


async def _async_raise() -> list[str]:
    raise RuntimeError("database is down")


def _not_entries() -> int:
    return 42


@pytest.mark.parametrize(
    "provider",
    [
        pytest.param(_raise_at_once, id="raises"),
        pytest.param(_raise_before_first_url, id="generator-raises"),
        pytest.param(_async_raise, id="async-raises"),
        pytest.param(_not_entries, id="returns-a-non-iterable"),
    ],
)
@pytest.mark.parametrize(
    "path",
    ["/sitemap-index.xml", "/sitemap-broken-1.xml", "/sitemap-broken-2.xml", "/sitemap-broken-1.xml.gz"],
)
def test_provider_failing_before_its_first_url_gets_503_with_retry_after(
    make_client: MakeClient, path: str, provider: Callable[[], object]
) -> None:
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.add_provider("broken", provider)  # type: ignore[arg-type]
    response = make_client(sitemaps).get(path)
    assert response.status == 503
    assert int(response.headers["Retry-After"]) > 0
    assert not response.body.startswith(b"<?xml")


def test_provider_failure_is_logged(make_client: MakeClient, caplog: pytest.LogCaptureFixture) -> None:
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.provider("broken")(_raise_at_once)
    with caplog.at_level(logging.ERROR, logger="sitemap_middleware"):
        make_client(sitemaps).get("/sitemap-broken-1.xml")
    [record] = [r for r in caplog.records if r.name == "sitemap_middleware" and r.levelno >= logging.ERROR]
    assert "database is down" in record.getMessage()


def test_provider_failure_is_counted(make_client: MakeClient) -> None:
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.provider("broken")(_raise_at_once)
    client = make_client(sitemaps)
    client.get("/sitemap-broken-1.xml")
    client.get("/sitemap-broken-1.xml")
    assert sitemaps.stats.snapshot()["broken"]["provider_errors"] == 2


def test_provider_that_recovers_is_served_after_a_503(make_client: MakeClient) -> None:
    calls: list[int] = []

    def flaky() -> list[str]:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("database is down")
        return ["/"]

    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.provider("pages")(flaky)
    client = make_client(sitemaps)
    assert client.get("/sitemap-pages-1.xml").status == 503
    assert assert_xml_document(client.get("/sitemap-pages-1.xml")) == [f"{BASE}/"]


# -- bad entries -----------------------------------------------------------------------------------


def test_skipped_entry_is_logged_with_section_and_reason(
    make_client: MakeClient, caplog: pytest.LogCaptureFixture
) -> None:
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.provider("products")(lambda: ["/p/1", "https://evil.example/p/2"])
    with caplog.at_level(logging.WARNING, logger="sitemap_middleware"):
        assert assert_xml_document(make_client(sitemaps).get("/sitemap-products-1.xml")) == [f"{BASE}/p/1"]
    [record] = [r for r in caplog.records if r.name == "sitemap_middleware"]
    assert record.levelno == logging.WARNING
    assert (record.sitemap_section, record.sitemap_reason) == ("products", "other host")  # type: ignore[attr-defined]
    assert "products" in record.getMessage()
    assert "other host" in record.getMessage()


def test_skipped_entry_is_counted_once_whether_or_not_the_index_was_planned(make_client: MakeClient) -> None:
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.provider("products")(lambda: ["/p/1", "https://evil.example/p/2", Url("/p/3", priority=2)])
    client = make_client(sitemaps)
    validate(client.get("/sitemap-index.xml").body)
    assert assert_xml_document(client.get("/sitemap-products-1.xml")) == [f"{BASE}/p/1"]
    counters = sitemaps.stats.snapshot()["products"]
    assert (counters["skipped:other host"], counters["skipped:invalid priority"]) == (1, 1)


@pytest.mark.parametrize("path", ["/sitemap-index.xml", "/sitemap-products-1.xml"])
def test_strict_mode_raises_entry_error_on_a_bad_entry(make_client: MakeClient, path: str) -> None:
    sitemaps = Sitemaps(base_url=BASE, strict=True)
    sitemaps.provider("products")(lambda: ["/p/1", "https://evil.example/p/2"])
    client = make_client(sitemaps)
    with pytest.raises(EntryError, match="other host"):
        client.get(path)


# -- streaming -------------------------------------------------------------------------------------


def test_wsgi_page_streams_before_the_provider_finishes() -> None:
    finished: list[bool] = []

    def slow() -> Iterator[str]:
        yield from (f"/p/{n}" for n in range(5000))
        finished.append(True)

    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.provider("products")(slow)
    app = validator(sitemaps.wsgi(apps()["wsgi_app"]))
    environ: dict[str, Any] = {"SCRIPT_NAME": "", "PATH_INFO": "/sitemap-products-1.xml", "QUERY_STRING": ""}
    setup_testing_defaults(environ)
    body = app(environ, lambda status, headers, exc_info=None: lambda data: None)
    try:
        chunks = iter(body)
        first = next(chunks)
        assert first.startswith(b"<?xml")
        assert finished == []
        rest = b"".join(chunks)
    finally:
        body.close()  # type: ignore[attr-defined]
    assert finished == [True]
    assert len(locs(validate(first + rest))) == 5000


# -- configuration ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("Products", id="uppercase"),
        pytest.param("", id="empty"),
        pytest.param("blog posts", id="space"),
        pytest.param("blog/posts", id="slash"),
        pytest.param("blog.posts", id="dot"),
        pytest.param("-posts", id="leading-dash"),
        pytest.param("posts-", id="trailing-dash"),
        pytest.param("blog--posts", id="double-dash"),
        pytest.param("caf\u00e9", id="non-ascii"),
        pytest.param("\u0661", id="non-ascii-digit"),
        pytest.param(5, id="not-a-string"),
    ],
)
def test_invalid_section_name_is_a_configuration_error(name: Any) -> None:
    with pytest.raises(ConfigurationError):
        Sitemaps(base_url=BASE).provider(name)(list)


@pytest.mark.parametrize("name", ["products", "blog-posts", "blog_posts", "a", "2024", "x-1-y"])
def test_valid_section_name_is_registered(name: str) -> None:
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.provider(name)(list)
    assert sitemaps.sections == (name,)


def test_hyphenated_section_is_served_at_its_page_path(make_client: MakeClient) -> None:
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.provider("blog-posts-2")(lambda: ["/b/1"])
    client = make_client(sitemaps)
    assert assert_xml_document(client.get("/sitemap-index.xml")) == [f"{BASE}/sitemap-blog-posts-2-1.xml"]
    assert assert_xml_document(client.get("/sitemap-blog-posts-2-1.xml")) == [f"{BASE}/b/1"]


BAD_PAGE_SIZES = [
    pytest.param(0, id="zero"),
    pytest.param(-1, id="negative"),
    pytest.param(50_001, id="over-50000"),
    pytest.param(True, id="bool"),
    pytest.param(10.0, id="float"),
    pytest.param("10", id="string"),
    pytest.param(None, id="none"),
]


@pytest.mark.parametrize("page_size", BAD_PAGE_SIZES)
def test_invalid_default_page_size_is_a_configuration_error(page_size: Any) -> None:
    with pytest.raises(ConfigurationError):
        Sitemaps(base_url=BASE, page_size=page_size)


@pytest.mark.parametrize("page_size", [p for p in BAD_PAGE_SIZES if p.id != "none"])
def test_invalid_section_page_size_is_a_configuration_error(page_size: Any) -> None:
    with pytest.raises(ConfigurationError):
        Sitemaps(base_url=BASE).provider("pages", page_size=page_size)(list)


@pytest.mark.parametrize(
    "base_url",
    ["shop.example", "ftp://shop.example", "https://shop.example?x=1", "https://u:p@shop.example", "", None],
)
def test_invalid_base_url_is_a_configuration_error(base_url: Any) -> None:
    with pytest.raises(ConfigurationError):
        Sitemaps(base_url=base_url)


def test_duplicate_section_is_a_configuration_error() -> None:
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.provider("pages")(list)
    with pytest.raises(ConfigurationError):
        sitemaps.provider("pages")(tuple)


def test_provider_that_is_not_callable_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError):
        Sitemaps(base_url=BASE).add_provider("pages", ["/"])  # type: ignore[arg-type]


def test_configuration_error_is_a_value_error() -> None:
    assert issubclass(ConfigurationError, ValueError)
