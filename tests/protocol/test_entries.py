"""One entry in, one valid `NormalUrl` out (or an `EntryError` with the reason): entries.py."""

from __future__ import annotations

import math
import pickle
import re
import string
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sitemap_middleware import CHANGEFREQS, ConfigurationError, EntryError, Url
from sitemap_middleware.protocol.entries import Normaliser, NormalUrl, w3c_datetime
from sitemap_middleware.protocol.extensions import Extensions
from sitemap_middleware.protocol.hreflang import Localised
from sitemap_middleware.protocol.render import URLSET_HEAD, URLSET_TAIL
from sitemap_middleware.protocol.uris import Site

from ..conftest import BASE
from ..properties import Outcomes
from ..xsd import NS, lastmods, locs, validate

PROPERTY = settings(max_examples=200, deadline=None, database=None)


def normaliser(base_url: str = BASE) -> Normaliser:
    return Normaliser(Site.parse(base_url))


def urlset(*raws: object, normalise: Normaliser | None = None) -> bytes:
    """Raw entries as a whole urlset document, written as the page writer writes them."""
    element = (normalise or normaliser()).element
    return URLSET_HEAD + "".join(element(raw)[0] for raw in raws).encode() + URLSET_TAIL


def reason_of(func: Any, *args: Any) -> str:
    with pytest.raises(EntryError) as caught:
        func(*args)
    return caught.value.reason


# RFC 3986 §3 after the authority: path-abempty [ "?" query ] [ "#" fragment ].
_PCHAR = r"(?:[A-Za-z0-9\-._~!$&'()*+,;=:@]|%[0-9A-Fa-f]{2})"


def rfc3986_on_origin(origin: str) -> re.Pattern[str]:
    """An absolute RFC 3986 URI whose scheme and authority are exactly ``origin``."""
    tail = rf"(?:/{_PCHAR}*)*(?:\?(?:{_PCHAR}|[/?])*)?(?:#(?:{_PCHAR}|[/?])*)?"
    return re.compile(re.escape(origin) + tail)


# -- locs ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        pytest.param("/p/blue-shoe", f"{BASE}/p/blue-shoe", id="relative-path"),
        pytest.param("/", f"{BASE}/", id="root"),
        pytest.param("p/blue-shoe", f"{BASE}/p/blue-shoe", id="relative-without-slash"),
        pytest.param("?q=1", f"{BASE}/?q=1", id="query-only"),
        pytest.param(f"{BASE}/p/1", f"{BASE}/p/1", id="absolute-same-origin"),
        pytest.param(BASE, f"{BASE}/", id="absolute-origin-without-path"),
        pytest.param("HTTPS://SHOP.EXAMPLE/p/1", f"{BASE}/p/1", id="absolute-uppercase-scheme-and-host"),
        pytest.param("https://shop.example:443/p/1", f"{BASE}/p/1", id="absolute-explicit-default-port"),
        pytest.param("//shop.example/p/1", f"{BASE}/p/1", id="protocol-relative-same-host"),
        pytest.param("/caf\u00e9", f"{BASE}/caf%C3%A9", id="non-ascii-path-utf8-percent-encoded"),
        pytest.param(
            "/s?q=stra\u00dfe", f"{BASE}/s?q=stra%C3%9Fe", id="non-ascii-query-utf8-percent-encoded"
        ),
        pytest.param("/\U0001f600", f"{BASE}/%F0%9F%98%80", id="astral-character-four-utf8-bytes"),
        pytest.param(f"{BASE}/caf\u00e9", f"{BASE}/caf%C3%A9", id="absolute-non-ascii-path"),
        pytest.param("/a%2Fb", f"{BASE}/a%2Fb", id="valid-escape-kept"),
        pytest.param("/100%", f"{BASE}/100%25", id="stray-percent-at-end"),
        pytest.param("/%zz", f"{BASE}/%25zz", id="stray-percent-before-non-hex"),
        pytest.param("/a<b>", f"{BASE}/a%3Cb%3E", id="angle-brackets-percent-encoded"),
        pytest.param('/say-"hi"', f"{BASE}/say-%22hi%22", id="double-quote-percent-encoded"),
        pytest.param("/a?x[]=1", f"{BASE}/a?x%5B%5D=1", id="square-brackets-percent-encoded"),
        pytest.param("/a#b#c", f"{BASE}/a", id="fragment-with-a-second-hash-dropped"),
        pytest.param("/a?x=1&y=2", f"{BASE}/a?x=1&amp;y=2", id="ampersand-xml-escaped"),
    ],
)
def test_loc_is_made_absolute_and_canonical(raw: str, expected: str) -> None:
    assert normaliser().loc(raw) == expected


