"""Live training curves drawn in the terminal (textual-plotext): reward mean, medal rate, valid rate, loss."""

from __future__ import annotations

from textual_plotext import PlotextPlot

#: the curves shown, in order, with their plotext colours
CURVES = {"reward_mean": "cyan", "medal_rate": "yellow", "valid_rate": "green", "loss": "red"}
VIEWS = ("rates", "loss", "all")
MAX_POINTS = 240  # a terminal is at most a few hundred braille dots wide: thin long series before drawing


def thin(points: list[tuple[int, float]], limit: int = MAX_POINTS) -> list[tuple[int, float]]:
    """Every k-th point (first and last kept) so that at most ``limit`` remain."""
    if len(points) <= limit:
        return points
    step = -(-len(points) // limit)
    out = points[::step]
    return out if out[-1] == points[-1] else out + [points[-1]]


class MetricCurves(PlotextPlot):
    """``show(series)`` redraws from ``{name: [(step, value), …]}``; ``view`` picks rates (0–1), loss, or all."""

    DEFAULT_CSS = "MetricCurves { height: 1fr; min-height: 8; }"

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.series: dict[str, list[tuple[int, float]]] = {}
        self.view = "rates"
        self.plot_title = ""

    def names(self) -> list[str]:
        """The curves drawn in the current view (those with at least one point)."""
        wanted = {"rates": [n for n in CURVES if n != "loss"], "loss": ["loss"], "all": list(CURVES)}[self.view]
        return [n for n in wanted if self.series.get(n)]

    def points(self) -> int:
        return sum(len(v) for v in self.series.values())

    def show(self, series: dict[str, list[tuple[int, float]]], title: str = "") -> None:
        self.series = {k: [(s, v) for s, v in pts if v is not None] for k, pts in series.items()}
        self.plot_title = title
        self.redraw()

    def cycle_view(self) -> str:
        self.view = VIEWS[(VIEWS.index(self.view) + 1) % len(VIEWS)]
        self.redraw()
        return self.view

    def redraw(self) -> None:
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        names = self.names()
        plt.title(f"{self.plot_title} · {self.view}" if self.plot_title else self.view)
        plt.xlabel("step")
        if not names:
            plt.title(f"{self.plot_title} · no {self.view} points yet" if self.plot_title else "no run selected")
        for name in names:
            steps, values = zip(*thin(self.series[name]))
            plt.plot(list(steps), list(values), label=name, color=CURVES[name], marker="braille")
        if self.view == "rates" and names:
            plt.ylim(0, 1)
        self.refresh()
