"""Which headers a sitemap document is served with, and its validators, per representation.

Cached hits and 304s are the hot path (crawlers revalidate far more often than pages
change), so everything a stored document's answers share is computed once per document
and representation, then reused until the document changes::

    headers = DocumentHeaders(HeaderPolicy(cache_control="public, max-age=600", robots_tag="noindex"))
    prepared = headers.prepare(document, "page|...", route, gzip=True)
    prepared.ok              # Content-Type, Vary, Content-Encoding, Cache-Control, ETag, ...
    prepared.not_modified    # RFC 9110 §15.4.5: only ETag, Last-Modified, Cache-Control, Vary
"""

from __future__ import annotations

from dataclasses import dataclass

from ..caching.stores import Document
from . import rules
from .replies import Request
from .rules import Validators
from .tags import CacheTags

__all__ = ["DocumentHeaders", "HeaderPolicy", "Prepared", "is_not_modified", "representation", "wants_gzip"]

# Prepared answers kept at most; keys come from documents, which come and go.
_PREPARED_LIMIT = 10_000


@dataclass(frozen=True, slots=True)
class HeaderPolicy:
    """Headers every sitemap document carries (configured on `Sitemaps`)."""

    cache_control: str | None
    robots_tag: str | None
    # The tags CDNs purge by (`tags`), on 200s only: a 304 carries none (RFC 9110 §15.4.5).
    cache_tags: CacheTags | None = None


@dataclass(frozen=True, slots=True)
class Prepared:
    """What every hit on one stored document in one representation shares.

    Holds the document's fingerprint, never the document: the cache alone decides how
    long a body stays in memory.
    """

    fingerprint: tuple[str, int, int, int]
    validators: Validators
    ok: list[tuple[str, str]]
    not_modified: list[tuple[str, str]]
    raw_ok: list[tuple[bytes, bytes]]
    raw_not_modified: list[tuple[bytes, bytes]]


def encode(headers: list[tuple[str, str]]) -> list[tuple[bytes, bytes]]:
    return [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in headers]


class DocumentHeaders:
    """Headers of sitemap documents under one `HeaderPolicy`, prepared once per stored document."""

    def __init__(self, policy: HeaderPolicy) -> None:
        self.policy = policy
        self._prepared: dict[tuple[str, bool, bool], Prepared] = {}

    def prepare(self, document: Document, key: str, route: rules.Route, gzip: bool) -> Prepared:
        """Validators and both header sets of the document stored under ``key``.

        Formatting dates and headers per request was a large part of what a hit or a 304
        costs (benchmarks/HISTORY.md, "Figures behind the code's choices").
        """
        slot = (key, route.gz_file, gzip)
        fingerprint = (document.etag, document.last_modified, document.size, len(document.body))
        prepared = self._prepared.get(slot)
        if prepared is not None and prepared.fingerprint == fingerprint:
            return prepared
        validators = representation(Validators(f'"{document.etag}"', document.last_modified), gzip)
        ok = self.base(route, gzip) + validators.headers()
        ok.append(("Content-Length", str(len(document.body) if gzip else document.size)))
        not_modified = self.not_modified(validators, route)
        prepared = Prepared(fingerprint, validators, ok, not_modified, encode(ok), encode(not_modified))
        if len(self._prepared) >= _PREPARED_LIMIT:
            self._prepared.clear()
        self._prepared[slot] = prepared
        return prepared

    def not_modified(self, validators: Validators, route: rules.Route) -> list[tuple[str, str]]:
        headers = validators.headers()
        if self.policy.cache_control:
            headers.append(("Cache-Control", self.policy.cache_control))
        if not route.gz_file:
            headers.append(("Vary", "Accept-Encoding"))
        return headers

    def base(self, route: rules.Route, gzip: bool) -> list[tuple[str, str]]:
        """What every 200 of the route carries, before validators and length."""
        if route.gz_file:
            # A .gz file is a gzip document, not an encoded XML one: no Content-Encoding.
            headers = [("Content-Type", rules.GZIP_TYPE)]
        else:
            headers = [("Content-Type", rules.XML_TYPE), ("Vary", "Accept-Encoding")]
            if gzip:
                headers.append(("Content-Encoding", "gzip"))
        if self.policy.cache_control:
            headers.append(("Cache-Control", self.policy.cache_control))
        if self.policy.robots_tag:
            headers.append(("X-Robots-Tag", self.policy.robots_tag))
        if self.policy.cache_tags is not None:
            tagged = self.policy.cache_tags.header(route)
            if tagged is not None:
                headers.append(tagged)
        return headers


def wants_gzip(route: rules.Route, request: Request) -> bool:
    return route.gz_file or rules.accepts_gzip(request.header("accept-encoding"))


def representation(validators: Validators, gzip: bool) -> Validators:
    """The gzip representation is other bytes, so it gets its own (derived) strong ETag."""
    if validators.etag is not None and gzip:
        return Validators(validators.etag[:-1] + '-gz"', validators.last_modified)
    return validators


def is_not_modified(validators: Validators, request: Request) -> bool:
    return rules.not_modified(
        validators, request.header("if-none-match"), request.header("if-modified-since")
    )
