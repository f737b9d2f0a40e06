"""Property-based tests (hypothesis): hostile paths, headers, entries and hosts, on both adapters.

Each test states one property that must hold for every input hypothesis builds from our
real paths, headers and entries mixed with hostile pieces; ``make_client`` runs it once
per adapter. Every example builds its own `Sitemaps`, so no state leaks between examples.
"""

from __future__ import annotations

import gzip
import math
import re
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import UTC, date, datetime, timedelta, timezone, tzinfo
from typing import Any
from urllib.parse import unquote
from xml.sax.saxutils import unescape

import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st
from lxml import etree
from werkzeug.http import http_date, parse_accept_header

from sitemap_middleware import EntryError, Hosts, Sitemaps, Url
from sitemap_middleware.protocol.entries import Normaliser
from sitemap_middleware.protocol.uris import Site

from .conftest import BASE, NOW, Response, SitemapClient, dated_product, make_shop
from .xsd import NS, locs, validate

XML_TYPE = "application/xml; charset=utf-8"
GZIP_TYPE = "application/gzip"

MakeClient = Callable[..., SitemapClient]

# ``make_client`` is function-scoped, so every example of a test shares it: safe here, since it
# only builds clients, and every example builds its own `Sitemaps` and client.
FUZZ = settings(
    max_examples=150,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)


def shop(**options: Any) -> Sitemaps:
    """``products``: 5 URLs in pages of 2 (3 pages); ``blog-posts``: 2 URLs (1 page), versioned.

    The shared shop's products, and a versioned section on top in place of its pages: the
    properties of conditional requests hold for a declared version as for a rendered one.
    """
    sitemaps = make_shop(5, product=dated_product, products_page_size=2, sections=["products"], **options)
    sitemaps.provider("blog-posts", version=lambda: date(2024, 2, 1))(lambda: ["/b/1", "/b/2"])
    return sitemaps


PAGES = {"products": 3, "blog-posts": 1}
INDEX_FILES = 1  # 4 pages: one index file


def body_of(response: Response, path: str) -> bytes:
    """The document's XML: gunzipped for a ``.gz`` file or a gzip-encoded response."""
    if path.endswith(".gz"):
        assert response.headers["Content-Type"] == GZIP_TYPE
        assert "Content-Encoding" not in response.headers
        return gzip.decompress(response.body)
    assert response.headers["Content-Type"] == XML_TYPE
    encoding = response.headers.get("Content-Encoding")
    assert encoding in (None, "gzip")
    return gzip.decompress(response.body) if encoding == "gzip" else response.body


def wire(client: SitemapClient, headers: dict[str, str]) -> Any:
    """Headers as each test client takes them: httpx2 refuses non-ASCII ``str`` values, not bytes.

    Both adapters then hand the middleware the value's UTF-8 bytes read as latin-1 (werkzeug
    encodes ``str`` values as UTF-8; Starlette's TestClient re-encodes what httpx2 decoded).
    """
    if client.kind == "asgi":
        return {name: value.encode("latin-1") for name, value in headers.items()}
    return headers


def as_received(value: str) -> str:
    """A header value as the middleware reads it, after `wire` (see there)."""
    return value.encode().decode("latin-1")


# -- 1. request paths --------------------------------------------------------------------------

REAL_PATHS = [
    "/sitemap-index.xml",
    "/sitemap.xml",
    "/sitemap-products-1.xml",
    "/sitemap-products-2.xml",
    "/sitemap-products-3.xml",
    "/sitemap-blog-posts-1.xml",
    "/robots.txt",
    "/",
]
REAL_PATHS += [path + ".gz" for path in REAL_PATHS if path.endswith(".xml")]

