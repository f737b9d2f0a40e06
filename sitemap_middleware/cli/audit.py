"""``validate --urls``: request the URLs a tree lists and report those crawlers will not index.

Each listed URL is requested as a crawler would (HEAD, then GET for an HTML page, read no
further than its ``<head>``), and reported at the line of its ``<loc>`` when it

- answers anything but 200 (a redirect names its target: list that instead);
- is ``noindex`` (``X-Robots-Tag``, or ``<meta name="robots|googlebot|bingbot">``);
- declares a canonical other than itself (``<link rel="canonical">`` or a ``Link`` header;
  a trailing slash and case count);
- is disallowed by its site's robots.txt for Googlebot, Bingbot or ``*`` (robots_rules.py);
  such a URL is not requested: no crawler would::

    sample = Sample(AuditOptions(urls=1000))
    sample.add("sitemap-products-1.xml", locs, lines)      # each file's, in report order
    Audit(fetcher, AuditOptions(urls=1000), report=print).run(sample.targets(), deadline)

Politely: at most ``per_host`` requests at once to one host, under the fetcher's limits
(its User-Agent, a deadline per request and one for the run, same-host redirects only when
reading robots.txt, never when auditing a URL: a redirect is what is reported).
"""

from __future__ import annotations

import heapq
import threading
import time
import urllib.parse
from array import array
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_for
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import httpx

from ..errors import ConfigurationError
from .document import Problem
from .fetch import Deadline, Fetcher, FetchError, Stream
from .indexability import HeadReader, canonical_link, noindex, same_url
from .values import fingerprint

if TYPE_CHECKING:
    from .robots_rules import RobotsRules

_PROGRESS_EVERY = 0.1  # seconds between two progress lines, at least

__all__ = ["MAX_AUDITED", "Audit", "AuditOptions", "Sample", "Target"]

# ``--urls all`` holds each loc until it is requested: about 100 bytes each, 100 MB here.
MAX_AUDITED = 1_000_000
MAX_WORKERS = 64  # threads, whatever the hosts: per_host each, up to this many
_HTML = ("text/html", "application/xhtml+xml")
_HEAD_ONLY_REFUSED = (405, 501)  # HEAD not allowed or not implemented: GET instead
_PIECE = 16 * 1024


@dataclass(frozen=True, slots=True)
class AuditOptions:
    """What ``--urls`` asks.

    - ``urls``: ``None`` for every listed URL (up to `MAX_AUDITED`), or how many, a sample
      spread over every file (each file's first pick, then the rest by a hash of the loc:
      the same tree gives the same sample).
    - ``per_host``: requests at once to one host (scheme, name and port).
    - ``head_bytes``: an HTML page is read up to this many bytes for its ``<head>``.
    """

    urls: int | None = None
    per_host: int = 4
    head_bytes: int = 512 * 1024

    def __post_init__(self) -> None:
        for name in ("urls", "per_host", "head_bytes"):
            value = getattr(self, name)
            if value is None and name == "urls":
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigurationError(f"{name} must be an int of 1 or more, not {value!r}")


@dataclass(frozen=True, slots=True)
class Target:
    """A listed URL, and where it is listed (the line of its ``<loc>``)."""

    loc: str
    location: str
    line: int