# RFC 3986 §5.2.4 (remove_dot_segments) and §3.5: a loc names a resource, never a part of one.
@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        pytest.param("/a/../b", f"{BASE}/b", id="dot-dot"),
        pytest.param("/a/./b", f"{BASE}/a/b", id="dot"),
        pytest.param("/a/b/..", f"{BASE}/a/", id="trailing-dot-dot-keeps-the-slash"),
        pytest.param("/a/.", f"{BASE}/a/", id="trailing-dot-keeps-the-slash"),
        pytest.param("/../../a", f"{BASE}/a", id="dot-dot-above-the-root"),
        pytest.param("/a/b/c/./../../g", f"{BASE}/a/g", id="rfc3986-5.4.2-example"),
        pytest.param("/a//../b", f"{BASE}/a/b", id="dot-dot-after-an-empty-segment"),
        pytest.param("/a/%2e%2E/b", f"{BASE}/b", id="percent-encoded-dot-dot"),
        pytest.param("/a/.%2e/b", f"{BASE}/b", id="half-encoded-dot-dot"),
        pytest.param("/a/%2E/b", f"{BASE}/a/b", id="percent-encoded-dot"),
        pytest.param("/a/..?next=/../x", f"{BASE}/?next=/../x", id="query-kept-as-is"),
        pytest.param("p/../q", f"{BASE}/q", id="relative-without-slash"),
        pytest.param(f"{BASE}/a/../b", f"{BASE}/b", id="absolute"),
        pytest.param("//shop.example/a/./b", f"{BASE}/a/b", id="protocol-relative"),
        pytest.param("HTTPS://SHOP.EXAMPLE/a/../b", f"{BASE}/b", id="absolute-needing-canonical-host"),
        pytest.param("/caf\u00e9/../b", f"{BASE}/b", id="with-quoting"),
        pytest.param("/.well-known/a", f"{BASE}/.well-known/a", id="dot-prefixed-name-kept"),
        pytest.param("/a/.../b", f"{BASE}/a/.../b", id="three-dots-kept"),
        pytest.param("/a/..b/c.", f"{BASE}/a/..b/c.", id="dots-inside-names-kept"),
        pytest.param("/a#b", f"{BASE}/a", id="fragment-dropped"),
        pytest.param("/a?x=1#top", f"{BASE}/a?x=1", id="fragment-after-query-dropped"),
        pytest.param(f"{BASE}/a#b", f"{BASE}/a", id="absolute-fragment-dropped"),
        pytest.param(f"{BASE}#b", f"{BASE}/", id="origin-fragment-dropped"),
        pytest.param("#top", f"{BASE}/", id="fragment-only-is-the-root"),
        pytest.param("/a#", f"{BASE}/a", id="empty-fragment-dropped"),
    ],
)
def test_loc_loses_dot_segments_and_fragment(raw: str, expected: str) -> None:
    assert normaliser().loc(raw) == expected
    assert normaliser()(Url(raw)).loc == expected
    assert (
        normaliser()
        .element(Url(raw, lastmod=datetime(2024, 5, 1, tzinfo=UTC)))[0]
        .startswith(f"<url><loc>{expected}</loc>")
    )


def test_hashbang_loc_is_rejected_rather_than_collapsed_onto_the_page() -> None:
    # "/#!/p/1" and "/#!/p/2" are different views of an AJAX app: dropping the fragment
    # would list "/" once per view, so the entry is skipped with its reason instead.
    assert reason_of(normaliser().loc, "/#!/p/1") == "invalid loc"


def test_dot_dot_in_a_relative_loc_stays_under_base_url() -> None:
    assert normaliser("https://shop.example/de").loc("/../x") == f"{BASE}/de/x"


def test_base_url_loses_its_dot_segments() -> None:
    assert Site.parse("https://shop.example/de/../fr/./x/").root == f"{BASE}/fr/x"


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        pytest.param("https://evil.example/p/1", "other host", id="other-host"),
        pytest.param("https://www.shop.example/p/1", "other host", id="subdomain"),
        pytest.param("https://shop.example.evil.example/", "other host", id="origin-as-prefix-of-host"),
        pytest.param("https://shop.example:8443/p/1", "other host", id="other-port"),
        pytest.param("//evil.example/p/1", "other host", id="protocol-relative-other-host"),
        pytest.param("https://shop.example@evil.example/", "other host", id="credentials-naming-our-host"),
        pytest.param("https://user:pw@shop.example/p/1", "other host", id="credentials-on-our-host"),
        pytest.param("http://shop.example/p/1", "other scheme", id="http-on-https-site"),
        pytest.param("javascript:alert(1)", "other scheme", id="javascript"),
        pytest.param("mailto:shop@shop.example", "other scheme", id="mailto"),
        pytest.param("data:text/html,hello", "other scheme", id="data"),
        pytest.param("ftp://shop.example/file", "other scheme", id="ftp"),
        pytest.param("https:/p/1", "invalid loc", id="scheme-without-authority"),
        pytest.param("https://shop.example:99999/", "invalid loc", id="port-out-of-range"),
        pytest.param("", "invalid loc", id="empty"),
        pytest.param("/a b", "invalid loc", id="space"),
        pytest.param("/a\tb", "invalid loc", id="tab"),
        pytest.param("/a\nb", "invalid loc", id="newline"),
        pytest.param("/a\x00b", "invalid loc", id="nul"),
        pytest.param("/a\x7fb", "invalid loc", id="del"),
        pytest.param("/a\x85b", "invalid loc", id="c1-control"),
        pytest.param("/a\ud800b", "invalid loc", id="lone-surrogate"),
        pytest.param("/" + "a" * 2100, "loc too long", id="over-2047-characters"),
        pytest.param("/" + "\u00e9" * 400, "loc too long", id="over-2047-after-percent-encoding"),
        pytest.param(5, "invalid loc", id="int"),
        pytest.param(b"/p/1", "invalid loc", id="bytes"),
        pytest.param(None, "invalid loc", id="none"),
    ],
)
def test_bad_loc_is_rejected_with_its_reason(raw: object, reason: str) -> None:
    assert reason_of(normaliser().loc, raw) == reason


