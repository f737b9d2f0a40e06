"""``validate``: check a deployed sitemap tree against the rules the XSDs cannot check, and the XSDs.

Starts from a robots.txt, an index or a sitemap (a URL or a file, gzip or not), follows
robots.txt's ``Sitemap:`` lines and every index child, and reports each problem as
``LOCATION:LINE: message`` (a child that cannot be read is reported at the line of the
index that lists it)::

    checker = Checker(report=print, limits=Limits(timeout=60), run_timeout=600)
    summary = checker.check("https://shop.example/robots.txt")
    summary.problems, summary.files, summary.urls

Bounded whatever the servers do: each document is read under `Limits` (size, time and
redirects: fetch.py), ``concurrency`` at a time, and the whole run within ``run_timeout``
seconds; what was not checked by then is counted in one problem. Reports come in a fixed
order whatever finishes first: the order listed, an index's children right after it, each
document's problems by line, duplicate locs found in that same order.
"""

from __future__ import annotations

import hashlib
import heapq
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_for
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import islice

import httpx

from ..errors import ConfigurationError
from .audit import MAX_AUDITED, MAX_WORKERS, Audit, AuditOptions, Sample
from .document import Findings, Job, Listing, Problem, Rules, check_document
from .fetch import Deadline, Fetcher, FetchError, Limits, is_url
from .hreflang import Alternates
from .origins import OriginMap
from .schemas import Schemas
from .values import split

__all__ = ["Checker", "Limits", "Problem", "Summary"]

# Duplicates are found with 8-byte fingerprints, for this many locs at most (~1 GB beyond it).
MAX_FINGERPRINTS = 10_000_000
_AHEAD = 2  # documents read ahead of the one reported next, per worker: their findings wait


@dataclass
class Summary:
    files: int = 0
    urls: int = 0
    problems: int = 0
    warnings: int = 0
    requested: int = 0  # listed URLs requested (``audit``)
    unreadable: bool = False  # the starting point itself could not be read: exit 2


