"""What one document breaks: a robots.txt, an index or a sitemap checked as it streams.

`check_document` reads one opened document into its `Findings`: its problems (the first
``MAX_SHOWN``, the rest counted), its URL count, the fingerprints of its locs (the run finds
duplicates across files from them, in a fixed order) and the documents it lists::

    findings = Findings(job.target)
    check_document(opened, job, findings, rules)
    findings.problems, findings.children

Each ``<url>`` is dropped once checked, so a file never sits whole in memory; what one entry
may hold is bounded too (``MAX_ENTRY_ELEMENTS``), as is what libxml2 holds for one text node
(``huge_tree`` is off: 10 MB, far past any sitemap value).
"""

from __future__ import annotations

import contextlib
import urllib.parse
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from lxml import etree

from ..protocol.entries import CHANGEFREQS
from ..protocol.render import MAX_SITEMAPS, MAX_URLS, SITEMAP_NS
from .fetch import Opened, TooLarge, is_url
from .lastmods import Stamps
from .schemas import Schemas
from .values import BAD_PERCENT, MAX_LOC, URI, fingerprint, split, valid_priority, w3c

__all__ = ["INDEX", "URLSET", "Findings", "Job", "Listing", "Problem", "Rules", "check_document"]

_NS = "{" + SITEMAP_NS + "}"
URLSET, INDEX = _NS + "urlset", _NS + "sitemapindex"
_URL_CHILDREN = {_NS + name for name in ("loc", "lastmod", "changefreq", "priority")}
_SITEMAP_CHILDREN = {_NS + "loc", _NS + "lastmod"}
_XHTML_LINK = "{http://www.w3.org/1999/xhtml}link"  # Google's hreflang alternates
_FREQS = ", ".join(sorted(CHANGEFREQS))
ROBOTS_LIMIT = 500 * 1024  # Google reads the first 500 KiB of robots.txt
MAX_SHOWN = 1000  # problems kept per file; the rest are counted, in one line
# Elements one <url> or <sitemap> may hold: Google allows 1,000 images per page, each a few
# elements, plus alternates and videos; past this it is a flood, held in memory until </url>.
MAX_ENTRY_ELEMENTS = 50_000
_CHUNK = 64 * 1024


@dataclass(frozen=True, slots=True)
class Problem:
    location: str
    line: int
    message: str
    warning: bool = False
    kind: str = ""  # a word a CI rule can match: report.kind_of names it where it is ""

    def __str__(self) -> str:
        return f"{self.location}:{self.line}: {'warning: ' if self.warning else ''}{self.message}"


@dataclass(frozen=True, slots=True)
class Listing:
    """Where a document was listed (robots.txt or an index), to report it there if unreadable."""

    location: str
    line: int


@dataclass(frozen=True, slots=True)
class Job:
    """A document to check: ``listed_at`` is None for the starting target, the only one that may
    be a robots.txt; ``expect`` is `URLSET` for an index's child; ``local``: may it be a file."""

    target: str
    listed_at: Listing | None = None
    expect: str | None = None
    local: bool = True


@dataclass(frozen=True)
class Rules:
    """What the checks need besides the document: the XSDs, where local files are served, a clock."""

    schemas: Schemas | None
    base_url: str | None
    now: Callable[[], datetime]
    keep_locs: bool = False  # each loc kept in `Findings.locs`, to request it (the audit)


@dataclass
class Findings:
    """What reading one document found (filled by a worker, read by the run once it is done)."""

    location: str
    read: bool = False  # opened: it counts as a checked file
    unreadable: bool = False  # the starting target could not be opened at all: exit 2
    not_started: bool = False  # the run's deadline passed first
    urls: int = 0
    problems: list[Problem] = field(default_factory=list)
    counts: list[int] = field(default_factory=lambda: [0, 0])  # problems, warnings (all, shown or not)
    hidden_from: int | None = None  # the line of the first problem not kept
    fingerprints: bytearray = field(default_factory=bytearray)  # 8 bytes per loc, for duplicates
    lines: array[int] = field(default_factory=lambda: array("L"))  # the line of each fingerprint
    children: list[Job] = field(default_factory=list)
    locs: list[str] = field(default_factory=list)  # each fingerprint's loc, if `Rules.keep_locs`
    alternates: list[tuple[str, str, int]] = field(default_factory=list)  # loc, hreflang href, line

    def add(self, problem: Problem) -> None:
        self.counts[problem.warning] += 1
        if len(self.problems) < MAX_SHOWN:
            self.problems.append(problem)
        elif self.hidden_from is None:
            self.hidden_from = problem.line