def test_loc_of_2047_characters_is_accepted() -> None:
    path = "/" + "a" * (2047 - len(BASE) - 1)
    loc = normaliser().loc(path)
    assert len(loc) == 2047
    assert locs(validate(urlset(path))) == [loc]


def test_loc_of_2048_characters_is_rejected() -> None:
    path = "/" + "a" * (2048 - len(BASE) - 1)
    assert reason_of(normaliser().loc, path) == "loc too long"


def test_loc_shorter_than_the_schema_minimum_is_rejected() -> None:
    # sitemap.xsd: tLoc has minLength 12, and "http://a.b/" has 11.
    assert reason_of(normaliser("http://a.b").loc, "/") == "loc too short"


def test_ampersand_in_loc_parses_back_to_the_original_query() -> None:
    assert locs(validate(urlset(Url("/a?x=1&y=2&z=<3>")))) == [f"{BASE}/a?x=1&y=2&z=%3C3%3E"]


@pytest.mark.parametrize(
    ("base_url", "raw", "expected"),
    [
        pytest.param(
            "https://b\u00fccher.example", "/x", "https://xn--bcher-kva.example/x", id="idn-relative"
        ),
        pytest.param(
            "https://b\u00fccher.example",
            "https://b\u00fccher.example/x",
            "https://xn--bcher-kva.example/x",
            id="idn-absolute-unicode-host",
        ),
        pytest.param(
            "https://b\u00fccher.example",
            "https://xn--bcher-kva.example/x",
            "https://xn--bcher-kva.example/x",
            id="idn-absolute-punycode-host",
        ),
        pytest.param(
            "https://B\u00dcCHER.example",
            "https://b\u00fccher.EXAMPLE/x",
            "https://xn--bcher-kva.example/x",
            id="idn-case-insensitive",
        ),
        pytest.param("https://Shop.Example/", "/x", f"{BASE}/x", id="host-lowercased-slash-dropped"),
        pytest.param("https://shop.example:443", "/x", f"{BASE}/x", id="default-port-dropped"),
        pytest.param("http://shop.example:8080", "/x", "http://shop.example:8080/x", id="other-port-kept"),
        pytest.param("https://shop.example/de/", "/p/1", f"{BASE}/de/p/1", id="base-path-prefixes-relative"),
        pytest.param("https://shop.example/caf\u00e9", "/x", f"{BASE}/caf%C3%A9/x", id="base-path-encoded"),
        pytest.param("http://[::1]:8000", "/x", "http://[::1]:8000/x", id="ipv6-host-keeps-brackets"),
        pytest.param(
            "http://[::1]:8000", "//[::1]:8000/x[1]", "http://[::1]:8000/x%5B1%5D", id="ipv6-absolute"
        ),
        pytest.param("https://s", "HTTPS://S/about", "https://s/about", id="host-that-occurs-in-the-scheme"),
    ],
)
def test_loc_is_joined_to_the_canonical_base_url(base_url: str, raw: str, expected: str) -> None:
    assert normaliser(base_url).loc(raw) == expected


@pytest.mark.parametrize(
    "base_url",
    [
        pytest.param("ftp://shop.example", id="not-http"),
        pytest.param("shop.example", id="no-scheme"),
        pytest.param("/shop", id="relative"),
        pytest.param("https://", id="no-host"),
        pytest.param("https://shop.example?x=1", id="query"),
        pytest.param("https://shop.example#top", id="fragment"),
        pytest.param("https://user:pw@shop.example", id="credentials"),
        pytest.param("https://shop.example:99999", id="bad-port"),
        pytest.param(b"https://shop.example", id="bytes"),
        pytest.param(None, id="none"),
    ],
)
def test_invalid_base_url_is_a_configuration_error(base_url: object) -> None:
    with pytest.raises(ConfigurationError):
        Site.parse(base_url)  # type: ignore[arg-type]


# -- lastmod ---------------------------------------------------------------------------------------

