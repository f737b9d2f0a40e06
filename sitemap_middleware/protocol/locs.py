"""Where a sitemap's URLs may point: a page's loc on the site, and a file's URL on any host.

Every URL we write passes one of two rules, and comes out absolute, canonical (RFC 3986:
IRIs percent-encoded as UTF-8, IDN hosts in punycode, dot-segments and fragments gone),
under 2,048 characters and XML-escaped::

    rules = LocRules(Site.parse("https://shop.example"))
    rules.loc("/p/caf\u00e9?a=1&b=2")          # 'https://shop.example/p/caf%C3%A9?a=1&amp;b=2'
    rules.resource("https://CDN.example.net/i.jpg")  # 'https://cdn.example.net/i.jpg'
    rules.loc("https://evil.example/")          # EntryError: other host

`loc` keeps a page on the site's scheme and host (a sitemap lists its own site's pages, and
hreflang alternates too); `resource` lets an image, a video or a player live elsewhere (a
CDN), on http or https. `Normaliser` is a `LocRules` for the site and mount it writes for.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from ..errors import EntryError
from .uris import Site, canonical_host, check_host, quote_uri, remove_dot_segments
from .xmltext import escape_uri

__all__ = ["MAX_LOC_LENGTH", "MIN_LOC_LENGTH", "PLAIN_PATH", "LocRules"]

# sitemaps.org: "must be less than 2,048 characters"; the XSD also demands at least 12.
MAX_LOC_LENGTH = 2047
MIN_LOC_LENGTH = 12

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")
# A path on our site ("/..." but not "//host/...") made only of these needs no quoting and
# holds nothing to reject: the fast path, checked in one match. Not "#", and no "." or ".."
# segment before any "?": those take the slow path, which drops the fragment and removes
# dot-segments. The lookahead scans the path once more, which is cheaper than checking
# segment by segment inside the main loop (benchmarks/HISTORY.md, "Figures behind the code's
# choices"). Not "%": an escape may need fixing.
PLAIN_PATH = re.compile(r"(?![^?]*/\.\.?(?:[/?]|\Z))/(?!/)[A-Za-z0-9\-._~:/?@!$&'()*+,;=]*")
# XML 1.0 forbids C0 controls except tab/LF/CR; in a URL even those are malformed.
_CONTROL = re.compile(r"[\x00-\x20\x7f-\x9f]")
# An absolute http(s) URL on a lowercase ASCII host with no port, before its path: an image
# on a CDN, most often. With a plain path after it, it is canonical as it stands.
_PLAIN_ORIGIN = re.compile(r"https?://[a-z0-9](?:[a-z0-9\-.]*[a-z0-9])?(?=/)")
_SCHEMES = frozenset({"http", "https"})


class LocRules:
    """The loc and resource rules for one site, below the app's mount path ``prefix``
    (SCRIPT_NAME / root_path, URI-encoded): a relative loc is a path as the app sees it,
    so it is joined below ``base_url`` + ``prefix``."""

    __slots__ = ("_max_path", "_min_path", "_origin_slash", "_root", "site")

    def __init__(self, site: Site, prefix: str = "") -> None:
        self.site = site
        self._root = site.root + prefix  # relative locs live under the app's mount point
        # Plain paths within these lengths are neither too long nor too short as URLs.
        self._min_path = MIN_LOC_LENGTH - len(self._root)
        self._max_path = MAX_LOC_LENGTH + 1 - len(self._root)
        self._origin_slash = site.origin + "/"

    def loc(self, loc: object) -> str:
        """Validate and canonicalise one loc; the result is absolute, ASCII and XML-escaped."""
        return escape_uri(self._canonical(loc))

    def resource(self, url: object) -> str:
        """`loc` for a file a page uses (an image, a video, its player): on any http(s) host.

        Google reads them from other hosts (a CDN) too. A path is on the site, as a loc is.
        """
        if isinstance(url, str) and not url.startswith(self._origin_slash) and url[:1] != "/":
            plain = _PLAIN_ORIGIN.match(url)
            if plain is not None and PLAIN_PATH.fullmatch(url, plain.end()) and len(url) <= MAX_LOC_LENGTH:
                return escape_uri(url)  # the common case: a plain URL on a CDN
            if _SCHEME.match(url) is not None:
                absolute = self._elsewhere(url)
                if len(absolute) > MAX_LOC_LENGTH:
                    raise EntryError(
                        "loc too long", f"{len(absolute):,} characters, the limit is {MAX_LOC_LENGTH:,}"
                    )
                return escape_uri(absolute)
        elif isinstance(url, str) and url.startswith("//") and not url.startswith(self._origin_slash):
            return self.resource(f"{self.site.scheme}:{url}")
        return self.loc(url)

    def _elsewhere(self, url: str) -> str:
        """An absolute http(s) URL on any host, canonical (as `_absolute` makes one on ours)."""
        if _CONTROL.search(url) is not None:
            raise EntryError("invalid loc", "whitespace or control character")
        if not url.isascii():
            try:
                url.encode("utf-8")
            except UnicodeEncodeError:
                raise EntryError("invalid loc", "not valid Unicode (lone surrogate)") from None
        url = url.partition("#")[0]
        try:
            parts = urlsplit(url)
            hostname, port = parts.hostname, parts.port
        except ValueError:
            raise EntryError("invalid loc", url[:100]) from None
        scheme = parts.scheme.lower()
        if scheme not in _SCHEMES:
            raise EntryError("other scheme", url[:100])
        if not hostname or parts.username is not None or parts.password is not None:
            raise EntryError("invalid loc", url[:100])
        try:
            host = canonical_host(scheme, hostname, port)
        except UnicodeError:
            raise EntryError("invalid loc", url[:100]) from None
        try:
            check_host(host, parts.netloc)
        except ValueError:
            raise EntryError("invalid loc", f"host {host[:100]!r}") from None
        tail = url[url.index("//") + 2 + len(parts.netloc) :]
        return f"{scheme}://{host}{remove_dot_segments(quote_uri(tail or '/'))}"

    def _canonical(self, loc: object) -> str:
        """`loc`, not yet XML-escaped."""
        if not isinstance(loc, str):
            raise EntryError("invalid loc", f"{type(loc).__name__} is not a string")
        if not loc:
            raise EntryError("invalid loc", "empty")
        if PLAIN_PATH.fullmatch(loc) is not None:
            absolute = self._root + loc  # the common case: a plain path on our site
        elif loc.startswith(self._origin_slash) and PLAIN_PATH.fullmatch(loc, len(self._origin_slash) - 1):
            absolute = loc  # a plain absolute URL on our origin: its path is checked in place
        else:
            absolute = self._slow_loc(loc)
        if len(absolute) > MAX_LOC_LENGTH:
            raise EntryError("loc too long", f"{len(absolute):,} characters, the limit is {MAX_LOC_LENGTH:,}")
        if len(absolute) < MIN_LOC_LENGTH:
            raise EntryError("loc too short", absolute)
        return absolute

    def _slow_loc(self, loc: str) -> str:
        """Every loc that needs quoting, joining or a host check (or holds something bad).

        A fragment is dropped: it names a part of the page, and the sitemap lists the page
        (crawlers drop it too). A ``#!`` one is refused instead, as "invalid loc": each
        names another view of an AJAX app, and dropping it would list the page once per view.
        Dot-segments are removed (RFC 3986 §5.2.4) from the loc's own path before it is
        joined, so a relative loc never climbs out of ``base_url`` and the mount path.
        """
        if _CONTROL.search(loc) is not None:
            raise EntryError("invalid loc", "whitespace or control character")
        if not loc.isascii():
            try:
                loc.encode("utf-8")
            except UnicodeEncodeError:
                raise EntryError("invalid loc", "not valid Unicode (lone surrogate)") from None
        loc, _, fragment = loc.partition("#")
        if fragment.startswith("!"):
            raise EntryError("invalid loc", "a #! fragment names a view the page alone cannot stand for")
        if loc.startswith(self._origin_slash):
            # Quote only after the authority: an IPv6 host's brackets must stay as they are.
            absolute = self.site.origin + remove_dot_segments(quote_uri(loc[len(self._origin_slash) - 1 :]))
        elif loc[:1] == "/" and not loc.startswith("//"):
            absolute = self._root + remove_dot_segments(quote_uri(loc))
        elif loc.startswith("//") or _SCHEME.match(loc) is not None:
            absolute = self._absolute(loc)
        else:
            absolute = self._root + remove_dot_segments(f"/{quote_uri(loc)}")
        return absolute

    def _absolute(self, loc: str) -> str:
        site = self.site
        # EntryError is a ValueError: raise it outside the try, or its reason would be lost.
        try:
            parts = urlsplit(f"{site.scheme}:{loc}" if loc.startswith("//") else loc)
            hostname, port = parts.hostname, parts.port
        except ValueError:
            raise EntryError("invalid loc", loc[:100]) from None
        scheme = parts.scheme.lower()
        if scheme != site.scheme:
            raise EntryError("other scheme", loc[:100])
        if not hostname:
            raise EntryError("invalid loc", loc[:100])
        if parts.username is not None or parts.password is not None:
            # https://shop.example@evil.com/ is evil.com; credentials never belong in a sitemap.
            raise EntryError("other host", loc[:100])
        try:
            host = canonical_host(scheme, hostname, port)
        except UnicodeError:
            raise EntryError("invalid loc", loc[:100]) from None
        if host != site.host:
            raise EntryError("other host", loc[:100])
        # The authority follows the first "//" (a scheme cannot hold "/"); searching for the
        # netloc text instead would find "s" inside "https" for a host named "s".
        tail = loc[loc.index("//") + 2 + len(parts.netloc) :]
        return site.origin + remove_dot_segments(quote_uri(tail or "/"))