# No "%25" and no lone "%": the ASGI test client unquotes the path twice (httpx2's URL.path,
# then Starlette's unquote), WSGI once; without an escaped "%" both give the same path.
HOSTILE_PIECES = [
    *["..", ".", "/./", "/../", "%2e%2e", "%2E%2e", "%2e", "/", "//", "///"],
    *["%00", "\x00", "%2F", "%2f", "%5C", "\\", "%09", "%20", " ", "%FF", "%D9", "%zz"],
    *["\u0661", "%D9%A1", "\uff11", "\u0660", "\u00b2", "\u00e9", "~"],
    *["-0", "-01", "-00", "-1", "-4", "-\u0661", "-+1", "-999999999", "-1000000000", "-"],
    *[".gz", ".xml", ".GZ", ".XML", ".gz.gz", "SITEMAP", "Sitemap", "sitemap", "-index"],
    *[";params", ";jsessionid=1", ";", "%3B", "products", "blog-posts", "blog", "_"],
    *["x" * 300, "y" * 5000],
]
SECTION_NAMES = [
    *["products", "blog-posts", "blog", "posts", "product", "PRODUCTS", "Products"],
    *["products-", "-products", "blog--posts", "blog_posts", "other", "", "products-1"],
]
PAGE_NUMBERS = [
    *["0", "00", "01", "001", "1", "2", "3", "4", "999999999", "1000000000", "12345678901"],
    *["\u0661", "\u0663", "\uff11", "\u00b2", "+1", "-1", " 1", "1 ", "0x1", "1e0", "1.0", "1_0", ""],
]
SUFFIXES = ["", ".gz", ".GZ", ".gz.gz", "/", ".xml", ";x", "%00", "/..", "/.", "\x00"]


def _rooted(path: str) -> str:
    return path if path.startswith("/") else "/" + path


def _insert(base: str, piece: str, at: int) -> str:
    at %= len(base) + 1
    return base[:at] + piece + base[at:]


_free_text = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="%?#\t\r\n"), max_size=12)
_piece = st.one_of(st.sampled_from(HOSTILE_PIECES), st.sampled_from(REAL_PATHS), _free_text)
_page_numbers = st.one_of(st.sampled_from(PAGE_NUMBERS), st.integers(0, 10**12).map(str))
request_paths = st.one_of(
    st.sampled_from(REAL_PATHS),
    st.builds(  # our sections, any page number: a document, our 404, or the app's
        "/sitemap-{}-{}.xml{}".format, st.sampled_from(list(PAGES)), _page_numbers, st.sampled_from(SUFFIXES)
    ),
    st.builds(
        "/sitemap-{}-{}.xml{}".format,
        st.sampled_from(SECTION_NAMES),
        _page_numbers,
        st.sampled_from(SUFFIXES),
    ),
    st.builds("/sitemap-index-{}.xml{}".format, _page_numbers, st.sampled_from(SUFFIXES)),  # index files
    st.builds(_insert, st.sampled_from(REAL_PATHS), _piece, st.integers(0, 40)),
    st.lists(_piece, min_size=1, max_size=6).map("".join),
).map(_rooted)

_SITEMAP_PAGE = re.compile(r"/sitemap-(.+)-([0-9]+)\.xml", re.DOTALL)
_INDEX_FILE = re.compile(r"/sitemap-index-([0-9]+)\.xml", re.DOTALL)


def expected_answer(path: str) -> str:
    """Who answers the (decoded) ``path``: "document", "missing" (our 404), "robots" or "app".

    Written from the table in docs/use.md, independently of ``match_route``: a section name never
    holds a digit-only "-<n>" tail, so the last "-" splits section from page number.
    """
    if path == "/robots.txt":
        return "robots"
    name = path.removesuffix(".gz")
    if name in ("/sitemap-index.xml", "/sitemap.xml"):
        return "document"
    match = _INDEX_FILE.fullmatch(name)
    if match is not None:  # the first index file has one name: "-1" is a 404 like "-01"
        digits = match[1]
        return "document" if digits[0] != "0" and 2 <= int(digits) <= INDEX_FILES else "missing"
    match = _SITEMAP_PAGE.fullmatch(name)
    if match is None or match[1] not in PAGES:
        return "app"
    digits = match[2]
    return "document" if digits[0] != "0" and int(digits) <= PAGES[match[1]] else "missing"


def app_echo(kind: str, path: str) -> bytes:
    """What the conftest app answers: ``app:GET <path as the adapter saw it>``."""
    seen = unquote(path)
    if kind == "wsgi":
        seen = seen.encode().decode("latin-1")  # PEP 3333: the UTF-8 bytes, read as latin-1
    return f"app:GET {seen}".encode()