PLUS_2 = timezone(timedelta(hours=2))
MINUS_3 = timezone(timedelta(hours=-3))
PLUS_5_30 = timezone(timedelta(hours=5, minutes=30))


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param(
            datetime(2024, 5, 1, 12, 30, 15, tzinfo=PLUS_2), "2024-05-01T10:30:15+00:00", id="aware-plus"
        ),
        pytest.param(
            datetime(2024, 12, 31, 22, 0, tzinfo=MINUS_3), "2025-01-01T01:00:00+00:00", id="aware-minus"
        ),
        pytest.param(
            datetime(2024, 1, 1, 3, 0, tzinfo=PLUS_5_30), "2023-12-31T21:30:00+00:00", id="aware-half"
        ),
        pytest.param(datetime(2024, 5, 1, 12, 0, tzinfo=UTC), "2024-05-01T12:00:00+00:00", id="aware-utc"),
        pytest.param(datetime(2024, 5, 1, 12, 30), "2024-05-01T12:30:00+00:00", id="naive-taken-as-utc"),
        pytest.param(
            datetime(2024, 5, 1, 12, 30, 15, 999_999), "2024-05-01T12:30:15+00:00", id="fraction-dropped"
        ),
        pytest.param(date(2024, 5, 1), "2024-05-01", id="date-stays-date"),
        pytest.param(date(999, 1, 2), "0999-01-02", id="date-year-padded"),
        pytest.param("2024-05-01", "2024-05-01", id="iso-date"),
        pytest.param("2024-05-01T12:00:00Z", "2024-05-01T12:00:00+00:00", id="iso-z"),
        pytest.param("2024-05-01T12:00:00+02:00", "2024-05-01T10:00:00+00:00", id="iso-offset"),
        pytest.param("2024-05-01T12:00:00.5-03:00", "2024-05-01T15:00:00+00:00", id="iso-fraction-offset"),
        pytest.param("2024-05-01T12:00:00", "2024-05-01T12:00:00+00:00", id="iso-naive"),
        pytest.param("2024-05-01 12:00", "2024-05-01T12:00:00+00:00", id="iso-space-no-seconds"),
        pytest.param(" 2024-05-01 ", "2024-05-01", id="iso-surrounding-space"),
    ],
)
def test_lastmod_is_w3c_datetime_in_utc(value: datetime | date | str, expected: str) -> None:
    assert w3c_datetime(value) == expected


@pytest.mark.parametrize(
    "value",
    [
        pytest.param("2024-13-01", id="month-13"),
        pytest.param("2024-02-30", id="february-30"),
        pytest.param("2024-05-01T25:00", id="hour-25"),
        pytest.param("yesterday", id="words"),
        pytest.param("", id="empty"),
        pytest.param("2024-05", id="year-month"),
        pytest.param("20240501", id="basic-format"),
        pytest.param("2024-05-01T12", id="hour-only"),
        pytest.param(
            datetime(1, 1, 1, 0, 30, tzinfo=timezone(timedelta(hours=1))), id="before-year-1-in-utc"
        ),
        pytest.param(datetime(9999, 12, 31, 23, 0, tzinfo=MINUS_3), id="after-year-9999-in-utc"),
        pytest.param(1714560000, id="timestamp-int"),
        pytest.param(1.5, id="float"),
        pytest.param(b"2024-05-01", id="bytes"),
        pytest.param(None, id="none"),
    ],
)
def test_invalid_lastmod_is_rejected(value: Any) -> None:
    assert reason_of(w3c_datetime, value) == "invalid lastmod"


def test_missing_lastmod_is_omitted_never_made_up() -> None:
    root = validate(urlset(Url("/p/1")))
    assert lastmods(root) == [None]


def test_lastmod_appears_in_the_document() -> None:
    raw = Url("/p/1", lastmod=datetime(2024, 5, 1, 12, 0, tzinfo=PLUS_2))
    assert lastmods(validate(urlset(raw))) == ["2024-05-01T10:00:00+00:00"]


# -- changefreq ------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [*sorted(CHANGEFREQS), "DAILY", "Weekly", "nEVER"])
def test_changefreq_is_accepted_case_insensitively(value: str) -> None:
    raw = Url("/p/1", changefreq=value)
    assert normaliser()(raw).changefreq == value.lower()
    assert validate(urlset(raw)).findtext("sm:url/sm:changefreq", namespaces=NS) == value.lower()


@pytest.mark.parametrize(
    "value",
    [
        pytest.param("sometimes", id="unknown-word"),
        pytest.param("daily ", id="trailing-space"),
        pytest.param("", id="empty"),
        pytest.param(7, id="int"),
    ],
)
def test_invalid_changefreq_is_rejected(value: Any) -> None:
    assert reason_of(normaliser(), Url("/p/1", changefreq=value)) == "invalid changefreq"


def test_changefreq_is_exactly_the_schemas_seven_values() -> None:
    assert {"always", "hourly", "daily", "weekly", "monthly", "yearly", "never"} == CHANGEFREQS


# -- priority --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param(0, "0.0", id="int-zero"),
        pytest.param(1, "1.0", id="int-one"),
        pytest.param(0.0, "0.0", id="float-zero"),
        pytest.param(1.0, "1.0", id="float-one"),
        pytest.param(0.85, "0.85", id="float"),
        pytest.param(0.5, "0.5", id="half"),
        pytest.param(Decimal("0.85"), "0.85", id="decimal"),
        pytest.param(Decimal("1.000"), "1.0", id="decimal-trailing-zeros"),
        pytest.param(1e-10, "0.0", id="tiny-float-no-exponent"),
        pytest.param(Decimal("1E-7"), "0.0", id="tiny-decimal-no-exponent"),
        pytest.param(-0.0, "0.0", id="negative-zero-unsigned"),
        pytest.param(Decimal("-0"), "0.0", id="decimal-negative-zero-unsigned"),
    ],
)
def test_priority_is_a_plain_decimal(value: float | Decimal, expected: str) -> None:
    raw = Url("/p/1", priority=value)
    assert normaliser()(raw).priority == expected
    assert validate(urlset(raw)).findtext("sm:url/sm:priority", namespaces=NS) == expected


