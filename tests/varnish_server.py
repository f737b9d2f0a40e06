"""A throwaway Varnish (Debian's ``varnishd``) on 127.0.0.1 in front of one backend port.

Its VCL caches what the backend lets it (our ``Cache-Control: public, max-age=600``),
purges on ``PURGE`` from 127.0.0.1 (Varnish's ``return (purge)``: every variant of that
host and path) and says on each answer whether it was a hit (``X-Cache``, beside
Varnish's own ``X-Varnish``: two transaction ids on a hit). A test that cannot start it
fails: it never skips, since the purges it checks would then go unchecked::

    with VarnishServer(tmp_path, backend_port) as varnish:
        got = varnish.get("/sitemap-products-1.xml", host="shop.example")
        got.headers["X-Cache"]          # "MISS", then "HIT"
"""

from __future__ import annotations

import http.client
import shutil
import subprocess
from pathlib import Path
from types import TracebackType

from .conftest import wait_until
from .redis_server import free_port
from .servers import Got

START_TIMEOUT = 30.0  # seconds: varnishd compiles its VCL with the C compiler first
TIMEOUT = 10.0

VCL = """vcl 4.1;

backend origin {{
    .host = "127.0.0.1";
    .port = "{port}";
}}

acl purgers {{
    "127.0.0.1";
}}

sub vcl_recv {{
    if (req.url == "/__varnish_ready") {{
        return (synth(200, "ready"));
    }}
    if (req.method == "PURGE") {{
        if (client.ip !~ purgers) {{
            return (synth(405, "PURGE not allowed"));
        }}
        return (purge);
    }}
}}

sub vcl_deliver {{
    if (obj.hits > 0) {{
        set resp.http.X-Cache = "HIT";
    }} else {{
        set resp.http.X-Cache = "MISS";
    }}
}}
"""


def varnishd_binary() -> str:
    """Debian's ``varnishd`` (in /usr/sbin, off a user's PATH); `AssertionError` without it."""
    found = shutil.which("varnishd") or shutil.which("varnishd", path="/usr/sbin:/usr/local/sbin")
    if found is None:
        raise AssertionError("no varnishd: apt-get install varnish (as .ci/run does)")
    return found


class VarnishServer:
    """One ``varnishd`` in the foreground, its working directory and VCL under ``directory``."""

    def __init__(self, directory: Path, backend_port: int) -> None:
        self.directory = directory
        self.backend_port = backend_port
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> VarnishServer:
        self.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def start(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        vcl = self.directory / "sitemaps.vcl"
        vcl.write_text(VCL.format(port=self.backend_port))
        command = [
            varnishd_binary(),
            "-F",  # foreground: this process is the server, stopped with it
            "-n", str(self.directory / "work"),
            "-a", f"127.0.0.1:{self.port}",
            "-f", str(vcl),
            "-s", "malloc,16m",
            "-T", "none",  # no management port
            "-j", "none",  # no jail: runs as whoever runs the tests
        ]  # fmt: skip
        self._process = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL
        )
        wait_until(self._answers, f"varnishd answers on {self.port}", START_TIMEOUT)

    def _answers(self) -> bool:
        process = self._process
        if process is not None and process.poll() is not None:
            stderr = process.stderr.read().decode(errors="replace") if process.stderr else ""
            raise AssertionError(f"varnishd exited with {process.returncode}: {stderr}")
        try:
            return self.request("GET", "/__varnish_ready").status == 200
        except OSError:
            return False

    def request(self, method: str, path: str, host: str = "127.0.0.1") -> Got:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=TIMEOUT)
        try:
            connection.request(method, path, headers={"Host": host})  # http.client asks for identity
            response = connection.getresponse()
            return Got(response.status, response.headers, response.read())
        finally:
            connection.close()

    def get(self, path: str, host: str) -> Got:
        return self.request("GET", path, host)

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(TIMEOUT)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(TIMEOUT)
        if process.stderr is not None:
            process.stderr.close()
