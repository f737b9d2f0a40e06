"""``validate --map-origin PUBLIC=LOCAL``: a staging server checked as it will be crawled.

Each server here is real, on 127.0.0.1, and its sitemaps name a public origin under ``.invalid``
(RFC 2606: it never resolves), so any request that went to the public origin would fail.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sitemap_middleware.cli import main
from sitemap_middleware.cli.origins import OriginMap, parse_mapping

from ..conftest import make_shop, plain_wsgi_app
from ..servers import werkzeug_serving

PUBLIC = "https://shop.invalid"
NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'

pytestmark = pytest.mark.server


def run(*argv: str) -> tuple[int, list[str]]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue().splitlines() + err.getvalue().splitlines()


def documents(served: dict[str, str], seen: list[str]) -> Callable[..., Iterable[bytes]]:
    """A WSGI app answering each path of ``served`` with its text (404 otherwise); ``seen``
    gets each request's Host and path."""

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        seen.append(f"{environ['HTTP_HOST']}{environ['PATH_INFO']}")
        body = served.get(environ["PATH_INFO"])
        if body is None:
            start_response("404 Not Found", [("Content-Type", "text/plain")])
            return [b"not found"]
        kind = "text/plain" if environ["PATH_INFO"].endswith(".txt") else "application/xml"
        start_response("200 OK", [("Content-Type", kind)])
        return [body.encode()]

    return app


def test_a_staging_server_naming_the_public_origin_validates_clean_from_it():
    with werkzeug_serving(make_shop(100, base_url=PUBLIC, page_size=40).wsgi(plain_wsgi_app)) as port:
        local = f"http://127.0.0.1:{port}"
        code, lines = run("validate", f"{local}/robots.txt", "--map-origin", f"{PUBLIC}={local}")
    assert code == 0, lines
    assert lines[-1] == "checked 6 files, 102 URLs: 0 problems, 0 warnings"


def test_without_the_mapping_the_public_origin_is_fetched_and_fails():
    with werkzeug_serving(make_shop(10, base_url=PUBLIC).wsgi(plain_wsgi_app)) as port:
        code, lines = run("validate", f"http://127.0.0.1:{port}/robots.txt", "--document-timeout", "10")
    assert code == 1, lines
    assert any(f"{PUBLIC}/sitemap-index.xml cannot be fetched" in line for line in lines), lines


def test_every_document_is_fetched_from_local_and_reported_as_public():
    seen: list[str] = []
    served = {
        "/robots.txt": f"User-agent: *\nSitemap: {PUBLIC}/sitemap-index.xml\n",
        "/sitemap-index.xml": (
            f'<?xml version="1.0"?>\n<sitemapindex {NS}>\n'
            f"<sitemap><loc>{PUBLIC}/sitemap-a.xml</loc></sitemap>\n"
            f"<sitemap><loc>{PUBLIC}/sitemap-gone.xml</loc></sitemap>\n</sitemapindex>\n"
        ),
        "/sitemap-a.xml": (
            f'<?xml version="1.0"?>\n<urlset {NS}>\n<url><loc>{PUBLIC}/p/1</loc></url>\n'
            f"<url><loc>{PUBLIC}/p/2</loc><priority>2</priority></url>\n</urlset>\n"
        ),
    }
    with werkzeug_serving(documents(served, seen)) as port:
        local = f"http://127.0.0.1:{port}"
        code, lines = run("validate", f"{PUBLIC}/robots.txt", "--map-origin", f"{PUBLIC}={local}")
    assert code == 1, lines
    assert lines[:-1] == [
        f"{PUBLIC}/sitemap-a.xml:4: priority '2' is not a number from 0.0 to 1.0",
        f"{PUBLIC}/sitemap-index.xml:4: {PUBLIC}/sitemap-gone.xml cannot be fetched: HTTP 404 Not Found",
    ]
    paths = ["/robots.txt", "/sitemap-index.xml", "/sitemap-a.xml", "/sitemap-gone.xml"]
    assert sorted(seen) == sorted(f"127.0.0.1:{port}{path}" for path in paths)


def test_a_local_starting_target_is_reported_as_public_too():
    seen: list[str] = []
    served = {"/robots.txt": "User-agent: *\nSitemap: /relative.xml\n"}
    with werkzeug_serving(documents(served, seen)) as port:
        local = f"http://127.0.0.1:{port}"
        code, lines = run("validate", f"{local}/robots.txt", "--map-origin", f"{PUBLIC}={local}")
    assert code == 1
    assert lines[0] == f"{PUBLIC}/robots.txt:2: Sitemap: '/relative.xml' is not an absolute URL"


