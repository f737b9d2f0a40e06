"""The reference in docs/ builds as an MkDocs site with ``--strict`` (mkdocs.yml: a missing
page or anchor is a warning, and strict makes it an error), and README.md's links point into it.

mkdocs is a test dependency (tox.ini). Where it is missing, these tests skip, except in CI
(``CI`` set, as .ci/run runs): there a docs site that is not built would go unchecked.
"""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .blocks import REPO

TIMEOUT = 60.0
PAGES = sorted(path.name for path in (REPO / "docs").glob("*.md"))


def require_mkdocs() -> None:
    try:
        import mkdocs  # noqa: F401
    except ImportError:
        if os.environ.get("CI"):
            raise
        pytest.skip("mkdocs is not installed (tox.ini's test env has it)")


def build(project: Path, site: Path) -> subprocess.CompletedProcess[str]:
    require_mkdocs()
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", "mkdocs.yml", "-d", str(site)],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("site")
    result = build(REPO, folder)
    assert result.returncode == 0, result.stderr[-3000:]
    return folder


def copy_of_the_docs(folder: Path) -> Path:
    folder.mkdir()
    shutil.copy(REPO / "mkdocs.yml", folder / "mkdocs.yml")
    shutil.copytree(REPO / "docs", folder / "docs")
    return folder


def test_the_docs_build_with_strict(site: Path) -> None:
    built = {path.relative_to(site).parent.as_posix() for path in site.glob("**/index.html")}
    built = {"index" if name == "." else name for name in built}
    assert built >= {name.removesuffix(".md") for name in PAGES}


def test_every_page_is_in_the_nav() -> None:
    nav = (REPO / "mkdocs.yml").read_text().split("\nnav:\n", 1)[1]
    assert sorted(re.findall(r": (\S+\.md)$", nav, flags=re.MULTILINE)) == PAGES


@pytest.mark.parametrize(
    "link",
    [
        pytest.param("[gone](nowhere.md)", id="missing-page"),
        pytest.param("[gone](faults.md#nowhere)", id="missing-anchor"),
    ],
)
def test_a_broken_link_fails_the_build(tmp_path: Path, link: str) -> None:
    project = copy_of_the_docs(tmp_path / "project")
    with (project / "docs" / "use.md").open("a") as page:
        page.write(f"\nSee {link}.\n")
    result = build(project, tmp_path / "site")
    assert result.returncode != 0
    assert link.split("(")[1].rstrip(")").split("#")[-1] in result.stderr


def test_the_readmes_links_into_the_docs_resolve(site: Path) -> None:
    readme = (REPO / "README.md").read_text()
    links = re.findall(r"\]\((docs/[^)#]+)(?:#([^)]+))?\)", readme)
    assert len(links) >= 15
    for target, anchor in links:
        assert (REPO / target).is_file(), target
        if anchor:
            page = site / target.removeprefix("docs/").removesuffix(".md") / "index.html"
            assert f'id="{html.escape(anchor)}"' in page.read_text(), (target, anchor)
