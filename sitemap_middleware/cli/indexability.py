"""What one answer says about indexing its URL: ``noindex`` and the canonical it declares.

Read from the headers (``X-Robots-Tag``, ``Link: <…>; rel="canonical"``) and, for an HTML
page, from its ``<head>`` (``<meta name="robots" content="noindex">``, ``<link rel="canonical">``),
fed as it streams and read no further than ``</head>``::

    noindex(["googlebot: noindex, nofollow"])          # "X-Robots-Tag: googlebot: noindex, nofollow"
    canonical_link(['<https://shop.example/p/1>; rel="canonical"'], base)
    head = HeadReader(); head.feed(chunk) ... head.done, head.noindex, head.canonical

Only the crawlers the audit speaks for count: a directive for ``googlebot``, ``bingbot`` or
every robot (no name, or ``robots``); ``otherbot: noindex`` does not.
"""

from __future__ import annotations

import contextlib
import re
import urllib.parse
from collections.abc import Iterable

from lxml import etree

__all__ = ["CRAWLERS", "HeadReader", "canonical_link", "noindex", "same_url"]

CRAWLERS = ("googlebot", "bingbot")
_META_NAMES = {"robots", *CRAWLERS}
_NOINDEX = {"noindex", "none"}  # Google: "none" is noindex, nofollow
# Google's X-Robots-Tag rules whose values hold a colon: not a user agent's name before them.
_RULES_WITH_VALUES = {"max-snippet", "max-image-preview", "max-video-preview", "unavailable_after"}
_AGENT = re.compile(r"\s*([A-Za-z0-9_.\-]+)\s*:(.*)", re.DOTALL)
# RFC 8288: Link: <target>; param=value; ..., <target>; ...
_LINK = re.compile(r"<([^>]*)>((?:\s*;\s*[^;,]*)*)")
_REL = re.compile(r';\s*rel\s*=\s*(?:"([^"]*)"|([^\s;,"]+))', re.IGNORECASE)


def noindex(values: Iterable[str]) -> str | None:
    """The ``X-Robots-Tag`` value that says noindex for one of `CRAWLERS` or all, or ``None``."""
    for value in values:
        agent, rules = None, value
        match = _AGENT.match(value)
        if match is not None and match[1].lower() not in _RULES_WITH_VALUES:
            agent, rules = match[1].lower(), match[2]  # "googlebot: noindex, nofollow"
        if agent not in (None, "robots", *CRAWLERS):
            continue
        if any(rule.strip().lower() in _NOINDEX for rule in rules.split(",")):
            return value.strip()
    return None


def canonical_link(values: Iterable[str], base: str) -> str | None:
    """The first ``rel="canonical"`` target of ``Link`` header values, resolved against ``base``."""
    for value in values:
        for link in _LINK.finditer(value):
            target, params = str(link.group(1)), str(link.group(2) or "")
            for rel in _REL.finditer(params):
                quoted, bare = rel.group(1), rel.group(2)
                if "canonical" in (quoted or bare or "").lower().split():
                    return urllib.parse.urljoin(base, target.strip())
    return None


def same_url(one: str, other: str) -> bool:
    """The same URL as a crawler keys it: scheme and host in any case, a default port or none;
    the path and query exactly (a trailing slash and case matter), the fragment aside."""
    a, b = urllib.parse.urlsplit(one), urllib.parse.urlsplit(other)
    return (_origin(a), a.path or "/", a.query) == (_origin(b), b.path or "/", b.query)


def _origin(parts: urllib.parse.SplitResult) -> tuple[str, str, int | None]:
    try:
        port = parts.port
    except ValueError:
        port = None
    default = {"http": 80, "https": 443}.get(parts.scheme.lower())
    return parts.scheme.lower(), (parts.hostname or "").lower(), None if port == default else port


class HeadReader:
    """An HTML page's ``<head>``, parsed as its bytes come: ``done`` once it is over."""

    def __init__(self, base: str) -> None:
        self._base = base
        self._parser = etree.HTMLPullParser(events=("start", "end"), no_network=True, remove_comments=True)
        self.done = False
        self.noindex: str | None = None  # the <meta> that says noindex, as written
        self.canonical: str | None = None  # the first <link rel="canonical">'s target, resolved

    def feed(self, data: bytes) -> None:
        if self.done:
            return
        self._parser.feed(data)
        self._read()

    def close(self) -> None:
        if not self.done:
            with contextlib.suppress(etree.XMLSyntaxError):  # an empty or broken page: what was read stands
                self._parser.close()
            self._read()
            self.done = True

    def _read(self) -> None:
        for event, element in self._parser.read_events():
            tag = element.tag if isinstance(element.tag, str) else ""
            if (event == "start" and tag == "body") or (event == "end" and tag == "head"):
                self.done = True  # the head is over: nothing past it counts
                return
            if event != "start":
                continue
            if tag == "meta" and (element.get("name") or "").strip().lower() in _META_NAMES:
                content = element.get("content") or ""
                if self.noindex is None and any(
                    rule.strip().lower() in _NOINDEX for rule in content.split(",")
                ):
                    self.noindex = f'<meta name="{element.get("name")}" content="{content}">'
            elif tag == "link" and self.canonical is None:
                rel = (element.get("rel") or "").lower().split()
                href = element.get("href")
                if "canonical" in rel and href:
                    self.canonical = urllib.parse.urljoin(self._base, href.strip())
