"""Hostile and odd inputs, bounded: log lines, hosts, an If-Modified-Since from the future."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from datetime import UTC

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lxml import etree
from werkzeug.http import http_date, parse_date

from sitemap_middleware import ConfigurationError, EntryError, Sitemaps, Url
from sitemap_middleware.protocol.entries import Normaliser
from sitemap_middleware.protocol.uris import Site, remove_dot_segments
from sitemap_middleware.stats import Stats
from sitemap_middleware.web.rules import Validators, mount_prefix, not_modified
from sitemap_middleware.web.sites import Sites

from .conftest import BASE, SitemapClient
from .properties import Outcomes

HUGE = "9" * 5_000_000  # a 5 MB lastmod or changefreq, as a broken export produces
MAX_LOG_LINE = 1024
PROPERTY = settings(max_examples=300, deadline=None, database=None)

MakeClient = Callable[..., SitemapClient]


# -- log lines stay small ----------------------------------------------------------------------


def skip_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "sitemap_middleware" and r.levelno == logging.WARNING]


@pytest.mark.parametrize(
    "entry",
    [
        pytest.param(Url("/p/1", lastmod=HUGE), id="lastmod"),
        pytest.param(Url("/p/1", changefreq=HUGE), id="changefreq"),
    ],
)
def test_skip_log_line_is_bounded_and_names_the_reason(entry: Url, caplog: pytest.LogCaptureFixture) -> None:
    with pytest.raises(EntryError) as caught:
        Normaliser(Site.parse(BASE))(entry)
    with caplog.at_level(logging.WARNING, logger="sitemap_middleware"):
        Stats().skip("products", caught.value, entry)
    [record] = skip_records(caplog)
    message = record.getMessage()
    assert len(message) < MAX_LOG_LINE
    assert caught.value.reason in message
    assert "products" in message


def test_skip_log_record_holds_no_huge_argument(caplog: pytest.LogCaptureFixture) -> None:
    # A structured handler may serialise the arguments themselves, not just the message.
    entry = Url("/p/1", lastmod=HUGE)
    with caplog.at_level(logging.WARNING, logger="sitemap_middleware"):
        Stats().skip("products", EntryError("invalid lastmod", repr(HUGE)), entry)
    [record] = skip_records(caplog)
    assert all(len(str(arg)) < MAX_LOG_LINE for arg in record.args or ())


def test_short_skip_log_line_is_quoted_whole(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="sitemap_middleware"):
        Stats().skip("products", EntryError("invalid changefreq", "'sometimes'"), Url("/p/1"))
    [record] = skip_records(caplog)
    assert record.getMessage() == (
        "sitemap section 'products': skipped entry Url(loc='/p/1', lastmod=None, changefreq=None, "
        "priority=None): invalid changefreq: 'sometimes'"
    )


def test_served_page_logs_a_huge_bad_lastmod_in_a_bounded_line(
    make_client: MakeClient, caplog: pytest.LogCaptureFixture
) -> None:
    sitemaps = Sitemaps(base_url=BASE)
    sitemaps.provider("products")(lambda: ["/p/1", Url("/p/2", lastmod=HUGE)])
    with caplog.at_level(logging.WARNING, logger="sitemap_middleware"):
        assert make_client(sitemaps).get("/sitemap-products-1.xml").status == 200
    records = skip_records(caplog)
    assert records
    for record in records:
        message = record.getMessage()
        assert len(message) < MAX_LOG_LINE
        assert "invalid lastmod" in message


# -- hosts that XML and URLs can carry ---------------------------------------------------------

# RFC 3986 §3 (absolute-URI without query or fragment), with the host narrowed to what we
# accept: a reg-name or IPv4 of unreserved characters, or a bracketed IPv6 literal.
_PCHAR = r"(?:[A-Za-z0-9\-._~!$&'()*+,;=:@]|%[0-9A-Fa-f]{2})"
ABSOLUTE_ROOT = re.compile(rf"https?://(?:[a-z0-9\-._~]+|\[[0-9a-f:.]+\])(?::[0-9]+)?(?:/{_PCHAR}*)*")


def assert_root_is_a_valid_url_in_xml(site: Site) -> None:
    """The root, written as a loc is (``&`` escaped), parses back to itself and is RFC 3986."""
    text = site.root.replace("&", "&amp;")
    element = etree.fromstring(f"<loc>{text}</loc>".encode())
    assert element.text == site.root
    assert ABSOLUTE_ROOT.fullmatch(site.root), site.root


@pytest.mark.parametrize(
    "base_url",
    [
        pytest.param("https://a<b.example", id="less-than"),
        pytest.param("https://a>b.example", id="greater-than"),
        pytest.param("https://a&b.example", id="ampersand"),
        pytest.param('https://a"b.example', id="double-quote"),
        pytest.param("https://a'b.example", id="single-quote"),
        pytest.param("https://a b.example", id="space"),
        pytest.param("https://shop.exa\tmple", id="tab-removed-by-urlsplit"),
        pytest.param("https://shop.example\n", id="trailing-newline"),
        pytest.param(" https://shop.example", id="leading-space"),
        pytest.param("https://a%3cb.example", id="percent-escape"),
        pytest.param("https://a!b.example", id="sub-delim"),
        pytest.param("https://a\\b.example", id="backslash"),
        pytest.param("https://\u3000a.example", id="ideographic-space"),
        pytest.param("https://[v1.abc]", id="ipvfuture-loses-its-brackets"),
        pytest.param("https://[::1%25eth0]", id="ipv6-zone-id"),
    ],
)
def test_base_url_with_a_host_xml_or_uris_cannot_carry_is_refused(base_url: str) -> None:
    with pytest.raises(ConfigurationError):
        Site.parse(base_url)


@pytest.mark.parametrize(
    ("base_url", "root"),
    [
        pytest.param("https://Shop.Example", "https://shop.example", id="reg-name"),
        pytest.param("https://a-b_c~d.example:8443/x", "https://a-b_c~d.example:8443/x", id="unreserved"),
        pytest.param("http://192.0.2.1:8080", "http://192.0.2.1:8080", id="ipv4"),
        pytest.param("http://[2001:DB8::1]", "http://[2001:db8::1]", id="ipv6"),
        pytest.param("http://[::ffff:192.0.2.1]", "http://[::ffff:192.0.2.1]", id="ipv6-with-ipv4-tail"),
        pytest.param("https://b\u00fccher.example", "https://xn--bcher-kva.example", id="idn"),
    ],
)
def test_base_url_with_a_valid_host_is_accepted(base_url: str, root: str) -> None:
    site = Site.parse(base_url)
    assert site.root == root
    assert_root_is_a_valid_url_in_xml(site)


HOST_CHARACTERS = [*"<>&\"' \t\n%!$()*+,;=[]:@/?#\\", "\u3000", "\u00fc", "\x00", "\x85"]
_host_text = st.lists(st.one_of(st.characters(), st.sampled_from(HOST_CHARACTERS))).map("".join)
base_urls = st.one_of(
    st.text(),
    st.builds(str.__add__, st.sampled_from(["http://", "https://", "HTTPS://", "https://["]), _host_text),
    st.builds(
        "{}://{}{}".format,
        st.sampled_from(["http", "https"]),
        _host_text,
        st.sampled_from(["", "/", ":8080", "/shop/", "]:80"]),
    ),
)
valid_hosts = st.from_regex(r"[A-Za-z0-9](?:[A-Za-z0-9\-._~]{0,20}[A-Za-z0-9])?", fullmatch=True)


def test_any_base_url_is_refused_or_a_valid_url_in_xml() -> None:
    outcomes = Outcomes()

    @PROPERTY
    @given(base_url=base_urls)
    def check(base_url: str) -> None:
        try:
            site = Site.parse(base_url)
        except ConfigurationError:
            outcomes.refused()
            return
        assert_root_is_a_valid_url_in_xml(site)
        outcomes.accepted()

    check()
    outcomes.assert_both()


@PROPERTY
@given(host=valid_hosts, port=st.one_of(st.none(), st.integers(1, 65535)))
def test_any_unreserved_host_and_port_is_accepted(host: str, port: int | None) -> None:
    authority = host if port is None else f"{host}:{port}"
    site = Site.parse(f"https://{authority}/shop")
    assert site.host == (authority.lower() if port != 443 else host.lower())
    assert_root_is_a_valid_url_in_xml(site)


@pytest.mark.parametrize(
    "hosts",
    [
        pytest.param(["a<b.example"], id="list-less-than"),
        pytest.param(["shop.example.de/other-path"], id="list-with-a-path"),
        pytest.param(["shop.example.de?x=1"], id="list-with-a-query"),
        pytest.param(["user@shop.example.de"], id="list-with-credentials"),
        pytest.param([""], id="list-empty-host"),
        pytest.param({"a<b.example": "https://shop.example.de"}, id="mapping-key-less-than"),
        pytest.param({"shop.example.de/x": "https://shop.example.de"}, id="mapping-key-with-a-path"),
        pytest.param({"shop.example.de": "https://a<b.example"}, id="mapping-url-less-than"),
    ],
)
def test_allow_listed_host_xml_or_uris_cannot_carry_is_refused(hosts: object) -> None:
    with pytest.raises(ConfigurationError):
        Sites(BASE, hosts)  # type: ignore[arg-type]


def test_any_allow_listed_host_is_refused_or_valid_in_xml() -> None:
    outcomes = Outcomes()

    @PROPERTY
    @given(host=_host_text)
    def check(host: str) -> None:
        for hosts in ([host], {host: f"https://{host}"}):
            try:
                sites = Sites(BASE, hosts)
            except ConfigurationError:
                outcomes.refused()
                continue
            for site in sites.all:
                assert_root_is_a_valid_url_in_xml(site)
            outcomes.accepted()

    check()
    outcomes.assert_both()


@PROPERTY
@given(host=valid_hosts)
def test_any_unreserved_allow_listed_host_is_accepted(host: str) -> None:
    sites = Sites(BASE + "/shop", [host])
    assert sites.pick({"host": host}) == Site("https", host.lower(), "/shop")


# -- If-Modified-Since from the future -----------------------------------------------------------

NOW = 1_717_200_000.0  # 2024-06-01T00:00:00Z
DAY = 86_400
LAST_MODIFIED = Validators(None, int(NOW) - DAY)


@pytest.mark.parametrize(
    ("since", "expected"),
    [
        pytest.param(NOW + DAY, False, id="a-day-ahead-ignored"),
        pytest.param(NOW + 1, False, id="a-second-ahead-ignored"),
        pytest.param(NOW, True, id="now-compared"),
        pytest.param(NOW - DAY, True, id="equal-to-last-modified"),
        pytest.param(NOW - DAY - 1, False, id="before-last-modified"),
    ],
)
def test_if_modified_since_later_than_now_is_ignored(since: float, expected: bool) -> None:
    # RFC 9110 §13.1.3: a recipient must ignore a date later than its own clock's.
    assert not_modified(LAST_MODIFIED, None, http_date(since), now=NOW) is expected


def test_if_modified_since_is_checked_against_the_real_clock_by_default() -> None:
    tomorrow = http_date(time.time() + DAY)
    assert not not_modified(Validators(None, int(time.time()) - DAY), None, tomorrow)


def test_if_none_match_ignores_the_clock() -> None:
    assert not_modified(Validators('"a"', int(NOW)), '"a"', http_date(NOW + DAY), now=NOW)


@PROPERTY
@given(header=st.one_of(st.text(), st.datetimes().map(lambda d: http_date(d.replace(tzinfo=UTC)))))
def test_any_if_modified_since_gives_an_answer_and_a_future_one_never_304(header: str) -> None:
    answer = not_modified(LAST_MODIFIED, None, header, now=NOW)
    since = parse_date(header)
    assert answer is (since is not None and LAST_MODIFIED.last_modified <= since.timestamp() <= NOW)


# -- dot-segments and fragments outside locs ---------------------------------------------------


@pytest.mark.parametrize(
    ("script_name", "prefix"),
    [
        pytest.param("", "", id="root"),
        pytest.param("/shop/", "/shop", id="trailing-slash"),
        pytest.param("/caf\u00e9 shop", "/caf%C3%A9%20shop", id="quoted"),
        pytest.param("/a/../shop", "/shop", id="dot-dot"),
        pytest.param("/shop/.", "/shop", id="trailing-dot"),
        pytest.param("/a/..", "", id="dot-dot-to-the-root"),
        pytest.param("/q?x#y", "/q%3Fx%23y", id="query-and-fragment-marks-are-data"),
    ],
)
def test_mount_prefix_is_a_clean_uri_path(script_name: str, prefix: str) -> None:
    assert mount_prefix(script_name) == prefix


_DOT_SEGMENT = re.compile(r"(?:\.|%2e){1,2}", re.IGNORECASE)
paths = st.lists(st.sampled_from(["/", ".", "..", "%2e", "%2E", "a", "b.", "%41"]), max_size=12).map(
    lambda parts: "/" + "".join(parts)
)


@PROPERTY
@given(path=paths, query=st.sampled_from(["", "?", "?x=/../y"]))
def test_remove_dot_segments_leaves_none_and_keeps_the_query(path: str, query: str) -> None:
    cleaned = remove_dot_segments(path + query)
    cleaned_path, mark, cleaned_query = cleaned.partition("?")
    assert cleaned_path.startswith("/")
    assert not any(_DOT_SEGMENT.fullmatch(segment) for segment in cleaned_path.split("/"))
    assert mark + cleaned_query == query
    assert remove_dot_segments(cleaned) == cleaned


def test_remove_dot_segments_follows_the_rfc_3986_examples() -> None:
    # RFC 3986 §5.2.4's two worked examples.
    assert remove_dot_segments("/a/b/c/./../../g") == "/a/g"
    assert remove_dot_segments("/mid/content=5/../6") == "/mid/6"