class Sample:
    """The listed URLs to request, chosen as the files come (in report order), memory bounded
    by the sample's size (all: `MAX_AUDITED`)."""

    def __init__(self, options: AuditOptions) -> None:
        self.size = options.urls
        self.skipped = 0  # with every URL asked for: those past MAX_AUDITED
        self._files: list[str] = []
        self._locs: list[str] = []  # every one (all), or none (a sample: the heap below)
        self._file, self._line = array("L"), array("L")
        # A sample: the `size` smallest hashes overall, and each file's smallest one.
        self._smallest: list[tuple[int, int, str, int, int]] = []  # (-hash, order, loc, file, line)
        self._first: dict[int, tuple[int, int, str, int]] = {}  # file -> (hash, order, loc, line)
        self._order = 0

    def add(self, location: str, locs: list[str], lines: array[int]) -> None:
        """One file's locs and the line of each, in the order listed."""
        if not locs:
            return
        self._files.append(location)
        file = len(self._files) - 1
        for loc, line in zip(locs, lines, strict=False):
            self._order += 1
            if self.size is None:
                if len(self._locs) >= MAX_AUDITED:
                    self.skipped += 1
                    continue
                self._locs.append(loc)
                self._file.append(file)
                self._line.append(line)
                continue
            rank = _rank(loc)
            first = self._first.get(file)
            if first is None or rank < first[0]:
                self._first[file] = (rank, self._order, loc, line)
            entry = (-rank, -self._order, loc, file, line)
            if len(self._smallest) < self.size:
                heapq.heappush(self._smallest, entry)
            elif entry > self._smallest[0]:
                heapq.heapreplace(self._smallest, entry)

    def targets(self) -> list[Target]:
        """The URLs to request, in the order listed."""
        if self.size is None:
            return [
                Target(loc, self._files[file], line)
                for loc, file, line in zip(self._locs, self._file, self._line, strict=True)
            ]
        # Every file first (up to the sample's size, the files with the smallest picks), then
        # the smallest hashes overall: a sample of 100 over 100 files holds one URL of each.
        firsts = sorted(
            (rank, order, loc, file, line) for file, (rank, order, loc, line) in self._first.items()
        )
        chosen = {(order, loc, file, line) for _, order, loc, file, line in firsts[: self.size]}
        for _, minus_order, loc, file, line in sorted(self._smallest, reverse=True):
            if len(chosen) >= self.size:
                break
            chosen.add((-minus_order, loc, file, line))
        return [Target(loc, self._files[file], line) for _, loc, file, line in sorted(chosen)]


def _rank(loc: str) -> int:
    return int.from_bytes(fingerprint(loc), "big")


