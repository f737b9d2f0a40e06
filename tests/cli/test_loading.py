"""``module:attr`` as the console script finds it: in the current folder, as uvicorn, gunicorn
and flask do, or in ``--app-dir``; each run for real, the installed ``sitemap-middleware``
script in a subprocess, from a temporary folder holding the app."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from lxml import etree

import sitemap_middleware

TIMEOUT = 60
NS = {"s": "http://www.sitemaps.org/schemas/sitemap/0.9"}
APP = """
from sitemap_middleware import Sitemaps

sitemaps = Sitemaps(base_url="https://shop.example", page_size=10)
sitemaps.add_provider("products", lambda: [f"/p/{n}" for n in range(25)])
"""


def console_script() -> str:
    """The ``sitemap-middleware`` script installed beside this interpreter."""
    found = shutil.which("sitemap-middleware", path=str(Path(sys.executable).parent))
    if found is None:
        pytest.fail(f"no sitemap-middleware script beside {sys.executable}: is the package installed?")
    return found


def script(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    # The package under test (this checkout's), never the current folder: what the script adds.
    package_root = str(Path(sitemap_middleware.__file__).parents[1])
    environ = {**os.environ, "PYTHONPATH": package_root}
    return subprocess.run(
        [console_script(), *argv], cwd=cwd, env=environ, capture_output=True, text=True, timeout=TIMEOUT
    )


def product_locs(out: Path) -> list[str]:
    pages = etree.parse(out / "sitemap-index.xml").xpath("//s:loc/text()", namespaces=NS)
    return [
        loc
        for page in pages
        for loc in etree.parse(out / page.rsplit("/", 1)[1]).xpath("//s:loc/text()", namespaces=NS)
    ]


def test_the_console_script_finds_the_module_in_the_current_folder(tmp_path):
    (tmp_path / "app.py").write_text(APP)
    result = script("export", "app:sitemaps", "--out", "public", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert product_locs(tmp_path / "public") == [f"https://shop.example/p/{n}" for n in range(25)]


def test_app_dir_names_the_folder_to_find_the_module_in(tmp_path):
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "shop_app.py").write_text(APP)
    (tmp_path / "elsewhere").mkdir()
    result = script(
        "export", "shop_app:sitemaps", "--app-dir", str(tmp_path / "site"), "--out", "public",
        cwd=tmp_path / "elsewhere",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert len(product_locs(tmp_path / "elsewhere" / "public")) == 25


def test_the_attribute_may_be_a_dotted_path(tmp_path):
    (tmp_path / "app.py").write_text(APP + "\nclass site:\n    sitemaps = sitemaps\n")
    result = script("export", "app:site.sitemaps", "--out", "public", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert len(product_locs(tmp_path / "public")) == 25


def test_a_module_not_found_is_one_line_naming_where_it_was_looked_for(tmp_path):
    result = script("export", "nothere:sitemaps", "--out", "public", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"sitemap-middleware: cannot load nothere:sitemaps: No module named 'nothere' (looked in {tmp_path})"
    ]
    assert not (tmp_path / "public").exists()


def test_a_missing_attribute_is_one_line(tmp_path):
    (tmp_path / "app.py").write_text(APP)
    result = script("export", "app:nothing", "--out", "public", cwd=tmp_path)
    assert result.returncode == 2
    [line] = result.stderr.splitlines()
    assert line.startswith("sitemap-middleware: cannot load app:nothing: ") and "nothing" in line[40:]


def test_an_app_dir_that_is_not_a_folder_is_a_usage_error(tmp_path):
    result = script("export", "app:sitemaps", "--app-dir", str(tmp_path / "nope"), "--out", "x", cwd=tmp_path)
    assert result.returncode == 2
    assert "--app-dir" in result.stderr and "not a folder" in result.stderr