@FUZZ
@given(paths=st.lists(request_paths, min_size=1, max_size=4))
def test_only_canonical_paths_get_a_document_and_the_rest_reach_the_app(
    make_client: MakeClient, paths: list[str]
) -> None:
    client = make_client(shop())
    for path in paths:  # several per client: later ones may be answered from the cache
        response = client.get(path)
        assert response.status < 500
        decoded = unquote(path)  # what PATH_INFO / scope["path"] carry
        expected = expected_answer(decoded)
        event(f"answer: {expected}")
        if expected == "document":
            assert response.status == 200
            root = validate(body_of(response, decoded))
            assert all(loc.startswith(BASE + "/") for loc in locs(root))
        elif expected == "missing":
            assert (response.status, response.body) == (404, b"Not Found\n")
        elif expected == "robots":
            assert response.status == 200
            assert response.headers["Content-Type"].startswith("text/plain")
            lines = response.body.decode().splitlines()
            assert "app:GET /robots.txt" in lines
            assert f"Sitemap: {BASE}/sitemap-index.xml" in lines
        else:
            assert (response.status, response.body) == (200, app_echo(client.kind, path))


# -- 2. request headers ------------------------------------------------------------------------

DOCUMENT_PATHS = [
    "/sitemap-index.xml",
    "/sitemap.xml.gz",
    "/sitemap-products-1.xml",
    "/sitemap-products-2.xml.gz",
    "/sitemap-blog-posts-1.xml",
    "/sitemap-blog-posts-1.xml.gz",
]
# Printable latin-1, no CR/LF: what a header value may carry on the wire.
_latin1 = st.text(
    st.characters(
        min_codepoint=0x20, max_codepoint=0xFF, exclude_characters=[chr(c) for c in range(0x7F, 0xA0)]
    ),
    max_size=40,
)
_CODINGS = [
    *["gzip", "x-gzip", "GZIP", "X-Gzip", "*", "identity", "br", "deflate", "compress", ""],
    *["gzip;q=0", "gzip;q=0.000", "gzip;q=0.001", "gzip;q=1", "gzip;q=1.5", "gzip;q=-1", "gzip;q=abc"],
    *["*;q=0", "x-gzip;q=0", "identity;q=0", "gzip;;q=1", "gzip ; q=0", ";q=1", "gzip;level=9", "gzip;q="],
]
accept_encodings = st.one_of(
    st.sampled_from(_CODINGS),
    st.lists(st.sampled_from(_CODINGS), min_size=1, max_size=4).map(", ".join),
    st.lists(st.one_of(st.sampled_from(_CODINGS), _latin1), min_size=1, max_size=4).map(", ".join),
    _latin1,
)
_http_dates = st.datetimes(min_value=datetime(1900, 1, 1), max_value=datetime(9999, 1, 1)).map(
    lambda moment: http_date(moment.replace(tzinfo=UTC))
)


def if_none_matches(etags: list[str]) -> st.SearchStrategy[str]:
    tags = st.sampled_from(etags)
    one = st.one_of(
        tags,
        tags.map(lambda tag: "W/" + tag),
        tags.map(lambda tag: tag.strip('"')),  # unquoted: not a valid entity-tag
        tags.map(lambda tag: tag[:-2] + '"'),  # one character short
        st.sampled_from(["*", " * ", "W/*", '""', '"', "W/", 'W/""', ",", '"*"']),
        _latin1,
    )
    return st.one_of(one, st.lists(one, min_size=1, max_size=4).map(", ".join))


