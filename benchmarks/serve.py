"""serve: req/s and p50/p99 of our middleware under real servers and wrk, beside the bare-app ceiling.

    python benchmarks/run.py serve [--quick] [--seconds N] [--rounds N] [--servers uvicorn,gunicorn]

For each server (one uvicorn worker; one gunicorn gthread worker) three apps run on
127.0.0.1 (see ``apps.py``): ours with the cache on, ours with ``cache=None`` (cold
pages), and the bare ceiling, which answers from a dict with the very bytes and headers
our warm server sends (and ``hello`` for the 304 row). Each scenario is measured on ours,
then at once on the ceiling, with the same wrk settings: one wrk thread, so the server
and the load generator each have one of the machine's two cores.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field

from apps import INDEX, PAGE
from common import Server, WrkResult, gunicorn_server, machine, require, table, uvicorn_server, wrk

GZIP = {"Accept-Encoding": "gzip"}


@dataclass(frozen=True)
class Scenario:
    name: str
    app: str  # "ours" or "cold"
    path: str
    headers: dict[str, str]
    ceiling_path: str
    ceiling_headers: dict[str, str]
    target: float | None = None
    connections: int = 32
    etag: bool = False  # add If-None-Match with the real ETag


SCENARIOS = (
    Scenario("cached page, gzip", "ours", PAGE, GZIP, PAGE, GZIP, target=0.85),
    Scenario("cached page, identity", "ours", PAGE, {}, PAGE, {}),
    Scenario("304 (If-None-Match, real ETag)", "ours", PAGE, GZIP, "/hello", {}, target=0.85, etag=True),
    Scenario("cold page, gzip (cache=None)", "cold", PAGE, GZIP, PAGE, GZIP, connections=1),
    Scenario("index, gzip (cached)", "ours", INDEX, GZIP, INDEX, GZIP),
    Scenario("robots.txt (cached)", "ours", "/robots.txt", {}, "/robots.txt", {}),
)


@dataclass
class Stack:
    """The three servers of one kind, started together (idle servers cost no CPU)."""

    kind: str
    servers: dict[str, Server] = field(default_factory=dict)

    def __enter__(self) -> Stack:
        make = uvicorn_server if self.kind == "uvicorn" else gunicorn_server
        suffix = "asgi" if self.kind == "uvicorn" else "wsgi"
        self.servers = {
            "ours": make(f"{self.kind}-ours", f"{suffix}_ours", BENCH_CACHE="on"),
            "cold": make(f"{self.kind}-cold", f"{suffix}_ours", BENCH_CACHE="off"),
            "bare": make(f"{self.kind}-bare", f"{suffix}_bare"),
        }
        try:
            for server in self.servers.values():
                server.start(timeout=120)
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        for server in self.servers.values():
            server.stop()


def get(url: str, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, headers=headers)
    with urllib.request.urlopen(request, timeout=120) as response:
        return response.status, {k.lower(): v for k, v in response.headers.items()}, response.read()


def warm(base: str) -> str:
    """Fill the cache (index, page in both encodings, robots.txt); returns the gzip ETag."""
    for path in (INDEX, PAGE, "/robots.txt"):
        for headers in ({}, GZIP):
            get(base + path, headers)
    status, headers, _ = get(base + PAGE, GZIP)
    if status != 200 or "etag" not in headers:
        raise RuntimeError(f"no ETag on {PAGE}: {status} {headers}")
    return headers["etag"]


def combine(results: list[WrkResult]) -> WrkResult:
    """Rounds of one side as one result: summed requests, mean rates, worst percentiles."""
    return WrkResult(
        requests=sum(r.requests for r in results),
        rps=sum(r.rps for r in results) / len(results),
        p50=max(r.p50 for r in results),
        p99=max(r.p99 for r in results),
        errors=sum(r.errors for r in results),
        mb_per_s=sum(r.mb_per_s for r in results) / len(results),
    )


Measured = tuple[Scenario, WrkResult, WrkResult, float]


def measure(
    stack: Stack, seconds: int, order: tuple[str, ...], scenarios: Sequence[Scenario] = SCENARIOS
) -> list[Measured]:
    """Each scenario as ours, ceiling, ceiling, ours (ABBA), per round: drift in the machine
    cancels out. The ratio is the median over the (ours, ceiling) pairs run next to each
    other: on this shared machine one 2 s run in ten moves by a quarter, on either side."""
    ours = stack.servers["ours"]
    etag = warm(ours.base)
    get(stack.servers["cold"].base + PAGE, GZIP)  # imports and first-call costs out of the way
    results = []
    for scenario in scenarios:
        headers = dict(scenario.headers)
        if scenario.etag:
            headers["If-None-Match"] = etag
        sides = {
            "ours": (stack.servers[scenario.app].base + scenario.path, headers),
            "bare": (stack.servers["bare"].base + scenario.ceiling_path, scenario.ceiling_headers),
        }
        runs: dict[str, list[WrkResult]] = {"ours": [], "bare": []}
        print(f"  {stack.kind}: {scenario.name}", file=sys.stderr)
        for side in order:
            url, side_headers = sides[side]
            runs[side].append(
                wrk(url, headers=side_headers, seconds=seconds, connections=scenario.connections)
            )
        pairs = [mine.rps / ceiling.rps for mine, ceiling in zip(runs["ours"], runs["bare"], strict=True)]
        results.append((scenario, combine(runs["ours"]), combine(runs["bare"]), statistics.median(pairs)))
    errors = sum(server.tracebacks() for server in stack.servers.values())
    if errors:
        print(f"  {stack.kind}: {errors} tracebacks in the server logs", file=sys.stderr)
    return results


def report(kind: str, results: list[Measured]) -> str:
    headers = ["scenario", "ours req/s", "p50 ms", "p99 ms", "ceiling", "ceiling req/s", "p50 ms", "p99 ms"]
    headers += ["ratio", "target", "errors"]
    body = []
    for scenario, mine, ceiling, paired in results:
        ceiling_name = "bare hello" if scenario.ceiling_path == "/hello" else "bare bytes"
        body.append(
            [
                scenario.name,
                f"{mine.rps:,.0f}",
                f"{mine.p50:,.2f}",
                f"{mine.p99:,.2f}",
                ceiling_name,
                f"{ceiling.rps:,.0f}",
                f"{ceiling.p50:,.2f}",
                f"{ceiling.p99:,.2f}",
                f"{paired:.2f}x",
                f">= {scenario.target}x" if scenario.target else "",
                f"{mine.errors} / {ceiling.errors}",
            ]
        )
    return f"{kind}\n\n" + table(headers, body)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="serve", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="uvicorn only, one 1 s run per side (~20 s)")
    parser.add_argument("--seconds", type=int, help="wrk duration of each run (default 2)")
    parser.add_argument("--rounds", type=int, help="ABBA rounds per scenario (default 3; 1 with --quick)")
    parser.add_argument("--servers", help="comma-separated: uvicorn,gunicorn (default both)")
    parser.add_argument("--only", help="comma-separated words: the scenarios naming any (e.g. cached,304)")
    args = parser.parse_args(argv)
    only = args.only.split(",") if args.only else None
    scenarios = [s for s in SCENARIOS if only is None or any(word in s.name for word in only)]
    require("wrk", "apt-get install -y wrk")
    seconds = args.seconds or (1 if args.quick else 2)
    kinds = (args.servers or ("uvicorn" if args.quick else "uvicorn,gunicorn")).split(",")
    rounds = args.rounds or (1 if args.quick else 3)
    one_round = ("ours", "bare") if args.quick else ("ours", "bare", "bare", "ours")
    order = (
        f"{'ours, ceiling' if args.quick else 'ours, ceiling, ceiling, ours'} x {rounds}; req/s the mean, "
        "p50/p99 the worse, ratio the median of the paired runs"
    )
    print(f"serve: wrk -t1 -c32 (-c1 for cold pages), runs of {seconds} s as {order}; {machine()}")
    print("ours = our middleware around a trivial app; ceiling = a bare app answering precomputed bytes\n")
    for kind in kinds:
        with Stack(kind) as stack:
            results = measure(stack, seconds, one_round * rounds, scenarios)
        print(report(f"{kind} (1 worker)", results))
        print()


if __name__ == "__main__":
    main()
