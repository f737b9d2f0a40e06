"""Every ```python block of README.md and docs/ compiles, and every one that is no file of a
project (``<!-- run as: ... -->``, run by `tests.docs.test_project_blocks`) nor marked
``<!-- not run: why -->`` runs (`tests.docs.blocks`), so a stale example fails CI.

The blocks run in a fresh interpreter, in an empty folder (what they write stays there), each
page in a namespace of its own, its blocks in order.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .blocks import NOT_RUN, REPO, RUN, Block, pages, python_blocks

# The marked blocks: README's Django app alone, which test_new_user serves. Make a block
# self-contained, or a file of a project (tests.docs.blocks), rather than mark it.
MOST_NOT_RUN = 1
TIMEOUT = 60.0

# Runs in a fresh interpreter, in an empty folder: each page's blocks in order (the pages named
# in argv, else every page), one namespace a page; prints {page: null, or the traceback of the
# first block that failed}.
DRIVER = """
import json, sys, traceback
from pathlib import Path
from tests.docs.blocks import pages, python_blocks

results = {}
for page in [Path(name) for name in sys.argv[1:]] or pages():
    namespace = {"__name__": "__docs__"}
    results[str(page)] = None
    for block in python_blocks(page):
        if block.not_run or block.file:
            continue
        try:
            exec(compile(block.code, block.where, "exec"), namespace)
        except BaseException:
            results[str(page)] = block.where + "\\n" + traceback.format_exc()
            break
print(json.dumps(results))
"""


def every_block() -> list[Block]:
    return [block for page in pages() for block in python_blocks(page)]


def run_pages(folder: Path, *names: str) -> dict[str, str | None]:
    environment = {**os.environ, "PYTHONPATH": str(REPO), "HOME": str(folder)}
    result = subprocess.run(
        [sys.executable, "-c", DRIVER, *names],
        cwd=folder,
        env=environment,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return dict(json.loads(result.stdout.splitlines()[-1]))


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str | None]:
    return run_pages(tmp_path_factory.mktemp("blocks"))


@pytest.mark.parametrize("block", every_block(), ids=lambda block: block.where)
def test_every_python_block_compiles(block: Block) -> None:
    compile(block.code, block.where, "exec")


@pytest.mark.parametrize("page", pages(), ids=lambda page: str(page.relative_to(REPO)))
def test_every_page_runs_its_python_blocks(page: Path, ran: dict[str, str | None]) -> None:
    assert ran[str(page)] is None, ran[str(page)]


def test_every_not_run_marker_stands_before_a_python_block() -> None:
    for page in pages():
        markers = sum(1 for line in page.read_text().splitlines() if NOT_RUN.fullmatch(line))
        assert markers == sum(1 for block in python_blocks(page) if block.not_run), page


def test_every_run_marker_stands_before_a_python_block() -> None:
    for page in pages():
        markers = sum(1 for line in page.read_text().splitlines() if RUN.fullmatch(line))
        assert markers == sum(1 for block in python_blocks(page) if block.file), page


def test_every_marker_is_spelled_as_one_the_runner_reads() -> None:
    for page in pages():
        for number, line in enumerate(page.read_text().splitlines(), 1):
            if line.startswith(("<!-- run", "<!-- not run")):
                assert RUN.fullmatch(line) or NOT_RUN.fullmatch(line), f"{page}:{number}: {line}"


def test_the_blocks_not_run_are_few() -> None:
    not_run = [block.where for block in every_block() if block.not_run]
    assert len(not_run) <= MOST_NOT_RUN, not_run


def test_a_stale_block_fails_and_a_marked_one_is_not_run(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "```python\nfrom sitemap_middleware import Sitemaps\n```\n\n"
        "<!-- not run: needs a database -->\n```python\nraise SystemExit(3)\n```\n\n"
        "```python\nfrom sitemap_middleware import NoSuchName\n```\n"
    )
    failure = run_pages(tmp_path, str(page))[str(page)]
    assert failure is not None
    assert failure.startswith(f"{page}:10\n") and "ImportError" in failure