@dataclass
class Checker:
    """Checks one tree of sitemaps; ``report`` gets every problem, in a fixed order.

    - ``schemas``: the official XSDs (`Schemas.load`), or ``None`` to check the protocol only.
    - ``base_url``: where a local file is served, for the host and directory rules
      (a URL target is its own location).
    - ``progress``: called now and then with the summary so far (a TTY display).
    - ``now``: the clock for "no future dates".
    - ``limits``: what reading one document may take (`Limits`: size, seconds, redirects).
    - ``run_timeout``: seconds for the whole run; past them nothing more is started.
    - ``concurrency``: documents read at once (threads, sharing one connection pool).
    - ``origins``: public origins fetched from local ones (`OriginMap`, ``--map-origin``); every
      URL, the starting target's too, is reported as public.
    - ``audit``: also request the listed URLs (`AuditOptions`: audit.py), once the tree is read;
      ``audit_progress`` is its progress display.
    - ``transport``: what answers instead of the network (an app in-process: inprocess.py).

    Past the first 1,000 problems of a file, one more `Problem` says how many were not shown.
    """

    report: Callable[[Problem], None]
    schemas: Schemas | None = None
    base_url: str | None = None
    progress: Callable[[Summary], None] | None = None
    now: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))
    limits: Limits = field(default_factory=Limits)
    run_timeout: float = 3600.0
    concurrency: int = 8
    origins: OriginMap = field(default_factory=OriginMap)
    audit: AuditOptions | None = None
    audit_progress: Callable[[int, int, int], None] | None = None
    transport: httpx.BaseTransport | None = None
    summary: Summary = field(default_factory=Summary)
    _sample: Sample | None = None
    _fingerprints: set[bytes] = field(default_factory=set)
    _alternates: Alternates = field(default_factory=Alternates)

    def __post_init__(self) -> None:
        parts = None if self.base_url is None else split(self.base_url)
        if self.base_url is not None and (parts is None or not is_url(self.base_url) or not parts.hostname):
            raise ConfigurationError(f"base_url must be an http(s) URL, not {self.base_url!r}")
        if not self.run_timeout > 0:
            raise ConfigurationError(f"run_timeout must be more than 0 seconds, not {self.run_timeout!r}")
        if (
            isinstance(self.concurrency, bool)
            or not isinstance(self.concurrency, int)
            or self.concurrency < 1
        ):
            raise ConfigurationError(f"concurrency must be an int of 1 or more, not {self.concurrency!r}")

    def check(self, target: str) -> Summary:
        """Check ``target`` and everything it leads to."""
        run = Deadline.after(self.run_timeout, "the run's deadline")
        target = self.origins.public(target) if is_url(target) else target
        rules = Rules(self.schemas, self.base_url, self.now, keep_locs=self.audit is not None)
        self._sample = None if self.audit is None else Sample(self.audit)
        connections = self.concurrency if self.audit is None else max(self.concurrency, MAX_WORKERS)
        seen = {_key(target)}
        # In report order: an index's children go in right after it, before its later siblings
        # (some of which may be read already); at most `ahead` read or being read, unreported.
        pending = deque([_Entry(Job(target))])
        ahead, reading, unchecked = _AHEAD * self.concurrency, 0, 0
        pool = ThreadPoolExecutor(self.concurrency, thread_name_prefix="sitemap-validate")
        try:
            with Fetcher(
                self.limits, connections=connections, origins=self.origins, transport=self.transport
            ) as fetcher:

                def start(job: Job, findings: Findings) -> Future[None]:
                    return pool.submit(_read, fetcher, job, findings, rules, run)

                while pending:
                    if not run.passed():
                        reading += _start(pending, ahead - reading, start)
                    head = pending.popleft()
                    if head.read is None:
                        unchecked += 1  # the run's deadline passed before it started
                        continue
                    findings, future = head.read
                    self._wait(future, findings, pending)
                    future.result()
                    reading -= 1
                    if findings.not_started:
                        unchecked += 1
                        continue
                    self._merge(findings)
                    children = [_Entry(child) for child in findings.children if _first(seen, child)]
                    pending.extendleft(reversed(children))
                self._reciprocity()
                self._audit(fetcher, run)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        if unchecked:
            message = f"{unchecked:,} listed documents not checked: {run.what} passed"
            self.report(Problem(target, 0, message, kind="deadline"))
            self.summary.problems += 1
        return self.summary

    def _audit(self, fetcher: Fetcher, run: Deadline) -> None:
        """Request the listed URLs (audit.py), in the order listed, once the tree is read."""
        if self.audit is None or self._sample is None:
            return
        targets = self._sample.targets()
        if self._sample.skipped and targets:
            message = (
                f"{self._sample.skipped:,} listed URLs past the first {MAX_AUDITED:,} not requested "
                "(--urls N requests a sample spread over every file)"
            )
            self.report(Problem(targets[0].location, 0, message, warning=True))
            self.summary.warnings += 1
        audit = Audit(fetcher, self.audit, self.report, self.audit_progress)
        self.summary.problems += audit.run(targets, run)
        self.summary.requested = audit.requested

    def _reciprocity(self) -> None:
        """hreflang pairs not listed back, once every file is in (hreflang.py)."""
        for problem in self._alternates.problems(listed=self._fingerprints.__contains__):
            self.report(problem)
        self.summary.problems += self._alternates.counts[0]
        self.summary.warnings += self._alternates.counts[1]

    # -- in the order listed -----------------------------------------------------------------

    def _merge(self, findings: Findings) -> None:
        """Count and report one document's findings, its duplicate locs found against the run's.

        The document's own problems past its first ``MAX_SHOWN`` are counted in one line; its
        duplicate locs are all reported (`report.Reporter` caps each kind of warning for the run)."""
        summary = self.summary
        summary.files += findings.read
        summary.urls += findings.urls
        summary.unreadable |= findings.unreadable
        if self._sample is not None:
            self._sample.add(findings.location, findings.locs, findings.lines)
        self._alternates.add(findings.location, findings.alternates)
        problems, warnings = findings.counts
        summary.problems += problems
        summary.warnings += warnings
        # Its own lines by line, its duplicates among them, then what is reported at the index
        # that lists it.
        own = sorted(findings.problems, key=lambda p: (p.location != findings.location, p.line))
        here = [problem for problem in own if problem.location == findings.location]
        for problem in heapq.merge(here, self._duplicates(findings), key=lambda p: p.line):
            self.report(problem)
        for problem in own[len(here) :]:
            self.report(problem)
        hidden = problems + warnings - len(findings.problems)
        if hidden:
            assert findings.hidden_from is not None  # set with the first problem not kept
            errors_hidden = problems - sum(not problem.warning for problem in findings.problems)
            message = f"{hidden:,} more problems from this line on, not shown"
            line, warning = findings.hidden_from, not errors_hidden
            self.report(Problem(findings.location, line, message, warning=warning, kind="not-shown"))

    def _duplicates(self, findings: Findings) -> Iterator[Problem]:
        """The document's locs listed earlier in the run, in order (each counted as a warning)."""
        message = "this loc is listed more than once (also earlier in the tree)"
        for index, line in enumerate(findings.lines):
            fingerprint = bytes(findings.fingerprints[8 * index : 8 * index + 8])
            if fingerprint in self._fingerprints:
                self.summary.warnings += 1
                yield Problem(findings.location, line, message, warning=True, kind="duplicate")
            elif len(self._fingerprints) < MAX_FINGERPRINTS:
                self._fingerprints.add(fingerprint)

    def _wait(self, future: Future[None], findings: Findings, pending: deque[_Entry]) -> None:
        """Wait for the next document in order, showing progress meanwhile."""
        while not wait_for([future], timeout=0.2).done:
            if self.progress is not None:
                ahead = islice(pending, 2 * _AHEAD * self.concurrency)
                reading = findings.urls + sum(entry.read[0].urls for entry in ahead if entry.read)
                self.progress(Summary(self.summary.files, self.summary.urls + reading, self.summary.problems))


