"""index: time to answer /sitemap-index.xml for 10M URLs, with and without a declared count.

    python benchmarks/run.py index [--quick] [--urls N]

Without a count, the index must measure every page (pages are cut over valid entries, by
count and by bytes), so the first answer iterates every URL and later ones come from the
cache. With ``Sitemaps.provider(..., count=...)`` (when the package has it) pages are
fixed windows and the index needs no URL at all: the provider below counts what it is
asked for, to show it. In-process through the WSGI middleware, gzip accepted.
"""

from __future__ import annotations

import argparse
import inspect
import statistics
import sys
import time
import zlib
from collections.abc import Iterator
from typing import Any

from common import BASE_URL, close_wsgi, machine, table
from memory import products

from sitemap_middleware import Sitemaps, Url

REPEATS = 20


class Counting:
    """A generator provider that counts the URLs pulled from it."""

    def __init__(self, urls: int) -> None:
        self.urls = urls
        self.pulled = 0

    def __call__(self) -> Iterator[Url]:
        for entry in products(self.urls):
            self.pulled += 1
            yield entry


def _not_found(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    start_response("404 Not Found", [("Content-Type", "text/plain")])
    return [b""]


def get_index(app: Any) -> tuple[float, bytes]:
    environ = {"REQUEST_METHOD": "GET", "PATH_INFO": "/sitemap-index.xml", "HTTP_ACCEPT_ENCODING": "gzip"}
    status: list[str] = []
    start = time.perf_counter()
    result = app(environ, lambda s, h, exc_info=None: status.append(s))
    try:
        body = b"".join(result)
    finally:
        close_wsgi(result)
    elapsed = time.perf_counter() - start
    if not status[0].startswith("200"):
        raise RuntimeError(f"index answered {status[0]}")
    return elapsed, body


def listed(body: bytes) -> int:
    return zlib.decompress(body, 16 + zlib.MAX_WBITS).count(b"<sitemap>")


def measure(label: str, sitemaps: Sitemaps, provider: Counting, repeats: int) -> tuple[list[object], float]:
    """A table row: first answer, the median of ``repeats`` more, URLs pulled; and the first time."""
    app = sitemaps.wsgi(_not_found)
    first, body = get_index(app)
    pulled_first = provider.pulled
    again = [get_index(app)[0] for _ in range(repeats)]
    print(f"  {label}: done", file=sys.stderr)
    row: list[object] = [
        label,
        f"{first * 1000:,.1f}",
        f"{statistics.median(again) * 1000:,.2f}",
        listed(body),
        f"{pulled_first:,}",
        f"{provider.pulled - pulled_first:,}",
    ]
    return row, first


def count_parameter() -> bool:
    return "count" in inspect.signature(Sitemaps.provider).parameters


def counted(urls: int, cache: bool) -> tuple[Sitemaps, Counting]:
    sitemaps = Sitemaps(base_url=BASE_URL, cache=cache)
    provider = Counting(urls)
    sitemaps.provider("products", count=lambda: urls)(provider)  # type: ignore[call-arg]
    return sitemaps, provider


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="index", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="1M URLs (~8 s)")
    parser.add_argument("--urls", type=int, help="URLs in the section (default 10,000,000)")
    args = parser.parse_args(argv)
    urls = args.urls or (1_000_000 if args.quick else 10_000_000)
    print(f"index: /sitemap-index.xml for {urls:,} URLs in pages of 50,000, in-process (WSGI); {machine()}")
    sitemaps = Sitemaps(base_url=BASE_URL, cache=True)
    provider = Counting(urls)
    sitemaps.provider("products")(provider)
    rows = [measure("no count, cache on", sitemaps, provider, REPEATS)[0]]
    verdict = "declared count: not supported yet"
    if count_parameter():
        sitemaps, provider = counted(urls, cache=True)
        row, first = measure("declared count, cache on", sitemaps, provider, REPEATS)
        rows += [row, measure("declared count, cache off", *counted(urls, cache=False), REPEATS)[0]]
        met = first < 0.050 and provider.pulled == 0
        verdict = (
            f"declared count, cold: {first * 1000:,.1f} ms, {provider.pulled:,} URLs pulled "
            f"(target < 50 ms and none: {'met' if met else 'missed'})"
        )
    headers = ["providers", "first answer ms", f"repeat ms (median of {REPEATS})", "pages listed"]
    headers += ["URLs pulled (first)", "URLs pulled (repeats)"]
    print()
    print(table(headers, rows))
    print(f"\n{verdict}")


if __name__ == "__main__":
    main()