@pytest.mark.parametrize(
    "value",
    [
        pytest.param(float("nan"), id="nan"),
        pytest.param(Decimal("NaN"), id="decimal-nan"),
        pytest.param(Decimal("sNaN"), id="decimal-signalling-nan"),
        pytest.param(float("inf"), id="infinity"),
        pytest.param(Decimal("Infinity"), id="decimal-infinity"),
        pytest.param(True, id="true"),
        pytest.param(False, id="false"),
        pytest.param(1.5, id="above-one"),
        pytest.param(1.0001, id="just-above-one"),
        pytest.param(-0.1, id="negative"),
        pytest.param(2, id="int-two"),
        pytest.param("0.5", id="string"),
        pytest.param([0.5], id="unhashable"),
    ],
)
def test_invalid_priority_is_rejected(value: Any) -> None:
    assert reason_of(normaliser(), Url("/p/1", priority=value)) == "invalid priority"


@pytest.mark.parametrize(
    ("seen", "value"),
    [
        pytest.param(1, True, id="true-after-one"),
        pytest.param(1.0, True, id="true-after-float-one"),
        pytest.param(0.0, False, id="false-after-zero"),
    ],
)
def test_bool_priority_is_rejected_after_an_equal_number_was_accepted(seen: float, value: bool) -> None:
    normalise = normaliser()
    normalise(Url("/p/1", priority=seen))
    assert reason_of(normalise, Url("/p/2", priority=value)) == "invalid priority"


# -- entry shapes ----------------------------------------------------------------------------------


def test_string_entry_is_a_loc_alone() -> None:
    assert normaliser()("/p/1") == NormalUrl(f"{BASE}/p/1", None, None, None)


def test_url_entry_normalises_every_field() -> None:
    raw = Url("/p/1", lastmod=date(2024, 5, 1), changefreq="Daily", priority=0.8)
    assert normaliser()(raw) == NormalUrl(f"{BASE}/p/1", "2024-05-01", "daily", "0.8")


def test_url_subclass_entry_is_accepted() -> None:
    class ProductUrl(Url):
        pass

    assert normaliser()(ProductUrl("/p/1")).loc == f"{BASE}/p/1"


def test_a_url_is_an_immutable_value() -> None:
    """Compared and hashed by its fields, never changed in place: a changed copy is made."""
    url = Url("/p/1", lastmod=date(2024, 5, 1), priority=0.8)
    assert url == Url("/p/1", date(2024, 5, 1), None, 0.8)
    assert url != Url("/p/1", lastmod=date(2024, 5, 2), priority=0.8)
    assert len({url, Url("/p/1", lastmod=date(2024, 5, 1), priority=0.8)}) == 1
    with pytest.raises(AttributeError):
        url.loc = "/p/2"  # type: ignore[misc]
    changed = msgspec.structs.replace(url, lastmod=date(2024, 6, 1))
    assert (changed.loc, changed.lastmod, url.lastmod) == ("/p/1", date(2024, 6, 1), date(2024, 5, 1))
    assert pickle.loads(pickle.dumps(url)) == url


def test_a_urls_repr_shows_its_core_fields_and_the_extensions_it_uses() -> None:
    # Skipped entries are logged by their repr: extensions left out stay out of the line.
    assert repr(Url("/p/1", images=["/i.jpg"])) == (
        "Url(loc='/p/1', lastmod=None, changefreq=None, priority=None, images=['/i.jpg'])"
    )


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        pytest.param({"loc": "/p/1"}, NormalUrl(f"{BASE}/p/1", None, None, None), id="loc-only"),
        pytest.param(
            {"loc": "/p/1", "lastmod": "2024-05-01T12:00:00Z", "changefreq": "weekly", "priority": 0.3},
            NormalUrl(f"{BASE}/p/1", "2024-05-01T12:00:00+00:00", "weekly", "0.3"),
            id="every-key",
        ),
    ],
)
def test_mapping_entry_is_read_like_a_url(raw: dict[str, Any], expected: NormalUrl) -> None:
    assert normaliser()(raw) == expected


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        pytest.param({"url": "/p/1"}, "unsupported entry type", id="mapping-unknown-key"),
        pytest.param({"loc": "/p/1", "caption": "x"}, "unsupported entry type", id="mapping-extra-key"),
        pytest.param({}, "unsupported entry type", id="mapping-empty"),
        pytest.param({"loc": 5}, "invalid loc", id="mapping-loc-not-string"),
        pytest.param({"loc": "/p/1", "priority": 3}, "invalid priority", id="mapping-bad-priority"),
        pytest.param(5, "unsupported entry type", id="int"),
        pytest.param(None, "unsupported entry type", id="none"),
        pytest.param(b"/p/1", "unsupported entry type", id="bytes"),
        pytest.param((), "unsupported entry type", id="tuple-empty"),
        pytest.param(("/p/1", *[None] * 8), "unsupported entry type", id="tuple-of-nine"),
        pytest.param(Localised(Url("/p/1"), 0), "unsupported entry type", id="namedtuple-not-url"),
        pytest.param(["/p/1", None], "unsupported entry type", id="list"),
        pytest.param(("/p/1", "yesterday"), "invalid lastmod", id="tuple-bad-lastmod"),
        pytest.param(object(), "unsupported entry type", id="object"),
    ],
)
def test_unsupported_entry_is_rejected_with_its_reason(raw: object, reason: str) -> None:
    assert reason_of(normaliser(), raw) == reason


