"""The code blocks of README.md and docs/: where each is, what it says, and how it runs.

Every ```python block compiles. The line right before its fence says how it runs:

- nothing: it runs on its own. Blocks of one page run in order in one namespace, as a reader
  follows a page: a block may use what an earlier block of its page defined (``sitemaps``).
- ``<!-- run as: myproject/wsgi.py -->``: the block is that file of a throwaway project
  (`tests.docs.projects`: a Django project ``myproject`` with its app ``shop``, and
  ``catalogue.py``, a SQLAlchemy app), replacing the project's own.
- ``<!-- run in: myproject/settings.py -->``: the block is a fragment pasted into that file
  (`tests.docs.projects.merge`): ``...`` in a list stands for the file's own entries, and a
  name, a class, or a call of one function on one first argument that the file already has
  is the block's version of it.
- ``<!-- not run: why -->``: only compiled (README's Django app alone, which test_new_user serves).

`tests.docs.test_project_blocks` builds each page's project from its file blocks, in order,
and exercises what the page says they do.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
NOT_RUN = re.compile(r"<!-- not run: (?P<reason>[^>]+?) -->")
RUN = re.compile(r"<!-- run (?P<how>as|in): (?P<file>[\w./-]+\.py) -->")


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # of the opening fence, 1-based
    language: str
    code: str
    not_run: str | None  # the marker's reason
    file: str | None = None  # the project file it is (run as) or goes into (run in)
    merged: bool = False  # run in: a fragment of ``file``, merged into it

    @property
    def where(self) -> str:
        shown = self.path.relative_to(REPO) if self.path.is_relative_to(REPO) else self.path
        return f"{shown}:{self.line}"


def pages() -> list[Path]:
    """README.md and every page of docs/."""
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def blocks(path: Path) -> list[Block]:
    found: list[Block] = []
    lines = path.read_text().splitlines()
    index = 0
    while index < len(lines):
        fence = re.fullmatch(r"```(\w*)", lines[index])
        if fence is None:
            index += 1
            continue
        end = lines.index("```", index + 1)
        before = lines[index - 1] if index else ""
        marker, run = NOT_RUN.fullmatch(before), RUN.fullmatch(before)
        code = "\n".join(lines[index + 1 : end]) + "\n"
        found.append(
            Block(
                path,
                index + 1,
                fence[1],
                code,
                marker["reason"] if marker else None,
                run["file"] if run else None,
                bool(run and run["how"] == "in"),
            )
        )
        index = end + 1
    return found


def python_blocks(path: Path) -> list[Block]:
    return [block for block in blocks(path) if block.language == "python"]


def file_blocks(path: Path) -> list[Block]:
    """The page's blocks that are (or go into) a file of its throwaway project, in order."""
    return [block for block in python_blocks(path) if block.file]