def if_modified_sinces(dates: list[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(dates),
        _http_dates,
        st.sampled_from(["Thu, 01 Jan 1970 00:00:00 GMT", "Fri, 31 Dec 9999 23:59:59 GMT", "0", "-1", "now"]),
        st.sampled_from(dates).map(lambda text: text.replace("GMT", "+0100")),
        st.sampled_from(dates).map(lambda text: text[:-4]),
        _latin1,
    )


def allows_gzip(accept_encoding: str | None) -> bool:
    """RFC 9110 §12.5.3, written out: an explicit gzip (or its alias x-gzip) with q > 0, or,
    when neither is named, ``*`` with q > 0."""
    if not accept_encoding:
        return False
    qualities = [(value.lower(), quality) for value, quality in parse_accept_header(accept_encoding)]
    named = [quality for value, quality in qualities if value in ("gzip", "x-gzip")]
    if named:
        return any(quality > 0 for quality in named)
    return any(quality > 0 for value, quality in qualities if value == "*")


# RFC 9110 §15.4.5 (and the house style's whitelist); Server comes from a server, never from us.
_NOT_MODIFIED_HEADERS = {"etag", "last-modified", "cache-control", "vary", "date", "expires", "server"}


@FUZZ
@given(path=st.sampled_from(DOCUMENT_PATHS), cold=st.booleans(), data=st.data())
def test_any_accept_encoding_and_validators_give_a_valid_200_or_a_bare_304(
    make_client: MakeClient, path: str, cold: bool, data: st.DataObject
) -> None:
    # Real validators, from this client or (for a cold request) from another process's
    # view of the same data: the ETag is a hash of the bytes, so both agree on it.
    known = make_client(shop())
    known.get(path)  # a cold page streams before its ETag is known: fill the cache first
    seen = [known.get(path, {"Accept-Encoding": coding}) for coding in ("identity", "gzip")]
    etags = [response.headers["ETag"] for response in seen]
    dates = [response.headers["Last-Modified"] for response in seen]
    drawn = {
        "Accept-Encoding": data.draw(st.none() | accept_encodings, label="accept_encoding"),
        "If-None-Match": data.draw(st.none() | if_none_matches(etags), label="if_none_match"),
        "If-Modified-Since": data.draw(st.none() | if_modified_sinces(dates), label="if_modified_since"),
    }
    headers = {name: value for name, value in drawn.items() if value is not None}
    client = make_client(shop()) if cold else known

    response = client.get(path, wire(client, headers))

    assert response.status in (200, 304)
    event(f"{response.status} {response.headers.get('Content-Encoding', 'identity')}")
    if response.status == 304:
        assert response.body == b""
        assert headers.get("If-None-Match") or headers.get("If-Modified-Since")
        names = {name.lower() for name, _ in response.headers.items()}
        assert names <= _NOT_MODIFIED_HEADERS | {"content-length"}
        assert response.headers.get("Content-Length", "0") == "0"
        # The same request again is replayed (replays.py): it must be the very same answer.
        again = client.get(path, wire(client, headers))
        assert (again.status, again.body) == (304, b"")
        assert sorted(again.headers.items()) == sorted(response.headers.items())
        return
    validate(body_of(response, path))
    if response.headers.get("Content-Encoding") == "gzip":
        assert allows_gzip(as_received(headers.get("Accept-Encoding", "")))
    if not cold:  # answered from the cache: asked again (perhaps replayed), the very same answer
        again = client.get(path, wire(client, headers))
        assert (again.status, again.body) == (200, response.body)
        assert sorted(again.headers.items()) == sorted(response.headers.items())


# -- 3. provider data --------------------------------------------------------------------------


class _NoOffset(tzinfo):
    """A tzinfo that names no offset: the datetime stays naive (taken as UTC)."""

    def utcoffset(self, dt: datetime | None) -> None:
        return None

    def dst(self, dt: datetime | None) -> None:
        return None


_offsets = st.builds(
    timezone,
    st.timedeltas(min_value=timedelta(hours=-23, minutes=-59), max_value=timedelta(hours=23, minutes=59)),
)
GOOD_LOCS = ["/", "/p/1", "/caf\u00e9", "/a?x=1&y=2", "p/relative", f"{BASE}/abs", "//shop.example/p", "/%zz"]
HOSTILE_LOCS = [
    *["javascript:alert(1)", "//evil.example/x", "https://evil.example/", "http://shop.example/p"],
    *["https://shop.example@evil.example/", "https://shop.example.evil.example/", "data:,x", "", " "],
    *["/\x00", "/a\x1fb", "/\ud800", "/a\udfffb", "https://shop.example:99999/", "https://[::1/"],
    *["mailto:x@y", "https:", "//", "///x", "\\\\evil.example"],
    *["/" + "a" * 2100, "/" + "\u00e9" * 400, "/" + "b" * 100_000],  # over 2,047 characters
]
entry_locs = st.one_of(
    st.sampled_from(GOOD_LOCS),
    st.sampled_from(HOSTILE_LOCS),
    st.text(max_size=30),  # anything: control characters, lone surrogates, other scripts
    st.text(max_size=30).map(lambda text: "/" + text),
    st.text(max_size=30).map(lambda text: f"{BASE}/{text}"),
    st.integers(1000, 3000).map(lambda n: "/" + "c" * n),
)
lastmods = st.one_of(
    st.none(),
    st.datetimes(),  # naive: taken as UTC
    st.datetimes(timezones=_offsets),  # includes 0001-01-01 and 9999-12-31 with offsets
    st.datetimes(timezones=st.just(_NoOffset())),
    st.dates(),
    st.sampled_from(
        [
            *["2024-01-01", "2024-13-01", "2024-02-30", "2024-01-01T00:00:00Z", "2024-01-01T25:00"],
            *["0001-01-01T00:30+01:00", "9999-12-31T23:59:59-01:00", "2024-01-01 12:00", "24-1-1", "now"],
            *["2024-01-01T00:00:00+24:00", "2024-01-01T00:00:00.123456789", "\ud800", " 2024-01-01 "],
        ]
    ),
    st.text(max_size=30),
    st.integers(),
    st.floats(),
)
changefreqs = st.one_of(
    st.none(),
    st.sampled_from(["always", "hourly", "daily", "weekly", "monthly", "yearly", "never"]),
    st.sampled_from(["DAILY", "Daily", "sometimes", "", " daily", "daily\x00"]),
    st.text(max_size=10),
    st.integers(),
    st.lists(st.integers(), max_size=1),  # unhashable
    st.just({}),
)
priorities = st.one_of(
    st.none(),
    st.floats(),  # NaN, infinities, negatives, subnormals
    st.floats(0, 1),
    st.decimals(),  # NaN, sNaN, infinities
    st.integers(-3, 3),
    st.booleans(),
    st.fractions(),
    st.text(max_size=5),
)
_good_locs = st.sampled_from(GOOD_LOCS)
url_records = st.one_of(
    st.builds(Url, loc=entry_locs, lastmod=lastmods, changefreq=changefreqs, priority=priorities),
    # One hostile field at a time, so each field's checks are reached (a bad earlier field
    # would skip the entry before a later one is looked at).
    st.builds(Url, loc=entry_locs),
    st.builds(Url, loc=_good_locs, lastmod=lastmods),
    st.builds(Url, loc=_good_locs, changefreq=changefreqs),
    st.builds(Url, loc=_good_locs, priority=priorities),
)
mappings = st.one_of(
    st.fixed_dictionaries(
        {"loc": entry_locs}, optional={"lastmod": lastmods, "changefreq": changefreqs, "priority": priorities}
    ),
    st.dictionaries(
        st.one_of(st.sampled_from(["url", "href", "loc", "lastmod", "extra"]), st.text(max_size=5)),
        st.one_of(st.none(), st.text(max_size=5)),
        max_size=3,
    ),
    st.just({1: 2}),
)
# Hypothesis fills a NamedTuple's fields it is not given: these keep a Url to its core fields.
CORE_ONLY = {"alternates": st.none(), "images": st.none(), "videos": st.none(), "news": st.none()}
# Entries that are valid whatever else the provider yields: each must be served.
_good_entries = st.builds(
    Url,
    **CORE_ONLY,
    # Not "/ok/." or "/ok/..": dot-segments are removed, so those are served as another loc.
    loc=st.text("abcxyz019-_.~", max_size=20)
    .filter(lambda text: text not in {".", ".."})
    .map("/ok/".__add__),
    lastmod=st.one_of(
        st.none(), st.dates(), st.datetimes(min_value=datetime(2, 1, 1), max_value=datetime(9998, 1, 1))
    ),
    changefreq=st.one_of(st.none(), st.sampled_from(["daily", "never"])),
    priority=st.one_of(st.none(), st.floats(0, 1)),
)
_bad_or_not = st.one_of(
    url_records,
    mappings,
    entry_locs,
    st.none(),
    st.integers(),
    st.binary(max_size=10),
    st.floats(),
    st.tuples(st.text(max_size=5)),
)
# (known to be valid, entry) pairs, so a test can tell which entries must be served.
entries = st.lists(
    st.one_of(_good_entries.map(lambda entry: (True, entry)), _bad_or_not.map(lambda entry: (False, entry))),
    max_size=25,
)
providers = st.sampled_from(["list", "generator", "async"])
# Url records of the common shape (each field on its rule's fast path and caches): a plain
# path and a UTC datetime, with every changefreq and priority, valid or not.
_fast_shaped = st.builds(
    Url,
    **CORE_ONLY,
    loc=st.one_of(
        st.sampled_from(["/", "/a?x=1&y=2", "/&", "/" + "&" * 2026, "/" + "a" * 2027]),
        st.text("abc/?&=-._~019", max_size=2100).map(lambda text: "/" + text),
    ),
    lastmod=st.datetimes(timezones=st.sampled_from([UTC, timezone(timedelta(0), "Z")])).map(
        lambda moment: moment.replace(microsecond=0) if moment.microsecond % 4 else moment
    ),
    changefreq=st.one_of(st.sampled_from([None, "daily", "never"]), changefreqs),
    priority=st.one_of(st.sampled_from([None, 0.0, 0.5, 1.0]), st.floats(0, 1), priorities),
)


_MOMENT = datetime(2024, 5, 1, 12, 30, tzinfo=UTC)


@settings(FUZZ, max_examples=1000)  # cheap: no app, no I/O
@given(raw=st.one_of(_fast_shaped, url_records, mappings, entry_locs))
@example(raw=Url("/a?x=1&y=2", lastmod=_MOMENT, changefreq="daily", priority=0.5))
@example(raw=Url("/p", lastmod=_MOMENT, priority=0.123456))
@example(raw=Url("/p", lastmod=_MOMENT, priority=math.nan))
@example(raw=Url("/p", lastmod=_MOMENT, priority=1.5))
@example(raw=Url("/p", lastmod=_MOMENT.replace(microsecond=1)))
@example(raw=Url("/p", lastmod=_MOMENT, changefreq="Daily"))
@example(raw=Url("/" + "a" * 2027, lastmod=_MOMENT))
def test_element_writes_the_validated_fields_of_the_entry(raw: object) -> None:
    """`Normaliser.element` writes what the normaliser validates, errors included, cached or not."""
    normalise = Normaliser(Site.parse(BASE))
    try:
        entry = normalise(raw)
    except EntryError as error:
        reason = error.reason
    else:
        for _ in range(2):  # again, from the priority cache
            text, lastmod = normalise.element(raw)
            url = etree.fromstring(text.encode())
            written = {child.tag: child.text for child in url}
            assert written == {
                name: unescape(value) if name == "loc" else value
                for name, value in entry._asdict().items()
                if value is not None
            }
            assert lastmod == entry.lastmod
        return
    with pytest.raises(EntryError) as raised:
        normalise.element(raw)
    assert raised.value.reason == reason


page_sizes = st.one_of(st.integers(1, 4), st.just(50_000))
max_page_bytes = st.sampled_from([1024, 4096, 50 * 1024 * 1024])


def fed(sitemaps: Sitemaps, shape: str, items: list[object], page_size: int) -> None:
    """Register section ``items`` whose provider returns ``items`` as a list, a generator or async."""
    if shape == "list":
        sitemaps.add_provider("items", lambda: list(items), page_size=page_size)
    elif shape == "generator":

        def generate() -> Iterator[object]:
            yield from items

        sitemaps.add_provider("items", generate, page_size=page_size)
    else:

        async def stream() -> AsyncIterator[object]:
            for item in items:
                yield item

        sitemaps.add_provider("items", stream, page_size=page_size)


def crawl(client: SitemapClient) -> tuple[Response, Response, dict[str, Response]]:
    """The index, page 1 (always: it renders, and counts skips, even when nothing is valid)
    and every page the index lists, by path."""
    index = client.get("/sitemap-index.xml")
    first = client.get("/sitemap-items-1.xml")
    pages = {"/sitemap-items-1.xml": first}
    if index.status == 200:
        for loc in locs(validate(index.body)):
            path = loc.removeprefix(BASE)
            pages[path] = pages.get(path) or client.get(path)
    return index, first, pages


@FUZZ
@given(pairs=entries, shape=providers, page_size=page_sizes, max_bytes=max_page_bytes)
def test_hostile_entries_give_valid_documents_with_locs_on_our_origin(
    make_client: MakeClient, pairs: list[tuple[bool, object]], shape: str, page_size: int, max_bytes: int
) -> None:
    sitemaps = Sitemaps(base_url=BASE, max_page_bytes=max_bytes)
    fed(sitemaps, shape, [entry for _, entry in pairs], page_size)
    index, first, pages = crawl(make_client(sitemaps))

    event(f"index {index.status}, {len(pages)} page(s)")
    if index.status == 404:  # siteindex.xsd needs a child: only when not one entry is valid
        assert first.status == 404
        assert not any(good for good, _ in pairs)
        return
    assert index.status == 200
    for response in pages.values():
        assert response.status == 200
        assert len(response.body) <= max_bytes
        for loc in locs(validate(response.body)):
            assert loc.startswith(BASE + "/")
            assert len(loc) < 2048


@FUZZ
@given(pairs=entries, shape=providers, page_size=page_sizes, max_bytes=max_page_bytes)
def test_every_entry_is_served_or_counted_as_skipped(
    make_client: MakeClient, pairs: list[tuple[bool, object]], shape: str, page_size: int, max_bytes: int
) -> None:
    sitemaps = Sitemaps(base_url=BASE, max_page_bytes=max_bytes)
    fed(sitemaps, shape, [entry for _, entry in pairs], page_size)
    _, _, pages = crawl(make_client(sitemaps))

    served = Counter(
        loc for response in pages.values() if response.status == 200 for loc in locs(validate(response.body))
    )
    counters = sitemaps.stats.snapshot().get("items", {})
    skipped = sum(value for name, value in counters.items() if name.startswith("skipped:"))
    # docs/protocol.md: every skipped entry is counted as skipped:<reason>. Each page is rendered once
    # (then cached), planning never counts a skip, and page 1 was rendered even when nothing
    # is valid; so every entry is exactly one served <url> or exactly one skip.
    assert served.total() + skipped == len(pairs)
    good = Counter(BASE + entry.loc for known, entry in pairs if known and isinstance(entry, Url))
    assert not good - served  # a valid entry is never lost among bad ones


Served = tuple[str, str | None, str | None, str | None]  # loc, lastmod, changefreq, priority

# docs/protocol.md: a lastmod later than the clock (by more than 10 minutes; a date, than the day it
# may already be somewhere, UTC+14) or earlier than 1991 is not published. The sitemaps
# below run at the fake clock `NOW`.
CLOCK = datetime.fromtimestamp(NOW, UTC).replace(tzinfo=None)


def believable(value: date) -> bool:
    if isinstance(value, datetime):
        return datetime(1991, 1, 1) <= value <= CLOCK + timedelta(minutes=10)
    return date(1991, 1, 1) <= value <= (CLOCK + timedelta(hours=14, minutes=10)).date()


def _served_as(
    text: str, lastmod: date | None, changefreq: str | None, tenths: int | None
) -> tuple[Url, Served]:
    """A valid `Url` below ``/ok/``, and exactly what its <url> must hold."""
    priority, priority_text = (None, None) if tenths is None else (tenths / 10, f"{tenths / 10:.1f}")
    if isinstance(lastmod, datetime):  # naive: taken as UTC, served to the second
        lastmod_text = lastmod.replace(microsecond=0).isoformat() + "+00:00"
    else:
        lastmod_text = None if lastmod is None else lastmod.isoformat()
    if lastmod is not None and not believable(lastmod):
        lastmod_text = None  # the URL is served, without a lastmod that cannot be true
    served = (f"{BASE}/ok/{text}", lastmod_text, changefreq and changefreq.lower(), priority_text)
    return Url("/ok/" + text, lastmod=lastmod, changefreq=changefreq, priority=priority), served


# Valid entries alone (a string is a loc alone), each with what it must be served as.
# Without dot-segments ("/./", "/../", a final "/." or "/.."), which are removed.
_ok_paths = st.text("abcxyz019-_.~!$&'()*+,;=:@/", max_size=20).filter(
    lambda text: not any(segment in {".", ".."} for segment in text.split("/"))
)
_served_exactly = st.one_of(
    _ok_paths.map(lambda text: ("/ok/" + text, (f"{BASE}/ok/{text}", None, None, None))),
    st.builds(
        _served_as,
        _ok_paths,
        st.one_of(
            st.none(), st.dates(), st.datetimes(min_value=datetime(2, 1, 1), max_value=datetime(9998, 1, 1))
        ),
        st.one_of(st.none(), st.sampled_from(["daily", "Never", "HOURLY"])),
        st.one_of(st.none(), st.integers(0, 10)),
    ),
)


@settings(FUZZ, max_examples=75)  # every entry is served: up to 25 pages an example
@given(
    pairs=st.lists(_served_exactly, min_size=1, max_size=25),
    shape=providers,
    page_size=page_sizes,
    max_bytes=max_page_bytes,
)
def test_valid_entries_are_all_served_exactly_and_in_order(
    make_client: MakeClient,
    pairs: list[tuple[object, Served]],
    shape: str,
    page_size: int,
    max_bytes: int,
) -> None:
    sitemaps = Sitemaps(base_url=BASE, max_page_bytes=max_bytes, clock=lambda: NOW)
    fed(sitemaps, shape, [entry for entry, _ in pairs], page_size)
    index, _, pages = crawl(make_client(sitemaps))

    assert index.status == 200
    served = []
    for response in pages.values():  # in the index's order
        assert response.status == 200
        for url in validate(response.body):
            fields = ("loc", "lastmod", "changefreq", "priority")
            served.append(tuple(url.findtext(f"sm:{name}", namespaces=NS) for name in fields))
    assert served == [expected for _, expected in pairs]
    assert not any(name.startswith("skipped:") for name in sitemaps.stats.snapshot().get("items", {}))


# -- 4. cache poisoning ------------------------------------------------------------------------

POISON_HEADERS = [
    *["Host", "X-Forwarded-Host", "X-Forwarded-Server", "X-Host", "X-Original-Host", "Forwarded"],
    *["X-Forwarded-Proto", "X-Forwarded-Scheme", "X-Forwarded-Port", "X-Forwarded-Prefix"],
    *["X-Original-URL", "X-Rewrite-URL", "X-Script-Name", "X-Forwarded-For"],
]
POISON_VALUES = [
    *["{e}", "{e}:8443", "https://{e}", "//{e}", "shop.example@{e}", "{e}, shop.example", "http"],
    *["for=192.0.2.1;host={e};proto=http", 'host="{e}"', "/{e}", "/{e}/sitemap-index.xml", "8443"],
]
POISON_PATHS = [
    "/sitemap-index.xml",
    "/sitemap.xml.gz",
    "/sitemap-products-1.xml",
    "/sitemap-products-3.xml.gz",
    "/sitemap-blog-posts-1.xml",
    "/robots.txt",
]
attackers = st.from_regex(r"evil[a-z0-9]{1,8}\.attacker\.test", fullmatch=True)


def hostile_headers(attacker: str) -> st.SearchStrategy[dict[str, str]]:
    values = st.sampled_from(POISON_VALUES).map(lambda template: template.format(e=attacker))
    return st.dictionaries(st.sampled_from(POISON_HEADERS), values, min_size=1, max_size=4)


def document(response: Response, path: str) -> bytes:
    return response.body if path == "/robots.txt" else body_of(response, path)


@pytest.mark.parametrize(
    "sites",
    [
        pytest.param({}, id="one-site"),
        pytest.param({"hosts": ["shop.example.de"]}, id="allow-list"),
        pytest.param(
            {"hosts": Hosts({"blog.example": "https://blog.example/en"}, trust_forwarded=True)},
            id="allow-list-behind-a-proxy",
        ),
    ],
)
@FUZZ
@given(path=st.sampled_from(POISON_PATHS), attacker=attackers, data=st.data())
def test_host_and_forwarded_headers_never_change_what_is_served(
    make_client: MakeClient, sites: dict[str, Any], path: str, attacker: str, data: st.DataObject
) -> None:
    # Both test clients deliver these headers to the app unchanged (Host included). The
    # attacker's host is never on the allow-list, so the default site must be served.
    headers = data.draw(hostile_headers(attacker), label="headers")
    identity = {"Accept-Encoding": "identity"}
    reference = make_client(shop()).get(path, identity)
    client = make_client(shop(**sites))

    poisoned = client.get(path, {**identity, **headers})  # cold: it renders and fills the cache
    after = client.get(path, identity)  # an innocent client, served from that cache

    for response in (poisoned, after):
        assert response.status == reference.status == 200
        assert document(response, path) == document(reference, path)
        assert attacker not in document(response, path).decode()
        assert attacker not in str(response.headers)