@pytest.mark.parametrize(
    "row",
    [
        pytest.param(("/p/1",), id="loc"),
        pytest.param(("/p/1", datetime(2024, 5, 1, 12, tzinfo=UTC)), id="loc-lastmod"),
        pytest.param(("/p/1?a=1&b=2", date(2024, 5, 1), "DAILY", 0.8), id="core-fields"),
        pytest.param(("/p/1", None, None, None, None, ["/img/1.jpg"]), id="with-images"),
        pytest.param(("/p/1", *[None] * 7), id="every-field"),
    ],
)
def test_a_row_is_read_as_urls_fields_in_order(row: tuple[Any, ...]) -> None:
    """A database row as it comes (a cursor's tuple), without a `Url` built for it."""
    normalise = Normaliser(Site.parse(BASE), extensions=Extensions.declare(["images"]))
    assert normalise.element(row) == normalise.element(Url(*row))
    assert normalise(row) == normalise(Url(*row))


def test_entry_error_carries_reason_and_detail() -> None:
    with pytest.raises(EntryError) as caught:
        normaliser()(Url("https://evil.example/p/1"))
    assert caught.value.reason == "other host"
    assert "evil.example" in caught.value.detail
    assert isinstance(caught.value, ValueError)


# -- properties ------------------------------------------------------------------------------------

SITES = [
    "https://shop.example",
    "http://shop.example:8080",
    "https://b\u00fccher.example/de",
    "http://[::1]:8000",
]
INTERESTING = [*"/?#%&<>[]@:\"' \t\x00\x7f\u00e9\u2028\ufffe", "\ud800", "\U0001f600", "%41", "%e9"]
LOC_PREFIXES = [
    "",
    "/",
    "//",
    "?",
    "#",
    "https://shop.example",
    "https://shop.example/",
    "HTTPS://Shop.Example:443/",
    "//shop.example/",
    "http://shop.example/",
    "http://shop.example:8080/",
    "https://b\u00fccher.example/",
    "http://[::1]:8000/",
    "https://shop.example@evil.example/",
    "https://evil.example/",
    "javascript:",
]
_text = st.lists(st.one_of(st.characters(), st.sampled_from(INTERESTING))).map("".join)
loc_texts = st.one_of(
    _text,
    st.builds(str.__add__, st.sampled_from(LOC_PREFIXES), _text),
    # Around the 2,047-character limit, where percent-encoding can push a loc over it.
    st.builds(lambda n, tail: "/" + "a" * n + tail, st.integers(1990, 2050), _text),
)
offsets = st.builds(
    timezone,
    st.timedeltas(min_value=timedelta(hours=-23, minutes=-59), max_value=timedelta(hours=23, minutes=59)),
)
lastmod_values = st.one_of(
    st.none(),
    st.dates(),
    st.datetimes(),
    st.datetimes(timezones=offsets),
    st.datetimes().map(datetime.isoformat),
    st.datetimes(timezones=offsets).map(datetime.isoformat),
    st.dates().map(date.isoformat),
    st.text(max_size=30),
    st.integers(),
)
changefreq_values = st.one_of(
    st.none(),
    st.sampled_from(sorted(CHANGEFREQS)).map(str.upper),
    st.sampled_from(sorted(CHANGEFREQS)),
    st.text(),
)
priority_values = st.one_of(
    st.none(),
    st.floats(),
    st.floats(min_value=0, max_value=1),
    st.decimals(),
    st.decimals(min_value=0, max_value=1),
    st.integers(-2, 2),
    st.booleans(),
    st.text(max_size=5),
)


def is_nan(value: object) -> bool:
    if isinstance(value, Decimal):
        return value.is_nan()
    return isinstance(value, float) and math.isnan(value)


def assert_valid_loc_on_site(loc: str, site: Site) -> None:
    assert len(loc) < 2048
    assert loc.startswith(site.origin)
    assert rfc3986_on_origin(site.origin).fullmatch(loc), loc


def test_any_text_loc_is_rejected_or_valid_on_the_site() -> None:
    outcomes = Outcomes()

    @PROPERTY
    @given(base_url=st.sampled_from(SITES), raw=loc_texts)
    def check(base_url: str, raw: str) -> None:
        normalise = normaliser(base_url)
        try:
            normalise(raw)
        except EntryError:
            outcomes.refused()
            return
        [loc] = locs(validate(urlset(raw, normalise=normalise)))
        assert_valid_loc_on_site(loc, normalise.site)
        outcomes.accepted()

    check()
    outcomes.assert_both()


