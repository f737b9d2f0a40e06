"""audit: ``validate --urls all`` of a 100,000-URL site on loopback, and how long it takes.

    python benchmarks/run.py audit [--quick] [--urls N] [--per-host N]

The site is one uvicorn worker (a subprocess on 127.0.0.1) serving a `Sitemaps` of N URLs
in files of 50,000 in front of a plain ASGI app whose every page is a small HTML page with
a self canonical (so each URL costs a HEAD and a GET, the audit's worst case per URL), a
noindex one in every 1,000 and a 404 in every 1,000 (each reported: the count is checked).
The audit runs in this process, through the command line's own ``main``, with the default
per-host concurrency (4) unless told. Reported: the wall time, URLs per second, and the
problems found against those planted. The audit's own bound is its deadline
(``--run-timeout``); this measures that 100,000 URLs need far less.
"""

from __future__ import annotations

import argparse
import io
import sys
import time
from typing import Any

from common import Server, bench_env, free_port, machine, table

from sitemap_middleware import Sitemaps

HOST = "127.0.0.1"


def site() -> Any:
    """``audit:site`` for uvicorn (``--factory``): the URL count from ``AUDIT_URLS``."""
    import os

    count = int(os.environ.get("AUDIT_URLS", "100000"))
    port = os.environ["AUDIT_PORT"]
    sitemaps = Sitemaps(base_url=f"http://{HOST}:{port}", page_size=50_000)
    sitemaps.add_provider("pages", lambda: [f"/p/{n}" for n in range(count)])

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        path = scope["path"]
        n = int(path.rsplit("/", 1)[-1]) if path.startswith("/p/") else -1
        status, extra = 200, ""
        if n < 0 or n % 1000 == 999:
            status = 404
        elif n % 1000 == 500:
            extra = '<meta name="robots" content="noindex">'
        body = (
            f'<!doctype html><html><head><title>{n}</title><link rel="canonical" '
            f'href="http://{HOST}:{port}{path}">{extra}</head><body>{"x" * 2000}</body></html>'
        ).encode()
        headers = [
            (b"content-type", b"text/html; charset=utf-8"),
            (b"content-length", str(len(body)).encode()),
        ]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else body})

    return sitemaps.asgi(app)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="audit", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="10,000 URLs")
    parser.add_argument("--urls", type=int, help="URLs listed (default 100,000)")
    parser.add_argument("--per-host", type=int, default=4, help="requests at once (default 4)")
    args = parser.parse_args(argv)
    count = args.urls or (10_000 if args.quick else 100_000)
    from sitemap_middleware.cli import main as cli

    port = free_port()
    argv_ = [sys.executable, "-m", "uvicorn", "audit:site", "--factory", "--host", HOST, "--port", str(port)]
    argv_ += ["--log-level", "warning", "--no-access-log", "--lifespan", "off"]
    env = bench_env(AUDIT_URLS=str(count), AUDIT_PORT=str(port))
    print(f"audit: validate --urls all of {count:,} URLs on loopback (uvicorn, 1 worker); {machine()}")
    with Server("audit", argv_, port, env):
        out = io.StringIO()
        start = time.perf_counter()
        code = cli(
            [
                "validate",
                f"http://{HOST}:{port}/robots.txt",
                "--urls",
                "all",
                "--per-host",
                str(args.per_host),
            ],
            out=out,
            err=io.StringIO(),
        )
        seconds = time.perf_counter() - start
    lines = out.getvalue().splitlines()
    planted = 2 * (count // 1000)
    found = sum(1 for line in lines if "answers 404" in line or "is noindex" in line)
    print()
    print(
        table(
            ["URLs", "per host", "seconds", "URLs/s", "problems planted", "found", "exit"],
            [
                [
                    f"{count:,}",
                    args.per_host,
                    f"{seconds:.1f}",
                    f"{count / seconds:,.0f}",
                    planted,
                    found,
                    code,
                ]
            ],
        )
    )
    print(f"\n{lines[-1]}")
    for line in lines[:-1]:
        if "answers 404" not in line and "is noindex" not in line:
            print(f"unplanted: {line}")
    if found != planted:
        sys.exit(f"found {found} problems, planted {planted}")


if __name__ == "__main__":
    main()
