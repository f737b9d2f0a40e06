"""``validate``: check a deployed sitemap tree against the rules the XSDs cannot check, and the XSDs.

Starts from a robots.txt, an index or a sitemap (a URL or a file, gzip or not), follows
robots.txt's ``Sitemap:`` lines and every index child, and reports each problem as
``LOCATION:LINE: message`` (a child that cannot be fetched is reported at the line of
the index that lists it)::

    checker = Checker(report=print)
    summary = checker.check("https://shop.example/robots.txt")
    summary.problems, summary.files, summary.urls

Streams: documents are parsed as they arrive and each ``<url>`` is dropped once checked,
so a 50 MB file never sits whole in memory.
"""

from __future__ import annotations

import hashlib
import re
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal, InvalidOperation

from lxml import etree

from ..protocol.entries import CHANGEFREQS
from ..protocol.render import MAX_BYTES, MAX_SITEMAPS, MAX_URLS, SITEMAP_NS
from .fetch import FetchError, Opened, is_url, open_target
from .schemas import Schemas

__all__ = ["Checker", "Problem", "Summary"]

_NS = "{" + SITEMAP_NS + "}"
URLSET, INDEX = _NS + "urlset", _NS + "sitemapindex"
_URL_CHILDREN = {_NS + name for name in ("loc", "lastmod", "changefreq", "priority")}
_SITEMAP_CHILDREN = {_NS + "loc", _NS + "lastmod"}
# RFC 3986: the characters a URI may hold, and a "%" only before two hex digits.
_URI = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]+")
_BAD_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")
# W3C Datetime (https://www.w3.org/TR/NOTE-datetime): a time needs a zone designator.
_W3C = re.compile(
    r"(?P<y>\d{4})(?:-(?P<m>\d{2})(?:-(?P<d>\d{2})"
    r"(?:T(?P<time>\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)(?P<zone>Z|[+-]\d{2}:\d{2}))?)?)?"
)
_PRIORITY = re.compile(r"\d*\.?\d+|\d+\.")
MAX_LOC = 2047  # sitemaps.org: "less than 2,048 characters"
# Duplicates are found with 8-byte fingerprints, for this many locs at most (~1 GB beyond it).
MAX_FINGERPRINTS = 10_000_000
ROBOTS_LIMIT = 500 * 1024  # Google reads the first 500 KiB of robots.txt


@dataclass(frozen=True, slots=True)
class Problem:
    location: str
    line: int
    message: str
    warning: bool = False

    def __str__(self) -> str:
        return f"{self.location}:{self.line}: {'warning: ' if self.warning else ''}{self.message}"


@dataclass
class Summary:
    files: int = 0
    urls: int = 0
    problems: int = 0
    warnings: int = 0
    unreadable: bool = False  # the starting point itself could not be read: exit 2


@dataclass
class _Where:
    """Where a document was listed (robots.txt or an index), to report it there if unreachable."""

    location: str
    line: int


