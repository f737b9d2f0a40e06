"""targets: issue 20's speed targets, each judged on the median of several runs.

    python benchmarks/run.py targets [--runs N] [--rounds N] [--serve-runs N] [--quick]

On a shared VM the machine's speed moves by a quarter within seconds, so one run of
`render` or `serve` can meet a target or miss it by luck. Here every target is measured
in ``--runs`` runs, each a fresh Python process (what one process happens to get from
the allocator and the machine counts once, not in every round), and the verdict is on
the median of the runs' medians, with the margin over the target and the runs' range:

- **Render paths** (the default configuration, the README's `Url` provider, a cold page):
  WSGI identity (0.80x), ASGI identity (0.75x) against the hand-rolled renderer's
  identity time; ASGI gzip (0.70x) against the hand-rolled renderer plus zlib level 6.
  Within a run, each round times the hand-rolled renderer and each path back to back
  (which goes first alternates), so the pair sees the same machine; a round's ratio is
  the renderer's time over the path's, a run's the median of its rounds.
- **Cached gzip under uvicorn** (0.85x a bare app serving the same bytes): each run is
  one `serve` measure of that scenario (fresh servers, ABBA wrk runs of 2 s).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from common import machine, make_rows, revision, table

# Path -> (its reference, the target): issue 20, item 8.
RENDER_TARGETS = {
    "WSGI cold identity": ("minimal", 0.80),
    "ASGI cold identity": ("minimal", 0.75),
    "ASGI cold gzip": ("minimal + zlib 6", 0.70),
}
SERVE_TARGET = ("uvicorn cached gzip", "bare app, same bytes", 0.85)


def render_run(rounds: int, urls: int) -> dict[str, list[float]]:
    """One run, in this process: every round's ratio for each path of `RENDER_TARGETS`."""
    import render  # the cases themselves: one definition of each path

    rows = make_rows(urls)
    references: dict[str, Callable[[], bytes]] = {
        "minimal": render.minimal(rows),
        "minimal + zlib 6": render.minimal_gzip(rows),
    }
    paths: dict[str, Callable[[], bytes]] = {
        "WSGI cold identity": render.ours_wsgi_cold_cached(rows),
        "ASGI cold identity": render.ours_asgi(rows, gzip=False, cache=render.DEFAULT),
        "ASGI cold gzip": render.ours_asgi(rows, gzip=True, cache=render.DEFAULT),
    }
    render.check(references | paths, urls)  # a warm-up, and every URL in every body
    ratios: dict[str, list[float]] = {name: [] for name in paths}
    for number in range(rounds):
        for name, path in paths.items():
            reference = references[RENDER_TARGETS[name][0]]
            if number % 2:
                mine, theirs = render.timed(path), render.timed(reference)
            else:
                theirs, mine = render.timed(reference), render.timed(path)
            ratios[name].append(theirs / mine)
    return ratios


def serve_run(seconds: int, rounds: int) -> float:
    """One run: `serve`'s cached-gzip ratio under uvicorn, on servers started for it."""
    import serve

    scenario = next(s for s in serve.SCENARIOS if s.name == "cached page, gzip")
    order = ("ours", "bare", "bare", "ours") * rounds
    with serve.Stack("uvicorn") as stack:
        [(_, _, _, paired)] = serve.measure(stack, seconds, order, [scenario])
    return paired


def _child(args: argparse.Namespace) -> dict[str, list[float]]:
    """What ``--child`` prints: one run's figures, as JSON."""
    if args.child == "render":
        return render_run(args.rounds, args.urls)
    return {SERVE_TARGET[0]: [serve_run(args.seconds, args.serve_rounds)]}


def _spawn(kind: str, args: argparse.Namespace) -> dict[str, list[float]]:
    """One run in a fresh Python process (`_child`)."""
    options = {"--rounds": args.rounds, "--urls": args.urls, "--seconds": args.seconds}
    options["--serve-rounds"] = args.serve_rounds
    command = [sys.executable, str(Path(__file__).resolve()), "--child", kind]
    command += [str(part) for option in options.items() for part in option]
    done = subprocess.run(command, check=True, capture_output=True, text=True)
    figures: dict[str, list[float]] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def verdict(name: str, against: str, target: float, runs: list[float]) -> list[str]:
    middle = statistics.median(runs)
    return [
        name,
        against,
        str(len(runs)),
        ", ".join(f"{value:.2f}" for value in runs),
        f"{middle:.2f}x",
        f"{min(runs):.2f}-{max(runs):.2f}x",
        f">= {target:.2f}x",
        f"{(middle / target - 1) * 100:+.0f}%",
        "met" if middle >= target else "not met",
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="targets", description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, help="render runs, each a fresh process (default 5)")
    parser.add_argument("--rounds", type=int, help="rounds a render run (default 21)")
    parser.add_argument("--serve-runs", type=int, help="serve runs (default 3; 0 leaves serve out)")
    parser.add_argument("--quick", action="store_true", help="2 runs of 5 rounds, 10,000 URLs; 1 serve run")
    parser.add_argument("--child", choices=("render", "serve"), help=argparse.SUPPRESS)
    parser.add_argument("--urls", type=int, default=50_000, help=argparse.SUPPRESS)
    parser.add_argument("--seconds", type=int, default=2, help=argparse.SUPPRESS)
    parser.add_argument("--serve-rounds", type=int, default=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(_child(args)))
        return
    runs = args.runs or (2 if args.quick else 5)
    args.rounds = args.rounds or (5 if args.quick else 21)
    serve_runs = args.serve_runs if args.serve_runs is not None else (1 if args.quick else 3)
    if args.quick:
        args.urls, args.seconds, args.serve_rounds = 10_000, 1, 1
    print(
        f"targets: {runs} render runs of {args.rounds} rounds ({args.urls:,} URLs), {serve_runs} serve runs; "
        f"at {revision()}; {machine()}"
    )
    per_path: dict[str, list[float]] = {name: [] for name in RENDER_TARGETS}
    for number in range(runs):
        for name, values in _spawn("render", args).items():
            per_path[name].append(statistics.median(values))
        done = ", ".join(f"{name} {values[-1]:.2f}x" for name, values in per_path.items())
        print(f"  render run {number + 1}/{runs}: {done}", file=sys.stderr)
    body = [verdict(name, *RENDER_TARGETS[name], per_path[name]) for name in RENDER_TARGETS]
    served: list[float] = []
    for number in range(serve_runs):
        [paired] = _spawn("serve", args)[SERVE_TARGET[0]]
        served.append(paired)
        print(f"  serve run {number + 1}/{serve_runs}: {paired:.2f}x", file=sys.stderr)
    if served:
        body.append(verdict(*SERVE_TARGET, served))
    headers = ["path", "against", "runs", "each run's median", "median of runs", "range", "target"]
    headers += ["margin", ""]
    print()
    print(table(headers, body))


if __name__ == "__main__":  # a child run: Python puts this folder first on its path
    main()
