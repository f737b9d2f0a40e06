"""A new user's path, from README.md alone: a fresh virtualenv made and filled by the
Installation commands as written, the validate line, and each of the README's apps saved to
its file and run by its own command under a real server on 127.0.0.1, several workers each.

Offline: the virtualenv sees this interpreter's packages (a ``.pth``), and pip installs only
the package itself from the checkout, with ``--no-index --no-build-isolation`` added to the
README's line (its extras then resolve against what is installed, or pip fails). The git URL
line installs from a ``git clone`` of the checkout's HEAD, named by a ``git+file://`` URL. hatchling,
the build backend, and editables are test dependencies (tox.ini); without them these tests skip,
except in CI.
"""

from __future__ import annotations

import http.client
import os
import re
import shlex
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from ..conftest import wait_until
from ..redis_server import RedisServer
from ..test_examples import free_port, listening
from ..xsd import locs, validate
from .blocks import REPO, python_blocks

TIMEOUT = 60.0
OFFLINE = ["--no-index", "--no-build-isolation"]
PUBLIC = "https://shop.example"  # every README app's base_url


def section(heading: str) -> str:
    """README.md's text under ``heading`` (a ``##`` or ``###`` line), to the next of its level."""
    readme = (REPO / "README.md").read_text()
    level = heading.split(" ", 1)[0]
    return readme.split(f"\n{heading}\n", 1)[1].split(f"\n{level} ", 1)[0]


def sh_lines(text: str) -> list[str]:
    """The commands of the ```sh blocks in ``text``, comments left out."""
    blocks = re.findall(r"```sh\n(.*?)```", text, flags=re.DOTALL)
    return [line for block in blocks for line in block.splitlines() if line and not line.startswith("#")]


@dataclass
class Newcomer:
    folder: Path  # where they work: the virtualenv is .venv in it

    @property
    def python(self) -> Path:
        return self.folder / ".venv" / "bin" / "python"

    def env(self) -> dict[str, str]:
        bare = os.pathsep.join([str(self.folder / ".venv" / "bin"), "/usr/bin", "/bin"])
        return {"PATH": bare, "HOME": str(self.folder), "LANG": "C.UTF-8"}

    def run(
        self, command: str, timeout: float = TIMEOUT, cwd: Path | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            command,
            shell=True,
            cwd=cwd or self.folder,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=timeout,
        )


def require_hatchling() -> None:
    try:
        import editables  # noqa: F401  (hatchling's editable wheels)
        import hatchling  # noqa: F401
    except ImportError:
        if os.environ.get("CI"):
            raise
        pytest.skip("hatchling or editables is not installed (tox.ini's test env has them)")


def installed_paths() -> list[str]:
    """Where this interpreter finds its packages, the checkout left out (the venv must find the
    package through its own install)."""
    return [entry for entry in sys.path if entry and Path(entry).is_dir() and Path(entry).resolve() != REPO]


