"""``--map-origin PUBLIC=LOCAL``: check a staging server as it will be crawled.

A staging or local server renders the sitemaps of the public site: every loc names the public
origin, which may not resolve yet (or is the live site, not the one to check). Each URL under
a PUBLIC origin is fetched from its LOCAL one instead, and reported as PUBLIC: the host and
directory rules hold against the origin crawlers will see::

    origins = OriginMap([parse_mapping("https://shop.example=http://127.0.0.1:8000")])
    origins.local("https://shop.example/sitemap-index.xml")  # "http://127.0.0.1:8000/sitemap-index.xml"
    origins.public("http://127.0.0.1:8000/robots.txt")       # "https://shop.example/robots.txt"

Both sides are origins (RFC 6454: scheme, host, port), never a path: the path, query and
fragment are kept as they are. An origin matches whatever the case of its scheme and host,
and with its scheme's default port written or not.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterable
from dataclasses import dataclass

from ..errors import ConfigurationError

__all__ = ["Mapping", "OriginMap", "parse_mapping"]

_DEFAULT_PORTS = {"http": 80, "https": 443}
_Key = tuple[str, str, int]  # scheme, host (lower case), port


@dataclass(frozen=True, slots=True)
class Mapping:
    """One ``PUBLIC=LOCAL`` pair, each an origin as written (``scheme://host[:port]``)."""

    public: str
    local: str


def parse_mapping(text: str) -> Mapping:
    """``PUBLIC=LOCAL`` as two http(s) origins; `ConfigurationError` for anything else."""
    public, equals, local = text.partition("=")
    if not equals:
        raise ConfigurationError(
            f"not PUBLIC=LOCAL (e.g. https://shop.example=http://127.0.0.1:8000): {text!r}"
        )
    return Mapping(_origin(public, "PUBLIC"), _origin(local, "LOCAL"))


class OriginMap:
    """URLs under each mapping's public origin, fetched from its local one (and back)."""

    def __init__(self, mappings: Iterable[Mapping] = ()) -> None:
        self._to_local: dict[_Key, str] = {}
        self._to_public: dict[_Key, str] = {}
        for mapping in mappings:
            key = _key(mapping.public)
            if key is None or key in self._to_local:
                raise ConfigurationError(f"the public origin {mapping.public} is mapped twice")
            self._to_local[key] = mapping.local
            local = _key(mapping.local)
            if local is not None:
                self._to_public.setdefault(local, mapping.public)  # the first, if two share one

    def __bool__(self) -> bool:
        return bool(self._to_local)

    def local(self, url: str) -> str:
        """Where ``url`` is fetched from: under a public origin, its local one; else itself."""
        return _swap(url, self._to_local)

    def public(self, url: str) -> str:
        """How ``url`` is reported: under a local origin, its public one; else itself."""
        return _swap(url, self._to_public)


def _origin(text: str, side: str) -> str:
    parts = _split(text.strip())
    if parts is None or parts.scheme.lower() not in _DEFAULT_PORTS or not parts.hostname:
        raise ConfigurationError(f"{side} must be an http(s) origin, e.g. https://shop.example, not {text!r}")
    if parts.path not in ("", "/") or parts.query or parts.fragment or "?" in text or "#" in text:
        raise ConfigurationError(f"{side} is an origin, without a path, query or fragment: {text!r}")
    if parts.username is not None or parts.password is not None:
        raise ConfigurationError(f"{side} is an origin, without user or password: {text!r}")
    try:
        parts.port  # noqa: B018 (urllib checks the port only when asked)
    except ValueError:
        raise ConfigurationError(f"{side} has a port out of range: {text!r}") from None
    return f"{parts.scheme.lower()}://{parts.netloc}"


def _swap(url: str, table: dict[_Key, str]) -> str:
    if not table:
        return url
    end = url.find("/", url.find("//") + 2) if "//" in url else -1
    for mark in "?#":  # an origin may end at a query or fragment, without a path
        at = url.find(mark, url.find("//") + 2)
        if at != -1 and (end == -1 or at < end):
            end = at
    origin, rest = (url, "") if end == -1 else (url[:end], url[end:])
    key = _key(origin)
    if key is None or key not in table:
        return url
    return table[key] + rest


def _key(origin: str) -> _Key | None:
    parts = _split(origin)
    try:
        if parts is None or parts.hostname is None or parts.scheme.lower() not in _DEFAULT_PORTS:
            return None
        scheme = parts.scheme.lower()
        return scheme, parts.hostname.lower(), parts.port or _DEFAULT_PORTS[scheme]
    except ValueError:  # a port out of range
        return None


def _split(text: str) -> urllib.parse.SplitResult | None:
    try:
        return urllib.parse.urlsplit(text)
    except ValueError:
        return None
