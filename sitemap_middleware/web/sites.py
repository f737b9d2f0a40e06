"""Which site a request is for: ``base_url``'s, or one from an explicit allow-list.

By default there is one site and the ``Host`` header is never read: nothing a client
sends can change the URLs we emit. An app serving several sites lists them::

    sites = Sites("https://shop.example", hosts={"shop.example.de": "https://shop.example.de"})
    sites.pick({"host": "shop.example.de"})        # Site(scheme='https', host='shop.example.de', ...)
    sites.pick({"host": "evil.example"})            # the default site (or None with reject_unknown)

Forwarded headers (``Forwarded: host=``, ``X-Forwarded-Host``) are read only with
``trust_forwarded=True``, for apps behind a proxy that sets them and strips clients' own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..errors import ConfigurationError
from ..protocol.uris import Site

__all__ = ["HOST_HEADERS", "Hosts", "Sites"]

# The request headers `Sites.pick` may read, lowercase.
HOST_HEADERS = frozenset({"host", "forwarded", "x-forwarded-host"})
_DEFAULT_PORT_SUFFIXES = (":80", ":443")


@dataclass(frozen=True, slots=True)
class Hosts:
    """Several sites served by one app, and how a request picks its own.

    Example::

        Sitemaps(base_url="https://shop.example",
                 hosts=Hosts({"shop.example.de": "https://shop.example.de"}, reject_unknown=True))

    - ``names``: host names (same scheme and path as ``base_url``) or a mapping of host
      name to base URL. Only listed hosts, and ``base_url``'s, are ever used.
    - ``reject_unknown``: any other ``Host`` gets a 400 (by default, ``base_url``'s site).
    - ``trust_forwarded``: pick the site from ``Forwarded``/``X-Forwarded-Host`` (only
      behind a proxy you run, which overwrites them).
    """

    names: Sequence[str] | Mapping[str, str] = ()
    reject_unknown: bool = False
    trust_forwarded: bool = False


class Sites:
    """The allow-list of sites; config is parsed once, here, and misconfiguration raises."""

    def __init__(self, base_url: str, hosts: Hosts | Sequence[str] | Mapping[str, str] | None = None) -> None:
        self.default = Site.parse(base_url)
        self._by_host: dict[str, Site] = {}
        if hosts is None:
            self.reject_unknown = self.trust_forwarded = False
            return
        if not isinstance(hosts, Hosts):
            hosts = Hosts(hosts)
        self.reject_unknown = bool(hosts.reject_unknown)
        self.trust_forwarded = bool(hosts.trust_forwarded)
        hosts = hosts.names
        if isinstance(hosts, str):
            raise ConfigurationError("hosts must be a list of host names or a mapping, not a string")
        self._by_host[_host_key(self.default.host)] = self.default
        if isinstance(hosts, Mapping):
            for host, url in hosts.items():
                self._by_host[_host_key(_listed(host))] = Site.parse(url)
        else:
            for host in hosts:
                site = Site.parse(f"{self.default.scheme}://{_listed(host)}{self.default.path}")
                self._by_host[_host_key(host)] = site

    @property
    def reads_host(self) -> bool:
        """Whether `pick` reads any request header (only with a ``hosts`` allow-list)."""
        return bool(self._by_host)

    @property
    def all(self) -> tuple[Site, ...]:
        """Every site, the default first."""
        others = [site for site in self._by_host.values() if site != self.default]
        return (self.default, *dict.fromkeys(others))

    def host_of(self, site: Site) -> str:
        """A ``Host`` header that `pick` reads as ``site`` (an internal request's, `refresh`)."""
        for host, candidate in self._by_host.items():
            if candidate == site:
                return host
        return site.host

    def pick(self, headers: Mapping[str, str]) -> Site | None:
        """The site a request with these (lowercase) headers is for; ``None`` means reject it."""
        if not self._by_host:
            return self.default
        host = headers.get("host", "")
        if self.trust_forwarded:
            host = _forwarded_host(headers) or host
        site = self._by_host.get(_host_key(host))
        if site is not None:
            return site
        return None if self.reject_unknown else self.default


def _listed(host: object) -> str:
    """An allow-listed host, checked as `Site.parse` checks base_url's: a name and a port, no more."""
    problem = f"invalid host {host!r} in hosts: expected a name or an IP address, and an optional :port"
    # "shop.example.de/x" would otherwise become a host and a path, and never match a Host header.
    if not isinstance(host, str) or any(char in host for char in "/?#@"):
        raise ConfigurationError(problem)
    try:
        Site.parse(f"http://{host}")
    except ConfigurationError:
        raise ConfigurationError(problem) from None
    return host


def _host_key(host: str) -> str:
    """Host names compare case-insensitively, without a trailing dot or a default port."""
    key = host.strip().lower()
    for suffix in _DEFAULT_PORT_SUFFIXES:
        if key.endswith(suffix):
            key = key[: -len(suffix)]
    return key.rstrip(".")


def _forwarded_host(headers: Mapping[str, str]) -> str:
    """The host our proxy reports: RFC 7239 ``Forwarded``, else ``X-Forwarded-Host``.

    The *last* element, as werkzeug's ProxyFix reads it: the one our (nearest) proxy
    appended; any before it may have come from the client.
    """
    forwarded = headers.get("forwarded", "")
    if forwarded:
        for pair in forwarded.split(",")[-1].split(";"):
            name, _, value = pair.strip().partition("=")
            if name.lower() == "host" and value:
                return value.strip('"')
    return headers.get("x-forwarded-host", "").split(",")[-1].strip()