@pytest.fixture(scope="module")
def newcomer(tmp_path_factory: pytest.TempPathFactory) -> Newcomer:
    require_hatchling()
    folder = tmp_path_factory.mktemp("clone")  # what a clone holds, to build the package from
    for name in ("pyproject.toml", "README.md", "sitemap_middleware"):
        (folder / name).symlink_to(REPO / name)
    (folder / "bin").mkdir()
    (folder / "bin" / "python3").symlink_to(sys._base_executable)  # type: ignore[attr-defined]
    user = Newcomer(folder)
    [line] = [line for line in sh_lines(section("## Installation")) if "pip install -e" in line]
    make_venv, install = line.split(" && ")
    made = subprocess.run(
        make_venv.replace("python3", str(folder / "bin" / "python3"), 1),
        shell=True, cwd=folder, capture_output=True, text=True, timeout=TIMEOUT,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    [site_packages] = (folder / ".venv").glob("lib/python*/site-packages")
    (site_packages / "installed.pth").write_text("\n".join(installed_paths()) + "\n")
    installed = user.run(f"{install} {' '.join(OFFLINE)} --quiet")  # in the clone's top folder
    assert installed.returncode == 0, (install, installed.stderr[-3000:])
    return user


def test_the_installation_line_installs_the_checkout_into_the_fresh_venv(newcomer: Newcomer) -> None:
    where = newcomer.run(
        ".venv/bin/python -c 'import importlib.metadata as m, sitemap_middleware as s; "
        'print(m.distribution("sitemap-middleware").locate_file("")); print(s.__file__)\''
    )
    assert where.returncode == 0, where.stderr
    distribution, package = where.stdout.splitlines()
    assert Path(distribution).resolve().is_relative_to((newcomer.folder / ".venv").resolve())
    assert Path(package).resolve() == (REPO / "sitemap_middleware" / "__init__.py").resolve()
    assert (newcomer.folder / ".venv" / "bin" / "sitemap-middleware").exists()


def test_every_extra_installs_and_the_readme_names_what_each_adds(newcomer: Newcomer) -> None:
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    table = re.findall(r"^\| `\[(\w+)\]` \|", section("## Installation"), flags=re.MULTILINE)
    assert sorted(table) == sorted(extras)
    everything = f'-e ".[{",".join(sorted(extras))}]"'
    installed = newcomer.run(f".venv/bin/python -m pip install {everything} {' '.join(OFFLINE)} --quiet")
    assert installed.returncode == 0, installed.stderr[-3000:]


def test_the_fastapi_extra_brings_a_server() -> None:
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert any(re.match(r"uvicorn\b", requirement) for requirement in extras["fastapi"])


def test_the_git_url_line_installs_a_clone_and_its_command_line(newcomer: Newcomer, tmp_path: Path) -> None:
    if shutil.which("git") is None or not (REPO / ".git").exists():
        if os.environ.get("CI"):
            raise AssertionError("the git URL line needs git and a git checkout")
        pytest.skip("no git, or the checkout is no git repository")
    [line] = [line for line in sh_lines(section("## Installation")) if "git+" in line]
    placeholder = re.search(r"git\+(<[^>]+>)", line)
    assert placeholder, f"{line}: no <placeholder> for the URL after git+"
    clone = tmp_path / "sitemap-middleware"  # what the repository's URL names: its HEAD, committed
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(clone)], check=True, timeout=TIMEOUT)
    # With a host: the packaging of a venv's pip before 22 refuses git+file:/// (no netloc).
    url = f"file://localhost{clone.as_posix()}"
    try:
        installed = newcomer.run(f"{line.replace(placeholder[1], url)} {' '.join(OFFLINE)} --quiet")
        assert installed.returncode == 0, (line, installed.stderr[-3000:])
        away = tmp_path / "elsewhere"  # not the clone's folder, whose package python -c would import
        away.mkdir()
        where = newcomer.run(
            f"{newcomer.python} -c 'import sitemap_middleware as s; print(s.__file__)'", cwd=away
        )
        assert where.returncode == 0, where.stderr
        assert Path(where.stdout.strip()).resolve().is_relative_to((newcomer.folder / ".venv").resolve())
        helped = newcomer.run("sitemap-middleware --help", cwd=away)
        assert helped.returncode == 0, helped.stderr
        assert "validate" in helped.stdout and "export" in helped.stdout
    finally:  # the module's other tests use the clone's editable install: put it back
        [editable] = [line for line in sh_lines(section("## Installation")) if "pip install -e" in line]
        restored = newcomer.run(f"{editable.split(' && ')[1]} {' '.join(OFFLINE)} --quiet")
        assert restored.returncode == 0, restored.stderr[-3000:]


# -- the README's apps, each under its own command -------------------------------------------------


@dataclass(frozen=True)
class App:
    heading: str
    file: str  # as its first comment names it
    code: str
    command: str  # as the README says to run it


def readme_app(heading: str) -> App:
    text = section(heading)
    [block] = [block for block in python_blocks(REPO / "README.md") if block.code in text]
    file = block.code.split(":", 1)[0].removeprefix("# ")
    [command] = re.findall(r"run\s+`([^`]+)`", text)
    return App(heading, file, block.code, command)


