"""What every benchmark shares: the data set, timing, tables, local servers, wrk and RSS.

The data set is the one issue 4 measured the peers on: one ``&`` in every loc, a
non-ASCII path in 1% of them, an aware ``datetime`` lastmod, a changefreq and a priority::

    rows = make_rows(50_000)                     # [(path, lastmod, changefreq, priority), ...]
    table(["renderer", "URLs/s"], [["ours", "180,000"]])
"""

from __future__ import annotations

import contextlib
import os
import platform
import re
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import overload

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
if str(REPO) not in sys.path:  # run from a checkout without installing the package
    sys.path.insert(0, str(REPO))

from sitemap_middleware import Url  # noqa: E402

BASE_URL = "https://shop.example"
HOST = "127.0.0.1"
EPOCH = datetime(2025, 1, 1, tzinfo=UTC)
CHANGEFREQS = ("daily", "weekly")
PRIORITIES = (0.5, 0.8, 1.0)

Row = tuple[str, datetime, str, float]


def loc_path(n: int) -> str:
    """The path of product ``n``: ``&`` in every one, a non-ASCII path in 1%."""
    if n % 100 == 0:
        return f"/p/caf\u00e9-cr\u00e8me-{n}?colour=red&size={n % 7}"
    return f"/p/item-{n}?colour=red&size={n % 7}"


def row(n: int) -> Row:
    return loc_path(n), EPOCH + timedelta(seconds=37 * n), CHANGEFREQS[n % 2], PRIORITIES[n % 3]


def make_rows(count: int) -> list[Row]:
    """The rows every renderer gets, built once so no renderer pays for making them."""
    return [row(n) for n in range(count)]


def url(n: int) -> Url:
    path, lastmod, changefreq, priority = row(n)
    return Url(path, lastmod=lastmod, changefreq=changefreq, priority=priority)


def generate_urls(count: int, start: int = 0) -> Iterator[Url]:
    """A generator provider's body: URLs made on the fly, nothing held."""
    for n in range(start, count):
        yield url(n)


class Catalogue(Sequence[Url]):
    """A lazily paged sequence provider, the shape of a Django QuerySet: slices cost their size."""

    def __init__(self, count: int) -> None:
        self._count = count

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> Url: ...

    @overload
    def __getitem__(self, index: slice) -> list[Url]: ...

    def __getitem__(self, index: int | slice) -> Url | list[Url]:
        if isinstance(index, slice):
            return [url(n) for n in range(*index.indices(self._count))]
        if not -self._count <= index < self._count:
            raise IndexError(index)
        return url(index % self._count)


# -- timing and tables --------------------------------------------------------------------------


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def table(headers: Sequence[str], body: Sequence[Sequence[object]]) -> str:
    """A Markdown table (it pastes straight into benchmarks/README.md), columns padded."""
    cells = [[str(h) for h in headers], *[[str(c) for c in line] for line in body]]
    widths = [max(len(line[i]) for line in cells) for i in range(len(headers))]

    def fmt(line: Sequence[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)) + " |"

    rule = "| " + " | ".join("-" * w for w in widths) + " |"
    return "\n".join([fmt(cells[0]), rule, *(fmt(line) for line in cells[1:])])


def ratio(value: float, reference: float) -> str:
    return f"{value / reference:.2f}x" if reference else "n/a"


def revision() -> str:
    """The commit measured (``git describe``-style short hash, ``-dirty`` with local edits), so a
    figure pasted into benchmarks/README.md names the code it came from."""
    try:
        commit = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown commit"
    return commit + ("-dirty" if dirty else "")


def machine() -> str:
    """One line naming the machine, so every printed figure says where it was measured."""
    model = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    load = ", ".join(f"{n:.2f}" for n in os.getloadavg())
    cpus = f"{os.cpu_count()} CPUs ({model or platform.machine()})"
    return f"{cpus}, Python {platform.python_version()}, load average {load} at start"


# -- memory -------------------------------------------------------------------------------------


def close_wsgi(result: object) -> None:
    """PEP 3333: a server calls the result's ``close`` if it has one (a plain list has none)."""
    close = getattr(result, "close", None)
    if close is not None:
        close()


def proc_status_kib(field: str, pid: int | str = "self") -> int:
    """A ``/proc/<pid>/status`` size field in KiB: VmHWM is the peak RSS, VmRSS the current one."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise LookupError(f"{field} not in /proc/{pid}/status")


def mib(kib: float) -> str:
    return f"{kib / 1024:,.1f} MiB"


# -- local servers ------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port


def bench_env(**extra: str) -> dict[str, str]:
    """The environment of a server subprocess: it imports the package from this checkout."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), str(BENCH_DIR), env.get("PYTHONPATH")]))
    env.update(extra)
    return env


