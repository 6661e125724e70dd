"""Line plots the benchmarks write beside their result files (GRPO curves over steps)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path


def line_plot(series: Mapping[str, Sequence[tuple[float, float]]], path: Path, *, title: str, ylabel: str | None = None,
              hline: tuple[float, str] | None = None) -> Path:
    """One line per ``label -> [(step, value)]`` on a 0..1 axis over GRPO steps (``hline``: a dashed reference
    ``(value, label)``), saved as the PNG ``path``."""
    import matplotlib  # heavy optional dependency (plots only)

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # heavy optional dependency

    fig, ax = plt.subplots(figsize=(6.4, 3.6), dpi=110)
    for label, points in series.items():
        ax.plot([x for x, _ in points], [y for _, y in points], marker="o", ms=3, label=label)
    if hline is not None:
        ax.axhline(hline[0], color="grey", ls="--", lw=1, label=hline[1])
    ax.set_xlabel("GRPO step")
    if ylabel:
        ax.set_ylabel(ylabel)
    ax.set_ylim(-0.02, 1.02)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path