def check_document(opened: Opened, job: Job, findings: Findings, rules: Rules) -> None:
    """Check one opened document into ``findings``; `FetchError` if reading it fails midway."""
    if job.listed_at is None and _looks_like_robots(job.target, opened):
        _robots(opened, findings)
    elif job.listed_at is not None and not _looks_like_xml(opened.head):
        findings.add(
            Problem(
                opened.location,
                1,
                "a robots.txt or other text, not a sitemap or index: "
                "only the starting target may be a robots.txt",
            )
        )
    else:
        _Document(opened, job, findings, rules).check()


def _robots(opened: Opened, findings: Findings) -> None:
    text = opened.stream.read_up_to(ROBOTS_LIMIT).decode("utf-8", "replace").lstrip("\ufeff")
    for number, line in enumerate(text.splitlines(), start=1):
        name, _, value = line.partition("#")[0].partition(":")
        if name.strip().lower() != "sitemap" or not value.strip():
            continue
        url = value.strip()
        if not URI.fullmatch(url) or split(url) is None:
            findings.add(Problem(opened.location, number, f"Sitemap: {url!r} is not an absolute URL"))
        elif not is_url(url):  # file:, ftp: ... (a remote robots.txt never names a local file)
            findings.add(Problem(opened.location, number, f"Sitemap: {url!r} is not an http(s) URL"))
        else:
            findings.children.append(Job(url, Listing(opened.location, number), local=False))
    if not findings.children and not findings.counts[0]:
        findings.add(Problem(opened.location, 0, "names no sitemap (no Sitemap: line)", warning=True))