@dataclass
class Checker:
    """Checks one tree of sitemaps; ``report`` gets every problem as it is found.

    - ``schemas``: the official XSDs (`Schemas.load`), or ``None`` to check the protocol only.
    - ``base_url``: where a local file is served, for the host and directory rules
      (a URL target is its own location).
    - ``progress``: called now and then with the summary so far (a TTY display).
    - ``now``: the clock for "no future dates".
    """

    report: Callable[[Problem], None]
    schemas: Schemas | None = None
    base_url: str | None = None
    progress: Callable[[Summary], None] | None = None
    now: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))
    summary: Summary = field(default_factory=Summary)
    _seen_files: set[str] = field(default_factory=set)
    _fingerprints: set[bytes] = field(default_factory=set)
    _last_progress: float = 0.0

    def check(self, target: str) -> Summary:
        """Check ``target`` and everything it leads to."""
        self._document(target, None, expect=None)
        return self.summary

    # -- documents ---------------------------------------------------------------------------

    def _document(self, target: str, listed_at: _Where | None, expect: str | None) -> None:
        if target in self._seen_files:
            return
        self._seen_files.add(target)
        try:
            with open_target(target) as opened:
                self.summary.files += 1
                if _looks_like_robots(target, opened):
                    children = self._robots(opened)
                    for child, line in children:
                        self._document(child, _Where(target, line), expect=None)
                    return
                children = self._xml(opened, listed_at, expect)
        except FetchError as error:
            if listed_at is None:
                self.summary.unreadable = True
                self._problem(target, 0, f"cannot be read: {error}")
            else:
                self._problem(listed_at.location, listed_at.line, f"{target} cannot be fetched: {error}")
            return
        for child, line in children:
            self._document(child, _Where(target, line), expect=URLSET)

    def _robots(self, opened: Opened) -> list[tuple[str, int]]:
        text = opened.stream.read(ROBOTS_LIMIT).decode("utf-8", "replace").lstrip("\ufeff")
        found = []
        for number, line in enumerate(text.splitlines(), start=1):
            name, _, value = line.partition("#")[0].partition(":")
            if name.strip().lower() == "sitemap" and value.strip():
                url = value.strip()
                if not _URI.fullmatch(url):
                    self._problem(opened.location, number, f"Sitemap: {url!r} is not an absolute URL")
                    continue
                found.append((url, number))
        if not found:
            self._problem(opened.location, 0, "names no sitemap (no Sitemap: line)", warning=True)
        return found

    def _xml(self, opened: Opened, listed_at: _Where | None, expect: str | None) -> list[tuple[str, int]]:
        """Parse one urlset or index as it streams; returns the children of an index."""
        location = opened.location
        own = self._own_url(location)
        children: list[tuple[str, int]] = []
        count = 0
        root_tag: str | None = None
        parser = etree.iterparse(
            opened.stream,
            events=("start", "end"),
            no_network=True,
            resolve_entities=False,
            load_dtd=False,
            huge_tree=True,
            remove_comments=True,
        )
        try:
            for event, element in parser:
                if root_tag is None:
                    root_tag = _tag(element)
                    if not self._root(location, element, expect):
                        return []
                    continue
                parent = element.getparent()
                if event != "end" or parent is None or parent.getparent() is not None:
                    continue  # the root's start, or a grandchild: checked with its <url> or <sitemap>
                count += 1
                if root_tag == URLSET:
                    self._url(location, own, element)
                    self.summary.urls += 1
                else:
                    child = self._sitemap(location, own, element)
                    if child is not None:
                        children.append(child)
                self._schema(location, root_tag, element)
                element.clear()
                holder = element.getparent()  # the root, or the schema check's own root
                while holder is not None and element.getprevious() is not None:
                    del holder[0]
                self._tick()
        except etree.XMLSyntaxError as error:
            self._problem(location, error.lineno or 0, f"not well-formed XML: {error.msg}")
            return children
        if root_tag is None:
            self._problem(location, 0, "empty document")
            return []
        limit, what = (MAX_URLS, "URLs") if root_tag == URLSET else (MAX_SITEMAPS, "sitemaps")
        if count == 0:
            self._problem(location, 1, f"lists no {what} (the schema requires at least one)")
        if count > limit:
            self._problem(location, 1, f"lists {count:,} {what}, over the limit of {limit:,}")
        if opened.stream.size > MAX_BYTES:
            self._problem(location, 1, f"is {opened.stream.size:,} bytes uncompressed, over {MAX_BYTES:,}")
        return children

    def _root(self, location: str, element: etree._Element, expect: str | None) -> bool:
        tag = _tag(element)
        if tag not in (URLSET, INDEX):
            self._problem(
                location, element.sourceline or 1, f"root is {tag}, not a sitemaps.org 0.9 urlset or index"
            )
            return False
        if expect == URLSET and tag == INDEX:
            self._problem(
                location, element.sourceline or 1, "an index listed by an index: indexes do not nest"
            )
            return False
        return True

    # -- entries -----------------------------------------------------------------------------

    def _url(self, location: str, own: urllib.parse.SplitResult | None, element: etree._Element) -> None:
        line = element.sourceline or 0
        if _tag(element) != _NS + "url":
            self._problem(location, line, f"unexpected element {_tag(element)} in a urlset")
            return
        values: dict[str, str] = {}
        for child in element:
            tag = _tag(child)
            if tag in _URL_CHILDREN:
                values[tag[len(_NS) :]] = (child.text or "").strip()
            elif tag.startswith(_NS):
                self._problem(location, child.sourceline or line, f"unexpected element {tag} in <url>")
        loc = values.get("loc")
        if loc is None:
            self._problem(location, line, "<url> without <loc>")
        else:
            self._loc(location, line, own, loc, under_directory=True)
            self._duplicate(location, line, loc)
        if "lastmod" in values:
            self._lastmod(location, line, values["lastmod"])
        changefreq = values.get("changefreq")
        if changefreq is not None and changefreq not in CHANGEFREQS:
            self._problem(
                location, line, f"changefreq {changefreq!r} is not one of {', '.join(sorted(CHANGEFREQS))}"
            )
        priority = values.get("priority")
        if priority is not None and not _valid_priority(priority):
            self._problem(location, line, f"priority {priority!r} is not a number from 0.0 to 1.0")

    def _sitemap(
        self, location: str, own: urllib.parse.SplitResult | None, element: etree._Element
    ) -> tuple[str, int] | None:
        line = element.sourceline or 0
        if _tag(element) != _NS + "sitemap":
            self._problem(location, line, f"unexpected element {_tag(element)} in a sitemap index")
            return None
        values = {
            child.tag[len(_NS) :]: (child.text or "").strip()
            for child in element
            if child.tag in _SITEMAP_CHILDREN
        }
        if "lastmod" in values:
            self._lastmod(location, line, values["lastmod"])
        loc = values.get("loc")
        if loc is None:
            self._problem(location, line, "<sitemap> without <loc>")
            return None
        if not self._loc(location, line, own, loc, under_directory=False):
            return None
        # A local index's children are the files beside it, by their names.
        return (loc if is_url(location) else _beside(location, loc)), line

    def _loc(
        self,
        location: str,
        line: int,
        own: urllib.parse.SplitResult | None,
        loc: str,
        *,
        under_directory: bool,
    ) -> bool:
        if len(loc) > MAX_LOC:
            self._problem(location, line, f"loc is {len(loc):,} characters, over {MAX_LOC:,}")
        if not _URI.fullmatch(loc) or _BAD_PERCENT.search(loc):
            self._problem(location, line, f"loc {loc[:200]!r} is not an absolute RFC 3986 URI")
            return False
        parts = urllib.parse.urlsplit(loc)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            self._problem(location, line, f"loc {loc[:200]!r} is not an http(s) URL")
            return False
        if own is None:
            return True
        if (parts.scheme, parts.netloc.lower()) != (own.scheme, own.netloc.lower()):
            self._problem(location, line, f"loc {loc[:200]!r} is not on the sitemap's own host {own.netloc}")
            return False
        directory = own.path.rsplit("/", 1)[0] + "/"
        if under_directory and not (parts.path or "/").startswith(directory):
            self._problem(
                location, line, f"loc {loc[:200]!r} is not under the sitemap's directory {directory}"
            )
        return True

    def _lastmod(self, location: str, line: int, text: str) -> None:
        moment = _w3c(text)
        if moment is None:
            self._problem(location, line, f"lastmod {text!r} is not a W3C Datetime")
        elif moment > self.now() + timedelta(days=1 if len(text) <= 10 else 0, minutes=5):
            self._problem(location, line, f"lastmod {text} is in the future")

    def _duplicate(self, location: str, line: int, loc: str) -> None:
        if len(self._fingerprints) >= MAX_FINGERPRINTS:
            return
        fingerprint = hashlib.blake2b(loc.encode(), digest_size=8).digest()
        if fingerprint in self._fingerprints:
            self._problem(location, line, f"loc {loc[:200]!r} is listed more than once", warning=True)
        else:
            self._fingerprints.add(fingerprint)

    def _schema(self, location: str, root_tag: str, element: etree._Element) -> None:
        if self.schemas is None:
            return
        for line, message in self.schemas.check(root_tag, element):
            self._problem(location, line, f"schema: {message}")

    # -- reporting ---------------------------------------------------------------------------

    def _own_url(self, location: str) -> urllib.parse.SplitResult | None:
        """Where a document is served: its URL, or ``base_url`` joined with a file's name."""
        if is_url(location):
            return urllib.parse.urlsplit(location)
        if self.base_url is not None:
            return urllib.parse.urlsplit(urllib.parse.urljoin(self.base_url, _file_name(location)))
        return None

    def _problem(self, location: str, line: int, message: str, *, warning: bool = False) -> None:
        if warning:
            self.summary.warnings += 1
        else:
            self.summary.problems += 1
        self.report(Problem(location, line, message, warning))

    def _tick(self) -> None:
        if self.progress is None:
            return
        now = time.monotonic()
        if now - self._last_progress >= 0.2:
            self._last_progress = now
            self.progress(self.summary)


