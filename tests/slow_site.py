"""A site whose pages render slowly, served by a real server in its own process.

``python -m uvicorn tests.slow_site:asgi_app`` or ``python -m gunicorn tests.slow_site:wsgi_app``;
the environment says how slow (``SLOW_SECONDS``: one page's whole render, spread over its
batches) and where the provider's calls are counted (``SLOW_CALLS``: a file that gets a line
per call, in any worker). Besides the sitemaps, ``/rss`` answers the process's resident
memory in bytes, so a test reads what readers cost the server.

Sections: ``slow`` (pages of 10,000 URLs, ~9.4 MB each) and ``quick`` (the same, no sleep).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from sitemap_middleware import Sitemaps

PAGE_SIZE = 10_000
PAGES = 40
BASE = "https://shop.example"  # its own: it runs in a server process, not under pytest
FILLER = "x" * 900  # ~960 bytes per <url>: ~9.4 MB a page, more than the kernel buffers hold


def _locs(section: str, seconds: float) -> Callable[[int, int | None], Iterator[str]]:
    calls = os.environ.get("SLOW_CALLS")

    def locs(offset: int, limit: int | None) -> Iterator[str]:
        if calls:
            with Path(calls).open("a") as file:
                file.write(f"{section} {offset}\n")
        pause = seconds / PAGE_SIZE * 500
        end = PAGE_SIZE * PAGES if limit is None else min(offset + limit, PAGE_SIZE * PAGES)
        for n in range(offset, end):
            if pause and n % 500 == 0:
                time.sleep(pause)  # a slow database: the render waits, the CPU does not
            yield f"/{section}/{n}/{FILLER}"

    return locs


def _sitemaps() -> Sitemaps:
    sitemaps = Sitemaps(base_url=BASE, provider_timeout=10)
    seconds = float(os.environ.get("SLOW_SECONDS", "1.5"))
    sitemaps.add_provider(
        "slow", _locs("slow", seconds), page_size=PAGE_SIZE, count=lambda: PAGE_SIZE * PAGES
    )
    sitemaps.add_provider("quick", _locs("quick", 0.0), page_size=PAGE_SIZE, count=lambda: PAGE_SIZE * PAGES)
    return sitemaps


def _rss() -> bytes:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return str(int(line.split()[1]) * 1024).encode()
    return b"0"


async def _asgi_site(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    found = scope["path"] == "/rss"
    await send({"type": "http.response.start", "status": 200 if found else 404, "headers": []})
    await send({"type": "http.response.body", "body": _rss() if found else b"not found"})


def _wsgi_site(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    found = environ["PATH_INFO"] == "/rss"
    start_response("200 OK" if found else "404 Not Found", [("Content-Type", "text/plain")])
    return [_rss() if found else b"not found"]


asgi_app = _sitemaps().asgi(_asgi_site)
wsgi_app = _sitemaps().wsgi(_wsgi_site)
