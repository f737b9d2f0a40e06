"""``export``: all or nothing. A failed or interrupted export leaves the folder as it was; a
finished one holds exactly the new tree (the old tree's other files removed, nobody else's),
and never writes through a symlink."""

from __future__ import annotations

import dataclasses
import io
import os
import signal
import subprocess
import sys
import tempfile
import types
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lxml import etree
from werkzeug.test import Client

import sitemap_middleware
from sitemap_middleware import Document, MemoryStore, Sitemaps
from sitemap_middleware.cli import main
from sitemap_middleware.cli.export import export_tree
from sitemap_middleware.cli.staging import Staging

from ..conftest import make_shop

SITE = "https://shop.example"
SITEMAP = "{http://www.sitemaps.org/schemas/sitemap/0.9}"
# A user's own static files beside the tree, the last one sitemap-like but of no section of
# ours and listed by no index of ours.
USER_FILES = {
    "index.html": b"<h1>shop</h1>",
    "robots.txt": b"User-agent: *\n",
    "sitemap-legacy-1.xml": b"<x/>",
}


def shop(products: int, *, version: str = "new", fails_at: int | None = None, blog: int = 0) -> Sitemaps:
    """Products on pages of 10 (``fails_at``: the product whose turn raises), two pages, a blog."""

    def product(n: int) -> str:
        if n == fails_at:
            raise RuntimeError("the database went away")
        return f"/{version}/p/{n}"

    sitemaps = make_shop(
        products,
        product=product,
        shape="window",
        pages=[f"/{version}/", f"/{version}/about"],
        base_url=SITE,
        page_size=10,
    )
    if blog:  # a third section on top: an export that drops one leaves none of its files
        sitemaps.add_provider("blog", lambda: [f"/{version}/blog/{n}" for n in range(blog)])
    return sitemaps


def export(
    monkeypatch: pytest.MonkeyPatch, sitemaps: Sitemaps, out: Path, *flags: str
) -> tuple[int, str, str]:
    """``sitemap-middleware export`` in process: exit status, stdout, stderr."""
    module = types.ModuleType("exported_shop")
    module.sitemaps = sitemaps  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "exported_shop", module)
    stdout, stderr = io.StringIO(), io.StringIO()
    code = main(["export", "exported_shop:sitemaps", "--out", str(out), *flags], out=stdout, err=stderr)
    return code, stdout.getvalue(), stderr.getvalue()


def snapshot(folder: Path) -> dict[str, bytes | str]:
    """Every entry of ``folder``: a file's bytes, a link's target, a folder's listing."""
    found: dict[str, bytes | str] = {}
    for entry in sorted(os.scandir(folder), key=lambda entry: entry.name):
        if entry.is_symlink():
            found[entry.name] = f"-> {os.readlink(entry.path)}"
        elif entry.is_dir():
            found[entry.name] = f"dir {sorted(os.listdir(entry.path))}"
        else:
            found[entry.name] = Path(entry.path).read_bytes()
    return found


def old_tree(folder: Path) -> dict[str, bytes | str]:
    """An earlier export (8 product pages and a blog, with .gz) beside the user's own files."""
    export_tree(shop(80, blog=3, version="old"), folder, gzip=True)
    for name, body in USER_FILES.items():
        (folder / name).write_bytes(body)
    return snapshot(folder)


def listed(folder: Path) -> list[str]:
    """The names the folder's index files list (each index file, then its children)."""
    names: list[str] = []
    pending = ["sitemap-index.xml"] if (folder / "sitemap-index.xml").exists() else []
    while pending:
        name = pending.pop(0)
        names.append(name)
        if not (folder / name).is_file():
            continue
        root = etree.fromstring((folder / name).read_bytes())
        children = [loc.text.rsplit("/", 1)[-1] for loc in root.iter(f"{SITEMAP}loc")]
        if root.tag == f"{SITEMAP}sitemapindex":
            pending += [child for child in children if child.startswith("sitemap-index")]
            names += [child for child in children if not child.startswith("sitemap-index")]
    return names


def assert_every_listed_file_is_there(folder: Path) -> None:
    missing = [name for name in listed(folder) if not (folder / name).is_file()]
    assert missing == [], f"the index lists absent files: {missing}"