@dataclass
class Audit:
    """Requests each `Target` and reports what keeps it out of an index, in the order listed.

    - ``fetcher``: the run's client (its limits, User-Agent and deadline per request).
    - ``report``: gets every problem.
    - ``progress``: called now and then with (URLs requested, of how many, problems so far).
    """

    fetcher: Fetcher
    options: AuditOptions
    report: Callable[[Problem], None]
    progress: Callable[[int, int, int], None] | None = None
    problems: int = 0
    requested: int = 0
    _hosts: dict[str, threading.BoundedSemaphore] = field(default_factory=dict)
    _robots: dict[str, RobotsRules] = field(default_factory=dict)

    def run(self, targets: list[Target], deadline: Deadline) -> int:
        """Audit ``targets`` by ``deadline``; how many problems were reported."""
        from .robots_rules import RobotsRules  # Protego: imported only for an audit

        origins = dict.fromkeys(_origin(target.loc) for target in targets)
        for origin in origins:
            if deadline.passed():
                break
            rules = RobotsRules.fetch(self.fetcher, origin, deadline)
            self._robots[origin] = rules
            self._hosts[origin] = threading.BoundedSemaphore(self.options.per_host)
            if rules.unreadable is not None:
                location = next(target for target in targets if _origin(target.loc) == origin)
                self._report(
                    Problem(
                        location.location,
                        0,
                        f"{rules.url} {rules.unreadable}: crawlers then take every URL of "
                        f"{origin} as disallowed",
                    )
                )
        workers = min(MAX_WORKERS, self.options.per_host * max(1, len(origins)))
        unchecked = 0
        pending: deque[tuple[Target, Future[tuple[list[Problem], bool] | None]]] = deque()
        shown = 0.0  # when the progress line was last written
        waiting = iter(targets)
        pool = ThreadPoolExecutor(workers, thread_name_prefix="sitemap-audit")
        try:
            while True:
                # At most 2 per worker started and unreported: the reports come in order.
                while len(pending) < 2 * workers and not deadline.passed():
                    target = next(waiting, None)
                    if target is None:
                        break
                    pending.append((target, pool.submit(self._check, target, deadline)))
                if not pending:
                    break
                target, future = pending.popleft()
                while not wait_for([future], timeout=0.2).done:
                    if self.progress is not None:
                        self.progress(self.requested, len(targets), self.problems)
                found = future.result()
                if found is None:
                    unchecked += 1
                    continue
                problems, requested = found
                self.requested += requested
                for problem in problems:
                    self._report(problem)
                shown = self._show_progress(len(targets), shown)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        self._show_progress(len(targets), 0.0)  # the last count, whatever the time
        unchecked += sum(1 for _ in waiting)
        if unchecked and targets:
            message = f"{unchecked:,} listed URLs not requested: {deadline.what} passed"
            self._report(Problem(targets[0].location, 0, message))
        return self.problems

    def _report(self, problem: Problem) -> None:
        self.problems += 1
        self.report(problem)

    # -- one URL, in a worker thread -----------------------------------------------------------

    def _show_progress(self, total: int, shown: float) -> float:
        """The progress line, at most ten times a second; when it was last written."""
        now = time.monotonic()
        if self.progress is not None and now - shown >= _PROGRESS_EVERY:
            self.progress(self.requested, total, self.problems)
            return now
        return shown

    def _check(self, target: Target, deadline: Deadline) -> tuple[list[Problem], bool] | None:
        """What keeps one URL out of an index, and whether it was requested; ``None`` if the
        run's deadline passed first."""
        if deadline.passed():
            return None
        loc = target.loc
        origin = _origin(loc)
        rules = self._robots.get(origin)
        disallowed = rules.disallowed(loc) if rules is not None else []
        if disallowed:  # not requested: no crawler would
            message = f"{loc} is disallowed by robots.txt for {', '.join(disallowed)}"
            return [Problem(target.location, target.line, message)], False
        semaphore = self._hosts.get(origin) or threading.BoundedSemaphore(self.options.per_host)
        semaphore.acquire()
        try:
            messages = list(self._ask(loc, deadline))
        except FetchError as error:
            messages = [f"cannot be fetched: {error}"]
        finally:
            semaphore.release()
        return [Problem(target.location, target.line, f"{loc} {message}") for message in messages], True

    def _ask(self, loc: str, deadline: Deadline) -> Iterator[str]:
        """The URL's answer, as what is wrong with it (HEAD first; GET for an HTML page's head)."""
        with self.fetcher.request(loc, method="HEAD", deadline=deadline, follow=False) as response:
            status, headers = response.status_code, response.headers
        page = None
        if status in _HEAD_ONLY_REFUSED or (status == 200 and _is_html(headers)):
            with self.fetcher.request(loc, deadline=deadline, follow=False) as response:
                status, headers = response.status_code, response.headers
                if status == 200 and _is_html(headers):
                    page = self._head(response, loc, deadline)
        if response.is_redirect:
            target = urllib.parse.urljoin(loc, headers.get("Location", ""))
            yield f"redirects ({status}) to {target}: list that instead"
            return
        if status != 200:
            yield f"answers {status} {response.reason_phrase}".rstrip()
            return
        robots_header = noindex(headers.get_list("X-Robots-Tag"))
        if robots_header is not None:
            yield f"is noindex (X-Robots-Tag: {robots_header})"
        elif page is not None and page.noindex is not None:
            yield f"is noindex ({page.noindex})"
        canonical = canonical_link(headers.get_list("Link"), loc)
        where = "a Link header"
        if canonical is None and page is not None:
            canonical, where = page.canonical, '<link rel="canonical">'
        if canonical is not None and not same_url(canonical, loc):
            yield f"declares another canonical, {canonical} ({where})"

    def _head(self, response: httpx.Response, loc: str, deadline: Deadline) -> HeadReader:
        """An HTML page's ``<head>``, read up to ``head_bytes`` (the rest of a small page too,
        so its connection is kept)."""
        encoding = response.headers.get("Content-Encoding", "identity").strip().lower()
        stream = Stream(
            response.iter_raw(),
            self.fetcher.limits.max_bytes,
            self.fetcher.deadline(deadline),
            gzipped=encoding not in ("identity", ""),
        )
        page, read = HeadReader(loc), 0
        while read < self.options.head_bytes and (chunk := stream.read(_PIECE)):
            read += len(chunk)
            page.feed(chunk)
        page.close()
        return page


def _is_html(headers: httpx.Headers) -> bool:
    return headers.get("Content-Type", "").split(";")[0].strip().lower() in _HTML


def _origin(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"