class _Document:
    """One urlset or index, parsed as it streams."""

    def __init__(self, opened: Opened, job: Job, findings: Findings, rules: Rules) -> None:
        self.opened = opened
        self.job = job
        self.location = opened.location
        self.findings = findings
        self.rules = rules
        self.own = _own_url(self.location, rules.base_url)
        self.stamps = Stamps()
        self._closed = False

    def problem(self, line: int, message: str, *, warning: bool = False) -> None:
        self.findings.add(Problem(self.location, line, message, warning))

    def check(self) -> None:
        parser = etree.XMLPullParser(
            events=("start", "end"),
            no_network=True,
            resolve_entities=False,  # no billion laughs, no external entity: each is reported
            load_dtd=False,
            huge_tree=False,  # libxml2's own bounds: 10 MB per text node, 256 levels
            remove_comments=True,
        )
        etree.clear_error_log()  # this thread's: what a parse error then logs is this document's
        try:
            self._parse(parser)
        finally:
            if not self._closed:
                # Frees libxml2's buffers now: a parser dropped unclosed keeps them in a cycle
                # (the parser and its context) until the next garbage collection.
                with contextlib.suppress(etree.XMLSyntaxError):
                    parser.close()

    def _events(self, parser: etree.XMLPullParser) -> Iterator[tuple[str, etree._Element]]:
        """Parse events as the document streams in; the stream's failures raise here, not in lxml."""
        while chunk := self.opened.stream.read(_CHUNK):
            parser.feed(chunk)
            yield from parser.read_events()
        self._closed = True
        parser.close()
        yield from parser.read_events()

    def _parse(self, parser: etree.XMLPullParser) -> None:
        count, inside = 0, 0
        root_tag: str | None = None
        try:
            for event, element in self._events(parser):
                if root_tag is None:
                    root_tag = _tag(element)
                    if not self._root(element):
                        return
                    continue
                if event == "start":
                    inside += 1
                    if inside > MAX_ENTRY_ELEMENTS:
                        self.problem(
                            element.sourceline or 0,
                            f"an entry holding more than {MAX_ENTRY_ELEMENTS:,} elements: read no further",
                        )
                        return
                    continue
                parent = element.getparent()
                if parent is None or parent.getparent() is not None:
                    continue  # the root's end, or a grandchild: checked with its <url> or <sitemap>
                count, inside = count + 1, 0
                self._entry(root_tag, element)
                element.clear()
                holder = element.getparent()  # the root, or the schema check's own root
                while holder is not None and element.getprevious() is not None:
                    del holder[0]
        except etree.XMLSyntaxError as error:
            line, message = _first_error(error)
            self.problem(line, f"not well-formed XML: {message}")
            return
        except TooLarge as error:
            self.problem(
                1,
                f"is more than {error.limit:,} bytes uncompressed, over the limit: read no further",
            )
            return
        if root_tag is None:
            self.problem(0, "empty document")
            return
        limit, what = (MAX_URLS, "URLs") if root_tag == URLSET else (MAX_SITEMAPS, "sitemaps")
        if count == 0:
            self.problem(1, f"lists no {what} (the schema requires at least one)")
        for line, message in self.stamps.shared(self.findings.urls):
            self.problem(line, message, warning=True)
        if count > limit:
            self.problem(1, f"lists {count:,} {what}, over the limit of {limit:,}")

    def _root(self, element: etree._Element) -> bool:
        tag = _tag(element)
        if tag not in (URLSET, INDEX):
            self.problem(element.sourceline or 1, f"root is {tag}, not a sitemaps.org 0.9 urlset or index")
            return False
        if self.job.expect == URLSET and tag == INDEX:
            self.problem(element.sourceline or 1, "an index listed by an index: indexes do not nest")
            return False
        return True

    def _entry(self, root_tag: str, element: etree._Element) -> None:
        for entity in element.iter(etree.Entity):
            # Never expanded (resolve_entities=False): the value would be checked without it.
            self.problem(
                entity.sourceline or element.sourceline or 0,
                f"the entity reference {entity.text} is left unexpanded (validate expands none, "
                "nor may a crawler): write the character, or a character reference",
            )
        if root_tag == URLSET:
            self._url(element)
            self.findings.urls += 1
        else:
            self._sitemap(element)
        if self.rules.schemas is not None:
            for line, message in self.rules.schemas.check(root_tag, element):
                self.problem(line, f"schema: {message}")

    # -- entries -----------------------------------------------------------------------------

    def _url(self, element: etree._Element) -> None:
        line = element.sourceline or 0
        if _tag(element) != _NS + "url":
            self.problem(line, f"unexpected element {_tag(element)} in a urlset")
            return
        values, lines = self._values(element, _URL_CHILDREN)
        alternates = [
            (child.get("href", "").strip(), child.sourceline or line)
            for child in element
            if child.tag == _XHTML_LINK and child.get("rel") == "alternate" and child.get("hreflang")
        ]
        loc = values.get("loc")
        if loc is None:
            self.problem(line, "<url> without <loc>")
        else:
            at = lines["loc"]  # each problem at the line of its own element, not its <url>'s
            self._loc(at, loc, under_directory=True)
            if len(self.findings.lines) < MAX_URLS:
                self.findings.fingerprints += fingerprint(loc)
                self.findings.lines.append(at)
                if self.rules.keep_locs:
                    self.findings.locs.append(loc)
            self.findings.alternates.extend((loc, href, where) for href, where in alternates)
        if "lastmod" in values:
            self._lastmod(lines["lastmod"], values["lastmod"], tally=True)
        changefreq = values.get("changefreq")
        if changefreq is not None and changefreq not in CHANGEFREQS:
            self.problem(lines["changefreq"], f"changefreq {changefreq!r} is not one of {_FREQS}")
        priority = values.get("priority")
        if priority is not None and not valid_priority(priority):
            self.problem(lines["priority"], f"priority {priority!r} is not a number from 0.0 to 1.0")

    def _values(self, element: etree._Element, names: set[str]) -> tuple[dict[str, str], dict[str, int]]:
        """An entry's protocol values by name, and the line of each one's element."""
        line = element.sourceline or 0
        values: dict[str, str] = {}
        lines: dict[str, int] = {}
        parent = _tag(element)[len(_NS) :]
        for child in element:
            tag = _tag(child)
            if tag in names:
                values[tag[len(_NS) :]], lines[tag[len(_NS) :]] = (
                    (child.text or "").strip(),
                    child.sourceline or line,
                )
            elif tag.startswith(_NS):
                self.problem(child.sourceline or line, f"unexpected element {tag} in <{parent}>")
        return values, lines

    def _sitemap(self, element: etree._Element) -> None:
        line = element.sourceline or 0
        if _tag(element) != _NS + "sitemap":
            self.problem(line, f"unexpected element {_tag(element)} in a sitemap index")
            return
        values, lines = self._values(element, _SITEMAP_CHILDREN)
        if "lastmod" in values:
            self._lastmod(lines["lastmod"], values["lastmod"])
        loc = values.get("loc")
        if loc is None:
            self.problem(line, "<sitemap> without <loc>")
            return
        if not self._loc(lines["loc"], loc, under_directory=False):
            return
        listing = Listing(self.location, lines["loc"])
        if len(self.findings.children) >= MAX_SITEMAPS:
            return  # over the limit (reported once the index is read): not followed
        if is_url(self.location):
            self.findings.children.append(Job(loc, listing, URLSET, local=False))
        else:  # a local index's children are the files beside it, by their names
            self.findings.children.append(Job(_beside(self.location, loc), listing, URLSET, local=True))

    def _loc(self, line: int, loc: str, *, under_directory: bool) -> bool:
        if len(loc) > MAX_LOC:
            self.problem(line, f"loc is {len(loc):,} characters, over {MAX_LOC:,}")
        parts = split(loc)
        if not URI.fullmatch(loc) or BAD_PERCENT.search(loc) or parts is None:
            self.problem(line, f"loc {loc[:200]!r} is not an absolute RFC 3986 URI")
            return False
        if parts.scheme not in ("http", "https") or not parts.hostname:
            self.problem(line, f"loc {loc[:200]!r} is not an http(s) URL")
            return False
        own = self.own
        if own is None:
            return True
        if (parts.scheme, parts.netloc.lower()) != (own.scheme, own.netloc.lower()):
            self.problem(line, f"loc {loc[:200]!r} is not on the sitemap's own host {own.netloc}")
            return False
        directory = own.path.rsplit("/", 1)[0] + "/"
        if under_directory and not (parts.path or "/").startswith(directory):
            self.problem(line, f"loc {loc[:200]!r} is not under the sitemap's directory {directory}")
        return True

    def _lastmod(self, line: int, text: str, *, tally: bool = False) -> None:
        moment = w3c(text)
        if moment is None:
            self.problem(line, f"lastmod {text!r} is not a W3C Datetime")
        elif moment > self.rules.now() + timedelta(days=1 if len(text) <= 10 else 0, minutes=5):
            self.problem(line, f"lastmod {text} is in the future")
        elif tally:
            self.stamps.add(moment, line, text)