def served(sitemaps: Sitemaps, gz: bool = False) -> dict[str, bytes]:
    """What the middleware serves for the tree ``sitemaps`` describes, by file name."""
    client = Client(sitemaps.wsgi(lambda environ, start: []))
    files: dict[str, bytes] = {}
    pending = ["sitemap-index.xml"]
    while pending:
        name = pending.pop(0)
        files[name] = client.get(f"/{name}").get_data()
        if gz:
            files[name + ".gz"] = client.get(f"/{name}.gz").get_data()
        root = etree.fromstring(files[name])
        if root.tag == f"{SITEMAP}sitemapindex":
            pending += [loc.text.rsplit("/", 1)[-1] for loc in root.iter(f"{SITEMAP}loc")]
    return files


def assert_one_clear_line(stderr: str, *words: str) -> None:
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("sitemap-middleware: "), stderr
    assert "Traceback" not in stderr
    for word in words:
        assert word in lines[0], stderr


@pytest.mark.parametrize(
    "fails_at",
    [pytest.param(20, id="before-page-3s-first-url"), pytest.param(25, id="after-5-urls-of-page-3")],
)
def test_a_failing_provider_leaves_the_previous_tree_as_it_was(tmp_path, monkeypatch, fails_at):
    before = old_tree(tmp_path)
    code, _, stderr = export(monkeypatch, shop(50, fails_at=fails_at), tmp_path, "--gzip")
    assert code == 2
    assert_one_clear_line(stderr, "sitemap-products-3.xml", "the database went away")
    assert snapshot(tmp_path) == before
    assert_every_listed_file_is_there(tmp_path)


@pytest.mark.parametrize(
    "fails_at",
    [pytest.param(20, id="before-page-3s-first-url"), pytest.param(25, id="after-5-urls-of-page-3")],
)
def test_a_failing_first_export_writes_nothing(tmp_path, monkeypatch, fails_at):
    out = tmp_path / "public"
    out.mkdir()
    code, _, stderr = export(monkeypatch, shop(50, fails_at=fails_at), out)
    assert code == 2
    assert_one_clear_line(stderr, "sitemap-products-3.xml")
    assert snapshot(out) == {}
    assert_every_listed_file_is_there(out)


