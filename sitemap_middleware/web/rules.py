"""Sans-I/O HTTP: which of our paths a request names, and the header rules we answer with.

Nothing here touches a socket, an environ or a scope; adapters translate to and from it::

    route = match_route("/sitemap-products-2.xml.gz", {"products"})
    # Route(kind="page", section="products", number=2, gz_file=True)
    match_route("/sitemap-index-2.xml", {"products"})
    # Route(kind="index", number=2): the second index file
"""

from __future__ import annotations

import re
import time
from collections.abc import Container
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from werkzeug.http import http_date, parse_accept_header, parse_date, parse_etags

from ..protocol.uris import quote_uri, remove_dot_segments

__all__ = [
    "Route",
    "Validators",
    "accepts_gzip",
    "index_path",
    "match_route",
    "mount_prefix",
    "not_modified",
    "page_path",
    "route_path",
]

ALLOWED_METHODS = ("GET", "HEAD")
ALLOW_HEADER = ", ".join(ALLOWED_METHODS)
XML_TYPE = "application/xml; charset=utf-8"
GZIP_TYPE = "application/gzip"
TEXT_TYPE = "text/plain; charset=utf-8"
HTML_TYPE = "text/html; charset=utf-8"

INDEX_NAMES = frozenset({"/sitemap-index.xml", "/sitemap.xml"})  # the first index file
INDEX_PATH = "/sitemap-index.xml"
INDEX_SECTION = "index"  # never a section's name: "/sitemap-index-<n>.xml" are index files
ROBOTS_PATH = "/robots.txt"
# Greedy section, so "sitemap-blog-posts-3.xml" is section "blog-posts", page 3. ASCII
# digits only: "\d" would also match Arabic-Indic digits and let a non-canonical path through.
_PAGE = re.compile(r"/sitemap-([a-z0-9_-]+)-([0-9]+)\.xml")
_INDEX_FILE = re.compile(r"/sitemap-index-([0-9]+)\.xml")


@dataclass(frozen=True, slots=True)
class Route:
    """One of our resources. ``kind="missing"`` is a bad page (or index file) number of ours.

    ``number``: the page of a section, or the index file (1 for ``/sitemap-index.xml``).
    """

    kind: Literal["index", "page", "robots", "missing", "overview", "key"]
    section: str = ""
    number: int = 0
    gz_file: bool = False


_ROBOTS = Route("robots")
# The HTML overview's route: its path is configured (`Sitemaps(overview_path=...)`), not matched here.
OVERVIEW = Route("overview")
# A push target's key file (`answers.key_files`): its paths are configured too.
KEY_FILE = Route("key")


def match_route(path: str, sections: Container[str]) -> Route | None:
    """The resource ``path`` names, or ``None`` when it belongs to the wrapped app."""
    if not path.startswith("/sitemap"):  # every path of ours but one: the app's paths leave here
        return _ROBOTS if path == ROBOTS_PATH else None
    gz_file = path.endswith(".gz")
    if gz_file:
        path = path[:-3]
    if path in INDEX_NAMES:
        return Route("index", number=1, gz_file=gz_file)
    match = _INDEX_FILE.fullmatch(path)
    if match is not None:
        number = _number(match[1])
        # The first index file has one name, "/sitemap-index.xml": "-1" is a 404 like "-01".
        if number is None or number == 1:
            return Route("missing", gz_file=gz_file)
        return Route("index", number=number, gz_file=gz_file)
    match = _PAGE.fullmatch(path)
    if match is None or match[1] not in sections:
        # Sitemap-looking names of sections we do not own stay the app's.
        return None
    number = _number(match[2])
    if number is None:
        return Route("missing", section=match[1], gz_file=gz_file)
    return Route("page", section=match[1], number=number, gz_file=gz_file)


def index_path(number: int) -> str:
    """The canonical path of index file ``number`` (from 1), as `match_route` reads it."""
    return INDEX_PATH if number == 1 else f"/sitemap-{INDEX_SECTION}-{number}.xml"


