"""The code blocks of README.md and docs/: where each is, what it says, and whether it runs.

A ```python block runs unless the line right before its fence is a marker saying why not,
``<!-- not run: needs a database -->``; every block compiles, marked or not. Blocks of one
page run in order in one namespace, as a reader follows a page: a block may use what an
earlier block of its page defined (``sitemaps``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
NOT_RUN = re.compile(r"<!-- not run: (?P<reason>[^>]+?) -->")


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # of the opening fence, 1-based
    language: str
    code: str
    not_run: str | None  # the marker's reason

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
        marker = NOT_RUN.fullmatch(lines[index - 1]) if index else None
        code = "\n".join(lines[index + 1 : end]) + "\n"
        found.append(Block(path, index + 1, fence[1], code, marker["reason"] if marker else None))
        index = end + 1
    return found


def python_blocks(path: Path) -> list[Block]:
    return [block for block in blocks(path) if block.language == "python"]
