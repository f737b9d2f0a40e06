"""What ``validate`` writes: each problem as it comes, each kind of warning capped, then a summary.

Two formats, the same content: text (``LOCATION:LINE: message``, for people) and JSON Lines
(``--format json``, for CI: one object a line, the summary last)::

    reporter = Reporter(JsonFormat(sys.stdout), target=target, max_warnings=10)
    summary = Checker(report=reporter, ...).check(target)
    reporter.finish(summary, exit_code)

Errors are all shown (a file's past its first 1,000 are counted in one line: validate.py).
Warnings are shown up to ``max_warnings`` per kind: two sections listing the same 45,000 URLs
say so in ten lines and one more, ``... and 44,990 more duplicate locs (45,000 in all; ...)``,
not in 45,000.

Each problem has a ``kind``, a word a CI rule can match (`KINDS`): the problem's own, or else
the one its message names (document.py's checks name theirs in their message's first words).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, TextIO

from .document import Problem

if TYPE_CHECKING:
    from .validate import Summary

__all__ = ["FORMATS", "KINDS", "JsonFormat", "Reporter", "TextFormat", "kind_of"]

# What each kind of problem is, by the words its message holds (the first match wins).
KINDS: list[tuple[str, re.Pattern[str]]] = [
    (kind, re.compile(pattern))
    for kind, pattern in [
        ("duplicate", r"^this loc is listed more than once"),
        ("not-shown", r"^[\d,]+ more problems from this line on, not shown"),
        ("deadline", r"^[\d,]+ listed documents not checked"),
        ("internal", r"could not be checked, a fault in validate"),
        ("fetch", r"^(\S+ )?(cannot be (read|fetched)|reading stopped|cannot be read whole)\b"),
        ("xml", r"^not well-formed XML"),
        ("schema", r"^schema: "),
        ("robots", r"^(Sitemap: |names no sitemap|a robots\.txt or other text)"),
        ("entity", r"^the entity reference "),
        ("host", r"^loc .* is not on the sitemap's own host "),
        ("directory", r"^loc .* is not under the sitemap's directory "),
        ("loc", r"^loc "),
        ("lastmod", r"^lastmod "),
        ("changefreq", r"^changefreq "),
        ("priority", r"^priority "),
        ("root", r"^(root is |an index listed by an index)"),
        ("size", r"^(is more than [\d,]+ bytes|an entry holding more than)"),
        ("count", r"^lists "),
        ("element", r"^(unexpected element |<url> without <loc>|<sitemap> without <loc>)"),
        ("empty", r"^empty document"),
    ]
]
_LABELS = {"duplicate": "duplicate locs"}  # how the count of the rest names them


def kind_of(problem: Problem) -> str:
    """The problem's kind: its own, or the first of `KINDS` its message matches, or "other"."""
    if problem.kind:
        return problem.kind
    for kind, pattern in KINDS:
        if pattern.search(problem.message):
            return kind
    return "other"


class Format(Protocol):
    """One way of writing a run: a problem, a count of those the cap left out, the summary."""

    def problem(self, problem: Problem, kind: str) -> None: ...

    def omitted(self, location: str, kind: str, count: int, message: str) -> None: ...

    def summary(self, summary: Summary, code: int) -> None: ...


class TextFormat:
    """``LOCATION:LINE: [warning: ]message``, then ``checked N files, N URLs: ...``."""

    def __init__(self, out: TextIO) -> None:
        self.out = out

    def problem(self, problem: Problem, kind: str) -> None:
        print(problem, file=self.out, flush=True)

    def omitted(self, location: str, kind: str, count: int, message: str) -> None:
        print(f"{location}:0: warning: {message}", file=self.out)

    def summary(self, summary: Summary, code: int) -> None:
        requested = f" ({summary.requested:,} requested)" if summary.requested else ""  # --urls
        print(
            f"checked {summary.files:,} files, {summary.urls:,} URLs{requested}: "
            f"{summary.problems:,} problems, {summary.warnings:,} warnings",
            file=self.out,
        )


class JsonFormat:
    """JSON Lines: ``{"type": "problem", "location", "line", "level", "kind", "message"}`` for each
    problem, ``{"type": "omitted", ..., "count"}`` for each kind the cap cut, and last
    ``{"type": "summary", "files", "urls", "errors", "warnings", "exit"}``."""

    def __init__(self, out: TextIO) -> None:
        self.out = out

    def _write(self, record: dict[str, object]) -> None:
        self.out.write(json.dumps(record, ensure_ascii=False) + "\n")
        self.out.flush()

    def problem(self, problem: Problem, kind: str) -> None:
        level = "warning" if problem.warning else "error"
        self._write(
            {
                "type": "problem",
                "location": problem.location,
                "line": problem.line,
                "level": level,
                "kind": kind,
                "message": problem.message,
            }
        )

    def omitted(self, location: str, kind: str, count: int, message: str) -> None:
        self._write(
            {
                "type": "omitted",
                "location": location,
                "line": 0,
                "level": "warning",
                "kind": kind,
                "count": count,
                "message": message,
            }
        )

    def summary(self, summary: Summary, code: int) -> None:
        self._write(
            {
                "type": "summary",
                "files": summary.files,
                "urls": summary.urls,
                "errors": summary.problems,
                "warnings": summary.warnings,
                "exit": code,
            }
        )


FORMATS: dict[str, Callable[[TextIO], Format]] = {"text": TextFormat, "json": JsonFormat}


class Reporter:
    """`Checker`'s ``report``: writes each problem in ``format``, warnings up to ``max_warnings``
    per kind; `finish` writes a count of each kind the cap cut, at ``target`` line 0, and the summary."""

    def __init__(self, format: Format, *, target: str, max_warnings: int = 10) -> None:
        self.format = format
        self.target = target
        self.max_warnings = max_warnings
        self.warnings: Counter[str] = Counter()  # every warning reported, shown or not, by kind

    def __call__(self, problem: Problem) -> None:
        kind = kind_of(problem)
        if problem.warning:
            self.warnings[kind] += 1
            if self.warnings[kind] > self.max_warnings:
                return
        self.format.problem(problem, kind)

    def finish(self, summary: Summary, code: int) -> None:
        for kind, count in self.warnings.items():
            left = count - self.max_warnings
            if left > 0:
                label = _LABELS.get(kind, f"{kind} warnings")
                shown = f"--max-warnings {self.max_warnings} shown"
                message = f"... and {left:,} more {label} ({count:,} in all; {shown})"
                self.format.omitted(self.target, kind, left, message)
        self.format.summary(summary, code)