def test_any_url_is_rejected_or_valid_in_a_urlset() -> None:
    outcomes = Outcomes()

    @PROPERTY
    @given(
        base_url=st.sampled_from(SITES),
        loc=loc_texts,
        lastmod=lastmod_values,
        changefreq=changefreq_values,
        priority=priority_values,
    )
    def check(base_url: str, loc: str, lastmod: Any, changefreq: Any, priority: Any) -> None:
        normalise = normaliser(base_url)
        raw = Url(loc, lastmod=lastmod, changefreq=changefreq, priority=priority)
        try:
            normalise(raw)
        except EntryError:
            outcomes.refused()
            return
        root = validate(urlset(raw, normalise=normalise))
        [parsed_loc] = locs(root)
        assert_valid_loc_on_site(parsed_loc, normalise.site)
        [parsed_lastmod] = lastmods(root)
        if lastmod is None:
            assert parsed_lastmod is None
        else:
            # W3C Datetime with an explicit UTC offset whenever a time is given.
            assert re.fullmatch(r"\d{4}-\d\d-\d\d(T\d\d:\d\d:\d\d\+00:00)?", parsed_lastmod or "")
        outcomes.accepted()

    check()
    outcomes.assert_both()


def test_any_row_is_written_as_the_url_of_its_fields_or_refused_as_it_is() -> None:
    outcomes = Outcomes()

    @PROPERTY
    @given(
        loc=loc_texts,
        lastmod=lastmod_values,
        changefreq=changefreq_values,
        priority=priority_values,
        length=st.integers(1, 4),
    )
    def check(loc: str, lastmod: Any, changefreq: Any, priority: Any, length: int) -> None:
        row = (loc, lastmod, changefreq, priority)[:length]
        normalise = normaliser()
        try:
            expected = normalise.element(Url(*row))
        except EntryError as error:
            reason = error.reason
        else:
            assert normalise.element(row) == expected
            outcomes.accepted()
            return
        assert reason_of(normalise.element, row) == reason
        outcomes.refused()

    check()
    outcomes.assert_both()


# Known-valid input: the properties above say only that what is accepted is valid; these say
# that valid input is always accepted, and served exactly as given.
SITE_ROOTS = {  # each of SITES, as the root its relative locs are joined to
    "https://shop.example": "https://shop.example",
    "http://shop.example:8080": "http://shop.example:8080",
    "https://b\u00fccher.example/de": "https://xn--bcher-kva.example/de",
    "http://[::1]:8000": "http://[::1]:8000",
}
# RFC 3986 pchar: unreserved, sub-delims, ":" and "@", and valid (uppercase) percent-encodings.
_pchars = st.one_of(
    st.sampled_from(string.ascii_letters + string.digits + "-._~!$&'()*+,;=:@"),
    st.sampled_from(["%2F", "%C3%A9", "%25", "%7E", "%20"]),
)
# "//" would begin an authority; "." and ".." are dot-segments, removed (RFC 3986 §5.2.4).
_segments = st.lists(_pchars, min_size=1, max_size=12).map("".join).filter(lambda s: s not in {".", ".."})
valid_paths = st.builds(
    lambda segments, query: "/" + "/".join(segments) + query,
    st.lists(_segments, max_size=5),
    st.one_of(
        st.just(""),
        st.lists(st.one_of(_pchars, st.sampled_from("/?")), max_size=20)
        .map("".join)
        .map(lambda query: "?" + query),
    ),
)


def _utc_text(moment: datetime) -> str:
    """W3C Datetime of the second ``moment`` falls in, in UTC (naive: taken as UTC)."""
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC).replace(tzinfo=None)
    return moment.replace(microsecond=0).isoformat() + "+00:00"


# (value, the text served for it) pairs.
valid_lastmods = st.one_of(
    st.just((None, None)),
    st.dates().map(lambda day: (day, day.isoformat())),
    st.dates().map(lambda day: (day.isoformat(), day.isoformat())),
    st.datetimes().map(lambda moment: (moment, _utc_text(moment))),
    st.datetimes(min_value=datetime(2, 1, 1), max_value=datetime(9998, 12, 31), timezones=offsets).map(
        lambda moment: (moment, _utc_text(moment))
    ),
)
valid_changefreqs = st.one_of(
    st.just((None, None)),
    st.sampled_from(sorted(CHANGEFREQS)).flatmap(
        lambda value: st.sampled_from([value, value.upper(), value.title()]).map(lambda raw: (raw, value))
    ),
)


def _decimal_text(thousandths: int) -> str:
    """``thousandths / 1000`` as a plain decimal, no trailing zeros but one: ``0.85``, ``1.0``."""
    whole, fraction = divmod(thousandths, 1000)
    return f"{whole}." + (f"{fraction:03d}".rstrip("0") or "0")


_thousandths = st.integers(0, 1000)
valid_priorities = st.one_of(
    st.just((None, None)),
    st.integers(0, 1).map(lambda value: (value, f"{value}.0")),
    _thousandths.map(lambda n: (n / 1000, _decimal_text(n))),
    _thousandths.map(lambda n: (Decimal(n) / 1000, _decimal_text(n))),
)