def test_a_redirect_on_the_local_server_is_followed_there():
    seen: list[str] = []
    body = f'<?xml version="1.0"?>\n<urlset {NS}>\n<url><loc>{PUBLIC}/p/1</loc></url>\n</urlset>\n'

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        seen.append(environ["PATH_INFO"])
        if environ["PATH_INFO"] == "/old.xml":  # an absolute Location on the public origin
            start_response("301 Moved Permanently", [("Location", f"{PUBLIC}/sitemap.xml")])
            return [b""]
        start_response("200 OK", [("Content-Type", "application/xml")])
        return [body.encode()]

    with werkzeug_serving(app) as port:
        local = f"http://127.0.0.1:{port}"
        code, lines = run("validate", f"{PUBLIC}/old.xml", "--map-origin", f"{PUBLIC}={local}")
    assert code == 0, lines
    assert seen == ["/old.xml", "/sitemap.xml"]


@pytest.mark.parametrize(
    ("mapping", "reason"),
    [
        pytest.param("https://shop.example", "not PUBLIC=LOCAL", id="no-equals"),
        pytest.param("https://shop.example=", "LOCAL must be an http(s) origin", id="no-local"),
        pytest.param("shop.example=http://127.0.0.1:8000", "PUBLIC must be an http(s)", id="no-scheme"),
        pytest.param("ftp://shop.example=http://127.0.0.1:8000", "PUBLIC must be an http", id="not-http"),
        pytest.param("https://shop.example/en=http://127.0.0.1:8000", "without a path", id="a-path"),
        pytest.param("https://shop.example=http://127.0.0.1:8000/x?y", "without a path", id="a-query"),
        pytest.param("https://user@shop.example=http://127.0.0.1:8000", "without user", id="userinfo"),
        pytest.param("https://shop.example=http://127.0.0.1:99999", "port out of range", id="port"),
    ],
)
def test_a_mapping_that_is_not_two_origins_is_a_usage_error(mapping, reason, capsys):
    with pytest.raises(SystemExit) as exited:
        main(["validate", "robots.txt", "--map-origin", mapping])
    assert exited.value.code == 2
    [line] = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert line.startswith("sitemap-middleware validate: error: argument --map-origin: ") and reason in line


def test_one_public_origin_mapped_twice_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exited:
        main(
            ["validate", "robots.txt", "--map-origin", "https://a.example=http://127.0.0.1:1",
             "--map-origin", "https://A.example:443=http://127.0.0.1:2"]
        )  # fmt: skip
    assert exited.value.code == 2
    assert "mapped twice" in capsys.readouterr().err


# -- the mapping itself, for any origins and URLs -------------------------------------------

hosts = st.from_regex(r"[a-z][a-z0-9-]{0,10}(\.[a-z][a-z0-9-]{0,10}){0,2}", fullmatch=True)
ports = st.none() | st.integers(1, 65535)
schemes = st.sampled_from(["http", "https"])
paths = st.from_regex(r"(/[A-Za-z0-9._~%-]{0,8}){0,3}(\?[a-z=&]{0,8})?", fullmatch=True)


def origin(scheme: str, host: str, port: int | None) -> str:
    return f"{scheme}://{host}" + ("" if port is None else f":{port}")


@given(schemes, hosts, ports, schemes, hosts, ports, paths)
def test_a_url_under_public_maps_to_local_and_back(ps, ph, pp, ls, lh, lp, path):
    public, local = origin(ps, ph, pp), origin(ls, lh, lp)
    origins = OriginMap([parse_mapping(f"{public}={local}")])
    assert origins.local(public + path) == local + path
    assert origins.public(local + path) == public + path


@given(schemes, hosts, ports, hosts, paths)
def test_a_url_on_another_origin_is_left_as_it_is(ps, ph, pp, other, path):
    origins = OriginMap([parse_mapping(f"{origin(ps, ph, pp)}=http://127.0.0.1:8000")])
    url = origin(ps, other + ".other", pp) + path
    assert origins.local(url) == url
    assert origins.public(url) == url


@given(hosts, paths)
def test_the_origin_matches_whatever_the_case_and_the_default_port(host, path):
    origins = OriginMap([parse_mapping(f"https://{host}=http://127.0.0.1:8000")])
    assert origins.local(f"HTTPS://{host.upper()}:443{path}") == f"http://127.0.0.1:8000{path}"
