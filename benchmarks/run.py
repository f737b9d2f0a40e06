"""Run one benchmark by name: ``python benchmarks/run.py NAME [--quick]`` (NAME: see `BENCHMARKS`).

Or through tox: ``tox -e bench -- render --quick``. Every benchmark prints Markdown tables
(they paste into benchmarks/README.md) and takes ``--help``. None of them runs in the test
suite: they need minutes, real servers and wrk.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

BENCHMARKS = (
    "render",
    "serve",
    "memory",
    "index",
    "load",
    "fleet",
    "keyset",
    "changelog",
    "changelog_redis",
    "audit",
    "targets",
)


def main(argv: list[str]) -> None:
    if not argv or argv[0] not in BENCHMARKS:
        sys.exit(f"usage: python benchmarks/run.py {{{'|'.join(BENCHMARKS)}}} [--quick] [options]")
    here = str(Path(__file__).resolve().parent)
    if here not in sys.path:
        sys.path.insert(0, here)
    module = importlib.import_module(argv[0])
    module.main(argv[1:])


if __name__ == "__main__":
    main(sys.argv[1:])