@PROPERTY
@given(base_url=st.sampled_from(SITES), path=valid_paths)
def test_any_valid_loc_is_accepted_and_served_as_given(base_url: str, path: str) -> None:
    [loc] = locs(validate(urlset(path, normalise=normaliser(base_url))))
    assert loc == SITE_ROOTS[base_url] + path


@PROPERTY
@given(
    base_url=st.sampled_from(SITES),
    path=valid_paths,
    lastmod=valid_lastmods,
    changefreq=valid_changefreqs,
    priority=valid_priorities,
)
def test_any_valid_url_is_accepted_and_served_exactly(
    base_url: str,
    path: str,
    lastmod: tuple[Any, str | None],
    changefreq: tuple[str | None, str | None],
    priority: tuple[Any, str | None],
) -> None:
    url = Url(path, lastmod=lastmod[0], changefreq=changefreq[0], priority=priority[0])
    [element] = validate(urlset(url, normalise=normaliser(base_url)))
    served = [
        element.findtext(f"sm:{name}", namespaces=NS) for name in ("loc", "lastmod", "changefreq", "priority")
    ]
    assert served == [SITE_ROOTS[base_url] + path, lastmod[1], changefreq[1], priority[1]]


def test_datetime_lastmod_names_the_same_instant_to_the_second() -> None:
    outcomes = Outcomes()

    @PROPERTY
    @given(value=st.one_of(st.datetimes(), st.datetimes(timezones=offsets)))
    def check(value: datetime) -> None:
        try:
            text = w3c_datetime(value)
        except EntryError:
            # Only an aware datetime whose UTC form leaves years 1-9999 may be refused.
            assert value.tzinfo is not None
            outcomes.refused()
            return
        instant = value if value.tzinfo else value.replace(tzinfo=UTC)
        # Seconds precision: the text names the start of the second the instant falls in.
        assert timedelta(0) <= instant - datetime.fromisoformat(text) < timedelta(seconds=1)
        assert text.endswith("+00:00")
        outcomes.accepted()

    check()
    outcomes.assert_some_accepted()  # refusals need years at the very edge: rarely drawn


@PROPERTY
@given(value=st.one_of(st.floats(), st.decimals(), st.integers()))
def test_priority_is_accepted_exactly_when_between_zero_and_one(value: float | Decimal | int) -> None:
    url = Url("/p/1", priority=value)
    if is_nan(value) or not 0 <= value <= 1:
        assert reason_of(normaliser(), url) == "invalid priority"
        return
    entry = normaliser()(url)
    assert re.fullmatch(r"[01]\.\d{1,3}", entry.priority or "")
    assert abs(Decimal(entry.priority or "") - Decimal(value)) <= Decimal("0.0005")


_DOT_SEGMENT = re.compile(r"(?:\.|%2e){1,2}", re.IGNORECASE)
dotted_locs = st.lists(
    st.sampled_from(["/", ".", "..", "%2e", "%2E.", "a", "#", "#!", "?", "\u00e9", "//"]), max_size=12
).map("".join)


def test_no_emitted_loc_has_a_fragment_or_a_dot_segment() -> None:
    outcomes = Outcomes()

    @PROPERTY
    @given(base_url=st.sampled_from(SITES), raw=st.one_of(loc_texts, dotted_locs))
    def check(base_url: str, raw: str) -> None:
        normalise = normaliser(base_url)
        try:
            loc = normalise(raw).loc
        except EntryError:
            outcomes.refused()
            return
        assert "#" not in loc
        path = loc[len(normalise.site.origin) :].partition("?")[0]
        assert not any(_DOT_SEGMENT.fullmatch(segment) for segment in path.split("/")), loc
        assert normalise.element(Url(raw))[0] == f"<url><loc>{loc}</loc></url>\n"
        outcomes.accepted()

    check()
    outcomes.assert_both()


mount_paths = st.lists(st.sampled_from(["/", "a", "&", "%26", "b;c", "~"]), max_size=6).map(
    lambda parts: "/" + "".join(parts).strip("/") if parts else ""
)


def test_a_plain_path_below_any_mount_path_is_written_as_the_loc_rule_writes_it() -> None:
    """The page writer's common case (a plain path, its root escaped once) against `loc`."""
    outcomes = Outcomes()

    @PROPERTY
    @given(base_url=st.sampled_from(SITES), prefix=mount_paths, raw=loc_texts)
    def check(base_url: str, prefix: str, raw: str) -> None:
        normalise = Normaliser(Site.parse(base_url), prefix)
        try:
            loc = normalise.loc(raw)
        except EntryError:
            with pytest.raises(EntryError):
                normalise.element(Url(raw))
            outcomes.refused()
            return
        lastmod = datetime(2024, 5, 1, tzinfo=UTC)
        assert normalise.element(Url(raw, lastmod=lastmod))[0] == (
            f"<url><loc>{loc}</loc><lastmod>2024-05-01T00:00:00+00:00</lastmod></url>\n"
        )
        outcomes.accepted()

    check()
    outcomes.assert_both()