@contextmanager
def serving(
    newcomer: Newcomer, app: App, extra_env: dict[str, str] | None = None
) -> Iterator[tuple[int, Path]]:
    """The app saved in a folder of its own and started by its README command on a free port."""
    folder = Path(tempfile.mkdtemp(dir=newcomer.folder))
    (folder / app.file).write_text(app.code)
    port = free_port()
    command = app.command.replace("127.0.0.1:8000", f"127.0.0.1:{port}").replace(
        "--port 8000", f"--port {port}"
    )
    server, *arguments = shlex.split(command)
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(
            [str(newcomer.python), "-m", server, *arguments],
            cwd=folder,
            env={**newcomer.env(), **(extra_env or {})},
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            wait_until(lambda: process.poll() is not None or listening(port), f"{app.file} listens", TIMEOUT)
            assert process.poll() is None, f"{command} exited"
            yield port, folder
        except BaseException:
            log.seek(0)
            print(log.read().decode(errors="replace")[-3000:])
            raise
        finally:
            process.terminate()
            process.wait(TIMEOUT)


def get(port: int, path: str, method: str = "GET") -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)  # a new one: any worker
    try:
        connection.request(method, path)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def products_on(port: int) -> list[str]:
    status, body = get(port, "/sitemap-products-1.xml")
    assert status == 200, body[:500]
    return locs(validate(body))


REQUESTS = 12  # a new connection each: spread over the workers


def assert_serves_its_sitemaps(port: int) -> None:
    status, body = get(port, "/sitemap-index.xml")
    assert status == 200, body[:500]
    assert locs(validate(body)) == [f"{PUBLIC}/sitemap-pages-1.xml", f"{PUBLIC}/sitemap-products-1.xml"]
    assert products_on(port) == [f"{PUBLIC}/p/blue-shoe"]
    status, robots = get(port, "/robots.txt")
    assert status == 200 and f"Sitemap: {PUBLIC}/sitemap-index.xml" in robots.decode()


def write_product(folder: Path, slug: str) -> None:
    """Another process's write (a script, an admin), straight into the app's database."""
    [database] = folder.glob("*.sqlite3")
    with sqlite3.connect(database) as db:
        db.execute("INSERT INTO product (slug, updated_at) VALUES (?, '2026-02-01T08:00:00+00:00')", (slug,))


@pytest.mark.server
@pytest.mark.parametrize("heading", ["### Flask", "### Django"])
def test_the_readmes_app_serves_its_sitemaps_and_no_worker_serves_a_stale_page(
    newcomer: Newcomer, heading: str
) -> None:
    app = readme_app(heading)
    with serving(newcomer, app) as (port, folder):
        assert_serves_its_sitemaps(port)
        for _ in range(REQUESTS):  # every worker reached caches the page
            assert products_on(port) == [f"{PUBLIC}/p/blue-shoe"]
        write_product(folder, "red-hat")
        for _ in range(REQUESTS):
            assert products_on(port) == [f"{PUBLIC}/p/blue-shoe", f"{PUBLIC}/p/red-hat"]


@pytest.mark.server
def test_the_readmes_fastapi_app_serves_its_sitemaps_and_a_write_reaches_every_worker(
    newcomer: Newcomer, tmp_path: Path
) -> None:
    app = readme_app("### FastAPI")
    with (
        RedisServer(tmp_path / "redis") as redis,
        serving(newcomer, app, {"REDIS_URL": redis.url}) as (port, _),
    ):
        assert_serves_its_sitemaps(port)
        for _ in range(REQUESTS):
            assert products_on(port) == [f"{PUBLIC}/p/blue-shoe"]
        assert get(port, "/p/red-hat", method="PUT")[0] == 204
        for _ in range(REQUESTS):
            assert products_on(port) == [f"{PUBLIC}/p/blue-shoe", f"{PUBLIC}/p/red-hat"]


@pytest.mark.server
def test_the_readmes_validate_line_checks_a_running_app_as_written(newcomer: Newcomer) -> None:
    [line] = [line for line in sh_lines(section("## Installation")) if " validate " in line]
    with serving(newcomer, readme_app("### Flask")) as (port, _):
        result = newcomer.run(line.replace("127.0.0.1:8000", f"127.0.0.1:{port}"))
    assert result.returncode == 0, (line, result.stdout[-2000:], result.stderr[-2000:])
    assert result.stdout.splitlines() == ["checked 4 files, 3 URLs: 0 problems, 0 warnings"]