@dataclass
class Server:
    """A server subprocess on 127.0.0.1, started with `start` and always stopped by its pid."""

    name: str
    argv: list[str]
    port: int
    env: dict[str, str]
    process: subprocess.Popen[bytes] | None = None
    log: Path | None = None

    @property
    def base(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def start(self, timeout: float = 60.0) -> Server:
        self.log = Path(f"/tmp/sitemap-bench-{self.name}-{self.port}.log")
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(self.argv, env=self.env, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited at start:\n{self.log.read_text()[-3000:]}")
            with contextlib.suppress(OSError), socket.create_connection((HOST, self.port), timeout=0.2):
                return self
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"{self.name} did not listen on port {self.port} within {timeout:.0f}s")

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(5)

    def tracebacks(self) -> int:
        """Tracebacks the server logged: every one is an error, whatever the client saw."""
        return 0 if self.log is None else self.log.read_text(errors="replace").count("Traceback")

    def __enter__(self) -> Server:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def uvicorn_server(name: str, factory: str, **env: str) -> Server:
    """``apps.<factory>()`` under one uvicorn worker (httptools and uvloop if installed)."""
    port = free_port()
    argv = [sys.executable, "-m", "uvicorn", f"apps:{factory}", "--factory", "--host", HOST]
    argv += ["--port", str(port), "--log-level", "warning", "--no-access-log", "--lifespan", "off"]
    return Server(name, argv, port, bench_env(**env))


def gunicorn_server(name: str, factory: str, threads: int = 8, **env: str) -> Server:
    """``apps.<factory>()`` under one gunicorn gthread worker."""
    port = free_port()
    argv = [sys.executable, "-m", "gunicorn", f"apps:{factory}()", "-k", "gthread", "-w", "1"]
    argv += ["--threads", str(threads), "-b", f"{HOST}:{port}", "--log-level", "warning"]
    argv += ["--chdir", str(BENCH_DIR)]
    return Server(name, argv, port, bench_env(**env))


# -- wrk ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WrkResult:
    """What one wrk run measured; latencies in milliseconds."""

    requests: int
    rps: float
    p50: float
    p99: float
    errors: int  # socket errors plus non-2xx/3xx answers
    mb_per_s: float


_UNITS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0}
_SIZES = {"B": 1e-6, "KB": 1 / 1024, "MB": 1.0, "GB": 1024.0}


def _ms(text: str) -> float:
    match = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text)
    if match is None:
        raise ValueError(f"unexpected wrk duration {text!r}")
    return float(match[1]) * _UNITS[match[2]]


def parse_wrk(output: str) -> WrkResult:
    """Read wrk's ``--latency`` report."""

    def find(pattern: str) -> re.Match[str]:
        match = re.search(pattern, output, re.MULTILINE)
        if match is None:
            raise ValueError(f"no {pattern!r} in wrk output:\n{output}")
        return match

    requests = int(find(r"^\s*(\d+) requests in")[1])
    rps = float(find(r"^Requests/sec:\s*([\d.]+)")[1])
    p50 = _ms(find(r"^\s*50%\s+(\S+)")[1])
    p99 = _ms(find(r"^\s*99%\s+(\S+)")[1])
    errors = 0
    socket_errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", output)
    if socket_errors:
        errors += sum(int(n) for n in socket_errors.groups())
    non_2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    if non_2xx:
        errors += int(non_2xx[1])
    transfer = find(r"^Transfer/sec:\s*([\d.]+)(B|KB|MB|GB)")
    return WrkResult(requests, rps, p50, p99, errors, float(transfer[1]) * _SIZES[transfer[2]])


def wrk(
    url: str,
    *,
    headers: dict[str, str] | None = None,
    seconds: int = 4,
    connections: int = 32,
    threads: int = 1,
    timeout: int = 10,
) -> WrkResult:
    argv = ["wrk", f"-t{threads}", f"-c{connections}", f"-d{seconds}s", f"--timeout={timeout}s", "--latency"]
    for name, value in (headers or {}).items():
        argv += ["-H", f"{name}: {value}"]
    done = subprocess.run([*argv, url], capture_output=True, text=True, check=True)
    return parse_wrk(done.stdout)


def require(tool: str, hint: str) -> None:
    import shutil

    if shutil.which(tool) is None:
        sys.exit(f"{tool} not found: {hint}")


def fmt_int(value: float) -> str:
    return f"{value:,.0f}"