def _first_error(error: etree.XMLSyntaxError) -> tuple[int, str]:
    """The first error libxml2 logged (where it went wrong), not the one it raised with last
    ("no element found" when a fatal error stopped it quietly midway)."""
    for entry in error.error_log:
        if entry.level >= etree.ErrorLevels.ERROR:
            return entry.line, entry.message.split(", try XML_PARSE_HUGE")[0]
    return error.lineno or 0, error.msg


def _own_url(location: str, base_url: str | None) -> urllib.parse.SplitResult | None:
    """Where a document is served: its URL, or ``base_url`` joined with a file's name."""
    if is_url(location):
        return urllib.parse.urlsplit(location)
    if base_url is not None:
        return urllib.parse.urlsplit(urllib.parse.urljoin(base_url, _file_name(location)))
    return None


def _tag(element: etree._Element) -> str:
    """An element's ``{namespace}name`` ("" for a processing instruction)."""
    tag = element.tag
    return tag if isinstance(tag, str) else ""


def _looks_like_xml(head: bytes) -> bool:
    return not head or head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"<")


def _looks_like_robots(target: str, opened: Opened) -> bool:
    if target.rstrip("/").endswith("robots.txt") or opened.content_type.startswith("text/plain"):
        return True
    return not _looks_like_xml(opened.head)


def _file_name(location: str) -> str:
    return location.replace("\\", "/").rsplit("/", 1)[-1]


def _beside(location: str, loc: str) -> str:
    """A local index's child: the file of the same name in the index's folder."""
    name = urllib.parse.urlsplit(loc).path.rsplit("/", 1)[-1]
    return str(Path(location).parent / name)
