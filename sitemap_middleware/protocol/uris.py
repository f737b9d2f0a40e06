"""RFC 3986 for a sitemap: the site's canonical origin, and IRIs percent-encoded into URIs.

Every URL we emit starts with the configured site's root, in one canonical spelling::

    site = Site.parse("https://Shop.Example:443/store/")
    site.root                                # 'https://shop.example/store'
    quote_uri("/p/caf\u00e9?a=1")            # '/p/caf%C3%A9?a=1'
    remove_dot_segments("/a/../b?c=/..")     # '/b?c=/..'
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from urllib.parse import quote, urlsplit

from ..errors import ConfigurationError

__all__ = ["Site", "canonical_host", "check_host", "quote_uri", "remove_dot_segments"]

# Characters RFC 3986 allows after the authority (unreserved, reserved and '%'); anything
# else is quoted. Not "[" and "]": §3.2.2 keeps them for an IP literal host, and nothing
# after the host may hold them. Not a second "#": §3.5, a fragment ends the URI.
_URI_SAFE = "-._~:/?#@!$&'()*+,;=%"
_NEEDS_QUOTING = re.compile(r"[^A-Za-z0-9\-._~:/?#@!$&'()*+,;=%]|%(?![0-9A-Fa-f]{2})|#.*#")
_STRAY_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")
_DEFAULT_PORTS = {"http": 80, "https": 443}
# RFC 3986 §3.2.2, narrowed: a reg-name (or IPv4) of unreserved characters only, or an IPv6
# literal in brackets; then an optional port. Sub-delims and %-escapes are legal in a reg-name
# but name no host DNS can resolve, and "&", "'" or "<" there would break the XML we write.
_CANONICAL_HOST = re.compile(r"(?:[a-z0-9\-._~]+|\[[0-9a-f:.]+\])(?::[0-9]+)?")
# RFC 3986 §2.3: "%2E" is ".", so "%2e%2E" is as much a dot-segment as ".." (browsers agree).
_DOT = frozenset({".", "%2e"})
_DOT_DOT = frozenset({"..", ".%2e", "%2e.", "%2e%2e"})
# urlsplit silently drops tabs and newlines and strips leading spaces: refuse them instead.
_CONTROL_OR_SPACE = re.compile(r"[\x00-\x20\x7f-\x9f]")


@dataclass(frozen=True, slots=True)
class Site:
    """The canonical origin (and optional path) that relative locs are joined to."""

    scheme: str
    host: str  # lowercase, IDNA-encoded, with ":port" when not the scheme's default
    path: str  # no trailing slash; "" for the root

    @property
    def origin(self) -> str:
        return f"{self.scheme}://{self.host}"

    @property
    def root(self) -> str:
        """``base_url`` without a trailing slash: where relative locs are joined."""
        return f"{self.scheme}://{self.host}{self.path}"

    @classmethod
    def parse(cls, base_url: str) -> Site:
        """Validate ``base_url`` (``https://shop.example`` or ``https://example.com/shop``)."""
        if not isinstance(base_url, str):
            raise ConfigurationError(f"base_url must be a string, not {type(base_url).__name__}")
        try:
            if _CONTROL_OR_SPACE.search(base_url) is not None:
                raise ValueError("whitespace or control character")
            parts = urlsplit(base_url)
            scheme = parts.scheme.lower()
            if scheme not in _DEFAULT_PORTS or not parts.hostname:
                raise ValueError("expected an absolute http or https URL")
            if parts.query or parts.fragment or parts.username or parts.password:
                raise ValueError("no query, fragment or credentials allowed")
            host = canonical_host(scheme, parts.hostname, parts.port)
            check_host(host, parts.netloc)
        except (ValueError, UnicodeError) as exc:
            raise ConfigurationError(f"invalid base_url {base_url!r}: {exc}") from None
        path = remove_dot_segments(quote_uri(parts.path)).rstrip("/")
        return cls(scheme, host, path)


def canonical_host(scheme: str, hostname: str, port: int | None) -> str:
    # RFC 3986 §6.2.2: hosts compare case-insensitively; IDN hosts travel as punycode.
    host = hostname.lower() if hostname.isascii() else hostname.encode("idna").decode("ascii")
    if ":" in host:
        # RFC 3986 §3.2.2: an IPv6 literal keeps its brackets (urlsplit's hostname drops them).
        host = f"[{host}]"
    if port is not None and port != _DEFAULT_PORTS[scheme]:
        return f"{host}:{port}"
    return host


def check_host(host: str, netloc: str) -> None:
    """Refuse a canonical host that XML or RFC 3986 cannot carry as it is."""
    if _CANONICAL_HOST.fullmatch(host) is None:
        raise ValueError("a host may hold only letters, digits and '-._~' (or be an IPv6 literal)")
    if host.startswith("["):
        ipaddress.IPv6Address(host[1 : host.index("]")])  # raises ValueError
    elif "[" in netloc:
        # urlsplit takes "[v1.x]" (an RFC 3986 IPvFuture) and drops the brackets.
        raise ValueError("only an IPv6 address may stand in brackets")


def quote_uri(text: str) -> str:
    """Percent-encode what RFC 3986 does not allow (as UTF-8), keeping valid escapes."""
    if _NEEDS_QUOTING.search(text) is None:
        return text
    quoted = _STRAY_PERCENT.sub("%25", quote(text, safe=_URI_SAFE))
    head, mark, fragment = quoted.partition("#")
    return head + mark + fragment.replace("#", "%23")


def remove_dot_segments(target: str) -> str:
    """RFC 3986 §5.2.4 on the path of ``target``, an absolute path with an optional query.

    ``/a/../b`` is ``/b``, ``/a/.`` is ``/a/``; ``..`` never climbs above ``/``. The
    query is kept as it is: dots there are data.
    """
    path, mark, query = target.partition("?")
    if "." not in path and "%2" not in path:
        return target  # the common case: nothing that could be a dot-segment
    segments = path.split("/")[1:]
    kept: list[str] = []
    for segment in segments:
        lowered = segment.lower()
        if lowered in _DOT_DOT:
            if kept:
                kept.pop()
        elif lowered not in _DOT:
            kept.append(segment)
    if segments and (segments[-1].lower() in _DOT or segments[-1].lower() in _DOT_DOT):
        kept.append("")  # "/a/b/.." names the directory "/a/", not the file "/a"
    return "/" + "/".join(kept) + mark + query