def _tag(element: etree._Element) -> str:
    """An element's ``{namespace}name`` ("" for a processing instruction)."""
    tag = element.tag
    return tag if isinstance(tag, str) else ""


def _looks_like_robots(target: str, opened: Opened) -> bool:
    if target.rstrip("/").endswith("robots.txt") or opened.content_type.startswith("text/plain"):
        return True
    head = opened.head
    return bool(head) and not head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"<")


def _valid_priority(text: str) -> bool:
    if not _PRIORITY.fullmatch(text):
        return False
    try:
        return Decimal(text) <= 1
    except InvalidOperation:  # pragma: no cover - the pattern admits only decimals
        return False


def _w3c(text: str) -> datetime | None:
    """The instant a W3C Datetime names (the start of a year, month or day), or ``None``."""
    match = _W3C.fullmatch(text)
    if match is None:
        return None
    try:
        day = date(int(match["y"]), int(match["m"] or 1), int(match["d"] or 1))
        if match["time"] is None:
            return datetime(day.year, day.month, day.day, tzinfo=UTC)
        zone = match["zone"].replace("Z", "+00:00")
        return datetime.fromisoformat(f"{day.isoformat()}T{match['time']}{zone}")
    except ValueError:
        return None


def _file_name(location: str) -> str:
    return location.replace("\\", "/").rsplit("/", 1)[-1]


def _beside(location: str, loc: str) -> str:
    """A local index's child: the file of the same name in the index's folder."""
    from pathlib import Path

    name = urllib.parse.urlsplit(loc).path.rsplit("/", 1)[-1]
    return str(Path(location).parent / name)
