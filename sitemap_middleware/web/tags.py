"""Cache tags: the names a CDN purges a sitemap document by, and the header that carries them.

``Sitemaps(cache_tags="Cache-Tag")`` (Cloudflare) or ``"Surrogate-Key"`` (Fastly) adds one
header to every sitemap document's 200 (page, index file, their ``.gz``, HEAD alike) and to
the robots.txt we merge; a purge by tag then drops exactly the documents that changed::

    tags = CacheTags.named("Surrogate-Key")
    tags.header(Route("page", "products", 3))  # (..., "sitemap sitemap-products sitemap-products-3")
    tags.header(Route("index", number=2))      # (..., "sitemap sitemap-index sitemap-index-2")
    page_tag("products", 3)                    # "sitemap-products-3": what a purge names

A document and its ``.gz`` carry the same tags: both are the same bytes, so both go together.
A 304 carries none (RFC 9110 §15.4.5: only ETag, Last-Modified, Cache-Control, Vary, Date,
Expires; a cache keeps the tags of the 200 it revalidates). The tags name documents, not
sites: a zone serving several hosts or mounts purges each tag on all of them (a harmless
extra fetch), and ``sitemap-products-3`` is both page 3 of ``products`` and the section
``products-3``, so purging one also drops the other (over-purging, never under-purging).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from ..errors import ConfigurationError
from .rules import INDEX_SECTION, Route

__all__ = [
    "ALL_TAG",
    "MAX_TAG_BYTES",
    "ROBOTS_TAG",
    "CacheTags",
    "check_section",
    "index_tag",
    "named",
    "page_tag",
    "section_tag",
]

ALL_TAG = "sitemap"  # every sitemap document
ROBOTS_TAG = "sitemap-robots"  # the robots.txt we merge (it names the index files)
# Cloudflare: a tag of at most 1,024 characters, the header at most 16 KB; Fastly: keys of at
# most 1,024 bytes, Surrogate-Key at most 16,384 bytes. Ours are ASCII, three a document.
MAX_TAG_BYTES = 1024
MAX_HEADER_BYTES = 16 * 1024
# Page numbers have at most 9 digits (`rules.match_route`): the longest tag a section gets.
_LONGEST_PAGE = 999_999_999
# Cloudflare's and Akamai's headers are comma-separated; Fastly's (and Varnish xkey's) use spaces.
_SEPARATORS = {"cache-tag": ",", "edge-cache-tag": ",", "surrogate-key": " ", "xkey": " "}
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # RFC 9110 §5.6.2: a header name


def section_tag(section: str) -> str:
    return f"{ALL_TAG}-{section}"


def page_tag(section: str, number: int) -> str:
    return f"{ALL_TAG}-{section}-{number}"


def index_tag(number: int) -> str:
    return page_tag(INDEX_SECTION, number)


@dataclass(frozen=True, slots=True)
class CacheTags:
    """The header tags travel in (``Cache-Tag``, ``Surrogate-Key``) and what separates them."""

    name: str
    separator: str

    @classmethod
    def named(cls, header: object) -> CacheTags:
        """``Sitemaps(cache_tags=...)``: a header name; its separator is the CDN's for it (a
        comma for ``Cache-Tag`` and ``Edge-Cache-Tag``, else a space, as ``Surrogate-Key``)."""
        if not isinstance(header, str) or _TOKEN.fullmatch(header) is None:
            raise ConfigurationError(
                f"cache_tags must be a header name such as 'Cache-Tag' or 'Surrogate-Key', not {header!r}"
            )
        return cls(header, _SEPARATORS.get(header.lower(), " "))

    def header(self, route: Route) -> tuple[str, str] | None:
        """The tags of the document ``route`` names, as one header (``None``: not a document)."""
        return _header(self.name, self.separator, route.kind, route.section, route.number)

    def robots(self) -> tuple[str, str]:
        return (self.name, self.separator.join((ALL_TAG, ROBOTS_TAG)))


def named(header: str | None) -> CacheTags | None:
    """``Sitemaps(cache_tags=...)``: `CacheTags.named`, or ``None`` (no tags)."""
    return None if header is None else CacheTags.named(header)


def check_section(tags: CacheTags | None, section: str) -> None:
    """With tags on, a section whose page tags would pass the CDNs' limit is refused at registration."""
    if tags is not None and len(page_tag(section, _LONGEST_PAGE)) > MAX_TAG_BYTES:
        raise ConfigurationError(
            f"section name of {len(section):,} characters: its cache tags would pass "
            f"the CDNs' {MAX_TAG_BYTES:,} bytes; use a shorter name"
        )


@lru_cache(maxsize=4096)  # documents a process serves; built once each, not per request
def _header(name: str, separator: str, kind: str, section: str, number: int) -> tuple[str, str] | None:
    if kind == "index":
        tags = (ALL_TAG, section_tag(INDEX_SECTION), index_tag(number))
    elif kind == "page":
        tags = (ALL_TAG, section_tag(section), page_tag(section, number))
    else:
        return None
    return (name, separator.join(tags))