class CuttingStore(MemoryStore):
    """A store that hands back every sitemap document cut to half its bytes (a torn shared store)."""

    def get(self, key: str) -> Document | None:
        document = super().get(key)
        if document is None or not document.body.startswith(b"\x1f\x8b"):  # a gzip member
            return document
        return dataclasses.replace(document, body=document.body[: len(document.body) // 2])


@pytest.mark.parametrize(
    "warm", [pytest.param(False, id="gz-cut-short"), pytest.param(True, id="xml-cut-short")]
)
def test_a_body_cut_short_is_a_failure_not_a_file(tmp_path, monkeypatch, warm):
    sitemaps = make_shop(30, sections=["products"], base_url=SITE, page_size=10, cache=CuttingStore())
    if warm:  # stored already: even the .xml answer is the torn document, inflated
        Client(sitemaps.wsgi(lambda environ, start: [])).get("/sitemap-index.xml").close()
    before = old_tree(tmp_path)
    code, _, stderr = export(monkeypatch, sitemaps, tmp_path, "--gzip")
    assert code == 2
    assert_one_clear_line(stderr, "sitemap-index.xml", "cut short")
    assert snapshot(tmp_path) == before
    assert_every_listed_file_is_there(tmp_path)


def test_export_over_a_bigger_older_tree_removes_its_files_and_keeps_the_users(tmp_path, monkeypatch):
    old_tree(tmp_path)
    new = shop(30)
    code, _, stderr = export(monkeypatch, new, tmp_path, "--gzip")
    assert (code, stderr) == (0, "")
    expected = {**served(new, gz=True), **USER_FILES}
    # The old tree's products 4-8 and its blog (a section no more) are gone, the rest replaced.
    assert snapshot(tmp_path) == expected
    assert_every_listed_file_is_there(tmp_path)


def test_export_without_gzip_removes_the_old_trees_gz_files(tmp_path, monkeypatch):
    old_tree(tmp_path)
    new = shop(80)
    code, _, stderr = export(monkeypatch, new, tmp_path)
    assert code == 0, stderr
    assert snapshot(tmp_path) == {**served(new), **USER_FILES}
    assert_every_listed_file_is_there(tmp_path)


def test_a_folder_in_place_of_a_file_fails_before_anything_moves(tmp_path, monkeypatch):
    old_tree(tmp_path)
    (tmp_path / "sitemap-products-9.xml").mkdir()
    before = snapshot(tmp_path)
    code, _, stderr = export(monkeypatch, shop(90), tmp_path)
    assert code == 2
    assert_one_clear_line(stderr, "sitemap-products-9.xml")
    assert snapshot(tmp_path) == before
    assert_every_listed_file_is_there(tmp_path)


def test_a_finished_export_leaves_no_temporary_folder(tmp_path, monkeypatch):
    new = shop(25)
    code, stdout, stderr = export(monkeypatch, new, tmp_path / "public", "--gzip")
    assert code == 0, stderr
    assert snapshot(tmp_path / "public") == served(new, gz=True)
    assert_every_listed_file_is_there(tmp_path / "public")
    assert stdout == f"wrote 10 files to {tmp_path / 'public'}\n"


def test_a_finished_export_reports_what_the_middleware_warned_one_line_each(tmp_path, monkeypatch):
    sitemaps = Sitemaps(base_url=SITE)
    sitemaps.add_provider("pages", lambda: ["/", "https://other.example/x", "/about"])
    code, _, stderr = export(monkeypatch, sitemaps, tmp_path)
    assert code == 0
    [line] = stderr.splitlines()
    assert line.startswith("sitemap-middleware: warning: ") and "https://other.example/x" in line


# The console command, run for real. Its provider fails at product 20 or 25, or says on
# stdout that it is blocked at product 45, then waits on stdin, which the test never writes.
CONSOLE_SHOP = """
import os
import sys
from sitemap_middleware import Sitemaps

ACTION, _, AT = os.environ["SHOP_ACTION"].partition(":")

def products(offset, limit):
    for n in range(offset, min(offset + limit, 100)):
        if n == int(AT) and ACTION == "fail":
            raise RuntimeError("the database went away")
        if n == int(AT) and ACTION == "block":
            print("blocked", flush=True)
            sys.stdin.read()
        yield f"/new/p/{n}"

sitemaps = Sitemaps(base_url="https://shop.example", page_size=10)
sitemaps.add_provider("products", products, count=lambda: 100)
"""


def console(tmp_path: Path, action: str, out: Path) -> subprocess.Popen[str]:
    """``python -m sitemap_middleware export`` of the console shop, started."""
    (tmp_path / "console_shop.py").write_text(CONSOLE_SHOP)
    package_root = Path(sitemap_middleware.__file__).parents[1]
    environ = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tmp_path), str(package_root)]),
        "SHOP_ACTION": action,
    }
    command = [
        sys.executable,
        "-m",
        "sitemap_middleware",
        "export",
        "console_shop:sitemaps",
        "--out",
        str(out),
    ]
    return subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=environ, text=True
    )


@pytest.mark.parametrize(
    "action",
    [pytest.param("fail:20", id="before-page-3s-first-url"), pytest.param("fail:25", id="mid-page-3")],
)
def test_the_console_command_reports_a_failure_in_one_line(tmp_path, action):
    out = tmp_path / "public"
    out.mkdir()
    before = old_tree(out)
    with console(tmp_path, action, out) as process:
        _, stderr = process.communicate(timeout=60)
    assert process.returncode == 2
    assert_one_clear_line(stderr, "sitemap-products-3.xml", "the database went away", "as it was")
    assert snapshot(out) == before
    assert_every_listed_file_is_there(out)