@dataclass
class _Entry:
    """A document in report order; once started, its findings and the worker filling them."""

    job: Job
    read: tuple[Findings, Future[None]] | None = None


def _start(pending: deque[_Entry], room: int, start: Callable[[Job, Findings], Future[None]]) -> int:
    """Start the first ``room`` documents not started yet, in report order; how many started."""
    started = 0
    for entry in pending:
        if started >= room:
            break
        if entry.read is None:
            findings = Findings(entry.job.target)
            entry.read = findings, start(entry.job, findings)
            started += 1
    return started


def _key(target: str) -> bytes:
    return hashlib.blake2b(target.encode(), digest_size=8).digest()


def _first(seen: set[bytes], job: Job) -> bool:
    """Is this the first time ``job``'s document is listed? (Each is read once: a loop ends.)"""
    key = _key(job.target)
    if key in seen:
        return False
    seen.add(key)
    return True


def _read(fetcher: Fetcher, job: Job, findings: Findings, rules: Rules, run: Deadline) -> None:
    """One document, in a worker thread: every failure becomes a problem in its findings, at
    the line that lists the document (or at the starting target's line 0)."""
    if run.passed():
        findings.not_started = True
        return
    where = job.listed_at or Listing(job.target, 0)
    named = "" if job.listed_at is None else f"{job.target} "

    def problem(message: str) -> None:
        findings.add(Problem(where.location, where.line, named + message))

    with ExitStack() as stack:
        try:
            opened = stack.enter_context(fetcher.open(job.target, deadline=run, local=job.local))
        except FetchError as error:
            findings.unreadable = job.listed_at is None
            problem(f"cannot be {'read' if job.listed_at is None else 'fetched'}: {error}")
            return
        except Exception as error:  # a fault of ours: the run still goes on, and says so
            problem(f"could not be checked, a fault in validate: {error!r} (please report it)")
            return
        findings.read = True
        try:
            check_document(opened, job, findings, rules)
        except FetchError as error:
            problem(f"{'reading stopped' if job.listed_at is None else 'cannot be read whole'}: {error}")
        except Exception as error:
            problem(f"could not be checked, a fault in validate: {error!r} (please report it)")
