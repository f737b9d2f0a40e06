"""chart: the PNG beside benchmarks/README.md's table, drawn from one `render` run.

    python benchmarks/run.py render --rounds 5 --chart benchmarks/render.png

One horizontal bar per renderer, its speed in URLs a second (median round) and its multiple
of django.contrib.sitemaps' written beside it; ours in one colour, the peers in another,
the hand-rolled ceiling in grey. The commit and the machine line (with its load average)
go under the title, so the picture says where it came from. matplotlib draws it with the
Agg backend: no display needed (benchmarks/requirements.txt brings matplotlib).
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from pathlib import Path

OURS = "#1f6fb4"
PEER = "#d9822b"
CEILING = "#8c8c8c"


def colour(name: str) -> str:
    if name.startswith("ours"):
        return OURS
    return CEILING if "ceiling" in name else PEER


def render_chart(
    path: str | Path, speeds: Mapping[str, float], *, reference: str, title: str, note: str
) -> None:
    """Write a bar chart of ``speeds`` (label -> URLs/s, drawn top to bottom) to ``path``;
    each bar says its multiple of ``speeds[reference]`` when that is among them."""
    import matplotlib

    matplotlib.use("Agg")  # headless: the benchmarks run on servers without a display
    import matplotlib.pyplot as plt

    names = list(speeds)
    values = [speeds[name] for name in names]
    base = speeds.get(reference)
    figure, axes = plt.subplots(figsize=(10, 0.5 * len(names) + 1.6), dpi=100)
    positions = range(len(names))
    axes.barh(positions, values, color=[colour(name) for name in names])
    axes.set_yticks(list(positions), names)
    axes.invert_yaxis()  # the first renderer on top, as in the table
    axes.set_xlabel("URLs rendered per second (median round; longer is faster)")
    axes.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda x, _: f"{x / 1000:,.0f}k"))
    axes.set_xlim(0, max(values) * 1.3)
    for position, value in zip(positions, values, strict=True):
        label = f"{value:,.0f}" + (f"  ({value / base:.1f}x Django)" if base else "")
        axes.text(value, position, "  " + label, va="center", fontsize=9)
    axes.spines[["top", "right"]].set_visible(False)
    axes.set_title("\n".join([title, *textwrap.wrap(note, 95)]), fontsize=10, loc="left")
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)