def page_path(section: str, number: int) -> str:
    """The path of page ``number`` (from 1) of ``section``, as `match_route` reads it."""
    return f"/sitemap-{section}-{number}.xml"


def _number(digits: str) -> int | None:
    """A page or index file number as written canonically, else ``None``.

    0, "01" and absurd numbers are ours, and never a document: one URL per document.
    """
    if digits[0] == "0" or len(digits) > 9:
        return None
    return int(digits)


@lru_cache(maxsize=512)
def accepts_gzip(accept_encoding: str | None) -> bool:
    """RFC 9110 §12.5.3: gzip unless refused with q=0 (``*`` counts; ``x-gzip`` is gzip, §8.4.1.3)."""
    if not accept_encoding:
        return False
    qualities = {value.lower(): quality for value, quality in parse_accept_header(accept_encoding)}
    for coding in ("gzip", "x-gzip", "*"):
        if coding in qualities:
            return qualities[coding] > 0
    return False


@lru_cache(maxsize=64)
@lru_cache(maxsize=64)  # the server's mount points: a handful per process
def mount_prefix(script_name: str) -> str:
    """SCRIPT_NAME / root_path as the URI path our emitted URLs start with.

    Both are decoded paths: a "?" or "#" in them is data, so it is escaped, and their
    dot-segments are removed (RFC 3986 §5.2.4) as a client would before asking.
    """
    path = quote_uri(script_name).replace("?", "%3F").replace("#", "%23")
    return (remove_dot_segments(path) if path.startswith("/") else path).rstrip("/")


def route_path(path: str, root_path: str) -> str:
    """An ASGI path below its mount point (``root_path``): servers differ on whether
    ``path`` includes it."""
    root = root_path.rstrip("/")
    if root and (path == root or path.startswith(root + "/")):
        return path[len(root) :] or "/"
    return path


@dataclass(frozen=True, slots=True)
class Validators:
    """What conditional requests are compared with: a strong ETag and a Last-Modified."""

    etag: str | None  # strong and quoted, e.g. '"3f2a…"' (never weak: we make them all)
    last_modified: int | None  # epoch seconds

    def headers(self) -> list[tuple[str, str]]:
        out = []
        if self.etag is not None:
            out.append(("ETag", self.etag))
        if self.last_modified is not None:
            out.append(("Last-Modified", _http_date(self.last_modified)))
        return out


def not_modified(
    validators: Validators,
    if_none_match: str | None,
    if_modified_since: str | None,
    *,
    now: float | None = None,
) -> bool:
    """RFC 9110 §13.2.2: should a GET or HEAD be answered 304?

    If-None-Match, when present, decides alone (weak comparison, §13.1.2) and
    If-Modified-Since is then ignored; a malformed date is ignored, and so is one later
    than ``now`` (§13.1.3), our clock in epoch seconds: pass it to keep the call pure;
    ``None`` reads ``time.time()``.
    """
    if if_none_match:
        if validators.etag is None:
            return False
        if if_none_match.strip() == "*":
            return True
        return _etags(if_none_match).contains_weak(validators.etag[1:-1])  # ours are all '"…"'
    if if_modified_since and validators.last_modified is not None:
        since = parse_date(if_modified_since)
        if since is None:
            return False
        timestamp = since.timestamp()
        # RFC 9110 §13.1.3: a date later than our clock proves nothing about our copy.
        if timestamp > (time.time() if now is None else now):
            return False
        # HTTP dates have no fraction: last_modified is whole seconds already.
        return validators.last_modified <= timestamp
    return False


# Crawlers send the same few header values over and over: parse each once. Bounded, so
# a client sending a new value with every request only costs the parse.
_http_date = lru_cache(maxsize=1024)(http_date)
_etags = lru_cache(maxsize=1024)(parse_etags)
