"""Live training curves drawn in the terminal (textual-plotext): every metric a run logs, a few related ones per
view (rates, loss, KL, grad norm, clip fraction, step time, skipped groups, then any other metric on its own),
steps on the x axis as integers."""

from __future__ import annotations

from textual_plotext import PlotextPlot

#: view → the metrics drawn together, in order (a view shows when the run logged at least one of them)
VIEWS: dict[str, tuple[str, ...]] = {
    "rates": ("reward_mean", "medal_rate", "valid_rate", "rank"),
    "loss": ("loss", "pg_loss"),
    "KL": ("kl",),
    "grad norm": ("grad_norm",),
    "clip fraction": ("clip_fraction",),
    "step time": ("step_s", "rollout_s", "update_s"),
    "skipped groups": ("skipped_groups", "timed_out", "overlong", "stale", "groups"),
    "sampler mismatch": ("sampler_logp_diff", "sampler_kl", "tis_capped"),
}
COLOURS = ("cyan", "yellow", "green", "magenta", "red", "blue")
MAX_POINTS = 240  # a terminal is at most a few hundred braille dots wide: thin long series before drawing
MAX_TICKS = 6


def thin(points: list[tuple[int, float]], limit: int = MAX_POINTS) -> list[tuple[int, float]]:
    """Every k-th point (first and last kept) so that at most ``limit`` remain."""
    if len(points) <= limit:
        return points
    step = -(-len(points) // limit)
    out = points[::step]
    return out if out[-1] == points[-1] else out + [points[-1]]


def integer_ticks(first: int, last: int, most: int = MAX_TICKS) -> list[int]:
    """At most ``most`` whole-number ticks from ``first`` to ``last`` (both kept), evenly spaced."""
    if last <= first:
        return [first]
    every = -(-(last - first) // (most - 1))
    ticks = list(range(first, last, every))
    if len(ticks) > 1 and last - ticks[-1] < every / 2:
        ticks.pop()  # too close to the last step to label both
    return ticks + [last]


def views_for(names: set[str]) -> dict[str, tuple[str, ...]]:
    """The views that have something to draw for a run that logged ``names``: the grouped ones, then one per
    remaining metric."""
    grouped = {view: tuple(n for n in members if n in names) for view, members in VIEWS.items()}
    out = {view: members for view, members in grouped.items() if members}
    taken = {n for members in VIEWS.values() for n in members}
    out.update({name: (name,) for name in sorted(names - taken)})
    return out


class MetricCurves(PlotextPlot):
    """``show(series)`` redraws from ``{name: [(step, value), …]}``; ``cycle_view`` moves to the next view."""

    DEFAULT_CSS = "MetricCurves { height: 1fr; min-height: 8; }"

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.series: dict[str, list[tuple[int, float]]] = {}
        self.view = "rates"
        self.plot_title = ""

    def views(self) -> dict[str, tuple[str, ...]]:
        return views_for({n for n, pts in self.series.items() if pts})

    def names(self) -> list[str]:
        """The curves drawn in the current view (those with at least one point)."""
        return list(self.views().get(self.view, ()))

    def show(self, series: dict[str, list[tuple[int, float]]], title: str = "") -> None:
        self.series = {k: [(int(s), v) for s, v in pts if v is not None] for k, pts in series.items()}
        self.plot_title = title
        views = self.views()
        if views and self.view not in views:
            self.view = next(iter(views))
        self.redraw()

    def cycle_view(self) -> str:
        views = list(self.views()) or [self.view]
        self.view = views[(views.index(self.view) + 1) % len(views)] if self.view in views else views[0]
        self.redraw()
        return self.view

    def redraw(self) -> None:
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        names = self.names()
        plt.title(f"{self.plot_title} · {self.view} (m: next)" if self.plot_title else self.view)
        plt.xlabel("step")
        if not names:
            plt.title(f"{self.plot_title} · no points yet" if self.plot_title else "no run selected")
        steps_seen: list[int] = []
        for name, colour in zip(names, COLOURS):
            steps, values = zip(*thin(self.series[name]))
            steps_seen += steps
            plt.plot(list(steps), list(values), label=name, color=colour, marker="braille")
        if steps_seen:
            ticks = integer_ticks(min(steps_seen), max(steps_seen))
            plt.xticks(ticks, [str(t) for t in ticks])
        if self.view == "rates" and names:
            plt.ylim(0, 1)
        self.refresh()