@pytest.mark.parametrize(
    ("signum", "status"),
    [pytest.param(signal.SIGINT, 130, id="sigint"), pytest.param(signal.SIGTERM, 143, id="sigterm")],
)
def test_a_signal_mid_export_leaves_the_previous_tree_as_it_was(tmp_path, signum, status):
    out = tmp_path / "public"
    out.mkdir()
    before = old_tree(out)
    with console(tmp_path, "block:45", out) as process:  # page 5, five URLs in
        try:
            assert process.stdout is not None and process.stderr is not None
            assert process.stdout.readline() == "blocked\n"
            process.send_signal(signum)
            assert process.wait(timeout=30) == status
            stderr = process.stderr.read()
        finally:
            process.kill()
    assert_one_clear_line(stderr, "interrupted", signal.Signals(signum).name, "as it was")
    assert snapshot(out) == before
    assert_every_listed_file_is_there(out)


def test_a_symlink_at_the_index_is_replaced_not_written_through(tmp_path, monkeypatch):
    out, outside = tmp_path / "public", tmp_path / "outside.txt"
    out.mkdir()
    outside.write_bytes(b"not yours")
    (out / "sitemap-index.xml").symlink_to(outside)
    new = shop(25)
    code, _, stderr = export(monkeypatch, new, out)
    assert code == 0, stderr
    assert outside.read_bytes() == b"not yours"
    assert not (out / "sitemap-index.xml").is_symlink()
    assert snapshot(out) == served(new)
    assert_every_listed_file_is_there(out)


def test_a_dangling_symlink_at_a_page_creates_nothing_outside(tmp_path, monkeypatch):
    out, outside = tmp_path / "public", tmp_path / "elsewhere" / "planted.xml"
    out.mkdir()
    outside.parent.mkdir()
    (out / "sitemap-products-2.xml").symlink_to(outside)
    new = shop(25)
    code, _, stderr = export(monkeypatch, new, out)
    assert code == 0, stderr
    assert not outside.exists()
    assert not (out / "sitemap-products-2.xml").is_symlink()
    assert snapshot(out) == served(new)
    assert_every_listed_file_is_there(out)


def test_an_out_folder_that_is_a_symlink_is_followed(tmp_path, monkeypatch):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "public").symlink_to(real)
    new = shop(15)
    code, _, stderr = export(monkeypatch, new, tmp_path / "public")
    assert code == 0, stderr
    assert snapshot(real) == served(new)


# Section names as registration allows them, hyphens too: "sitemap-a-1-2.xml" is page 2 of "a-1".
SECTION = st.from_regex(r"[a-z0-9_]{1,5}(-[a-z0-9_]{1,3})?", fullmatch=True).filter(
    lambda name: name != "index"
)
TREE = st.dictionaries(SECTION, st.integers(min_value=1, max_value=25), min_size=1, max_size=3)


def tree_of(sizes: dict[str, int], version: str) -> Sitemaps:
    sitemaps = Sitemaps(base_url=SITE, page_size=10)
    for name, size in sizes.items():
        sitemaps.add_provider(
            name, lambda name=name, size=size: [f"/{version}/{name}/{n}" for n in range(size)]
        )
    return sitemaps


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(old=TREE, new=TREE, gz=st.booleans())
def test_export_over_any_older_tree_leaves_exactly_the_new_one(old, new, gz):
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder)
        export_tree(tree_of(old, "old"), out, gzip=True)
        (out / "index.html").write_bytes(b"mine")
        export_tree(tree_of(new, "new"), out, gzip=gz)
        assert snapshot(out) == {**served(tree_of(new, "new"), gz=gz), "index.html": b"mine"}
        assert_every_listed_file_is_there(out)


def test_a_signal_while_the_files_move_in_is_held_until_they_all_have(tmp_path):
    (tmp_path / "sitemap-old-1.xml").write_bytes(b"old")
    with Staging(tmp_path) as staging:
        staging.write("sitemap-a-1.xml", b"a")
        staging.write("sitemap-index.xml", b"index")

        def stale(name: str) -> bool:
            signal.raise_signal(signal.SIGINT)  # Ctrl-C, as the old files are being listed
            return True

        held = staging.commit(["sitemap-a-1.xml", "sitemap-index.xml"], stale=stale)
    assert held == signal.SIGINT
    assert snapshot(tmp_path) == {"sitemap-a-1.xml": b"a", "sitemap-index.xml": b"index"}
