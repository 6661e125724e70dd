"""Eval: one row per eval run (name, policy, adapter, scaffold, medal / valid / HumanRank), the selected run's
summary with ± SEM, and its per-environment table (tab moves into it; enter opens the episodes)."""

from __future__ import annotations

import math
import re
from collections import defaultdict

from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Footer, Static

from ..fmt import clip, fmt_cost, fmt_duration, short_id, wall_seconds
from ..runinfo import run_cost
from ..widgets.nav_bar import NavBar
from .base import BaseScreen, RunMemo, fill_table, selected_key

#: (column, width) of the runs table and the per-environment table: 80 columns each
RUN_COLUMNS = (("run", 16), ("policy", 11), ("adapter", 10), ("scaffold", 8), ("n", 3), ("medal", 5),
               ("valid", 5), ("HR", 4))
ENV_COLUMNS = (("environment", 24), ("n", 3), ("valid", 9), ("medal", 9), ("HumanRank", 9), ("score", 12))
_ADAPTER = re.compile(r"adapter=([^,]+)")
_RUN_DIR = re.compile(r"/runs/([^/]+)/")


def mean_sem(values: list[float]) -> tuple[float | None, float | None]:
    """Mean and standard error of the mean (None when there are no values; SEM 0 for one value)."""
    vals = [float(v) for v in values if v is not None]
    if not vals:
        return None, None
    m = sum(vals) / len(vals)
    if len(vals) < 2:
        return m, 0.0
    var = sum((v - m) ** 2 for v in vals) / (len(vals) - 1)
    return m, math.sqrt(var / len(vals))


def fmt_ms(pair: tuple[float | None, float | None], pct: bool = False, compact: bool = False) -> str:
    m, s = pair
    if m is None:
        return "—"
    if pct:
        return f"{m:.0%}±{s:.0%}" if compact else f"{m:.0%} ± {s:.0%}"
    return f"{m:.2f}±{s:.2f}" if compact else f"{m:.3f} ± {s:.3f}"


def fmt_mean(pair: tuple[float | None, float | None], pct: bool = False) -> str:
    m = pair[0]
    return "—" if m is None else f"{m:.0%}" if pct else f"{m:.2f}"


def fmt_score(pair: tuple[float | None, float | None]) -> str:
    m, s = pair
    return "—" if m is None else f"{m:.4g}±{s:.2g}"


def policy_label(spec: str) -> str:
    """The policy without its options: 'hf:tiny,adapter=…,temperature=0.6' → 'hf:tiny'."""
    return spec.split(",", 1)[0]


def adapter_label(spec: str) -> str:
    """The adapter of a policy spec, named by the run that trained it when it lies in a run folder."""
    found = _ADAPTER.search(spec)
    if not found:
        return ""
    path = found.group(1)
    run = _RUN_DIR.search(path + "/")
    return run.group(1) if run else path.rstrip("/").rsplit("/", 1)[-1]


def summarize(results: list[dict]) -> tuple[dict, dict[str, dict]]:
    """(overall, per env). Overall is the engine's own figure (each rate averaged over environments per seed, then
    mean ± SEM over seeds — what `sandmle eval` reports); per environment, mean ± SEM over its episodes. An invalid
    submission has HumanRank 0 (it ranks below every entry), as in the engine."""
    from engine.eval.report import aggregate

    def pair(stat: dict) -> tuple[float | None, float | None]:
        m, s = stat["mean"], stat["sem"]
        return (None, None) if m != m else (m, s)  # NaN: no rows

    overall_raw = aggregate(results)[0] if results else {}
    overall = {"n": len(results), **{k: (pair(overall_raw[src]) if results else (None, None))
                                     for k, src in (("valid", "valid"), ("medal", "any_medal"), ("gold", "gold"),
                                                    ("human_rank", "human_rank"))}}
    by_env: dict[str, list[dict]] = defaultdict(list)
    for r in results:
        by_env[r["env_id"] or "?"].append(r)
    per_env = {env: {
        "n": len(rows),
        "valid": mean_sem([1.0 if r["valid"] else 0.0 for r in rows]),
        "medal": mean_sem([1.0 if (r["gold"] or r["silver"] or r["bronze"]) else 0.0 for r in rows]),
        "human_rank": mean_sem([r["human_rank"] if r["human_rank"] is not None else 0.0 for r in rows]),
        "score": mean_sem([r["score"] for r in rows]),
    } for env, rows in sorted(by_env.items())}
    return overall, per_env


class EvalScreen(BaseScreen):
    LABEL = "Eval"

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.memo = RunMemo()
    BINDINGS = [
        Binding("enter", "episodes", "Episodes", id="eval.open", priority=True,
                tooltip="The run's episodes turn by turn (on an environment: that environment's)"),
        Binding("tab", "app.focus_next", "Next table", show=False, id="eval.next_table"),
    ]

    def compose(self) -> ComposeResult:
        yield NavBar("eval")
        yield DataTable(id="eval-runs", cursor_type="row", zebra_stripes=True)
        yield Static("", id="eval-summary", classes="summary")
        yield DataTable(id="eval-results", cursor_type="row", zebra_stripes=True, classes="main-table")
        yield Footer()

    def on_mount(self) -> None:
        for table, columns in ((self.runs_table, RUN_COLUMNS), (self.results_table, ENV_COLUMNS)):
            for label, width in columns:
                table.add_column(label, width=width)
        self.refresh_data()
        self.runs_table.focus()
        self.ready = True

    @property
    def runs_table(self) -> DataTable:
        return self.query_one("#eval-runs", DataTable)

    @property
    def results_table(self) -> DataTable:
        return self.query_one("#eval-results", DataTable)

    def reload(self) -> None:
        keep = selected_key(self.runs_table)
        self.runs = {r["id"]: r for r in self.store.runs.list(kind="eval", limit=200)}
        rows = []
        for key, r in self.runs.items():
            cfg = r.get("config") or {}
            spec = cfg.get("policy_spec") or cfg.get("policy") or ""
            overall, _ = self.summary(r)
            rows.append((key, (short_id(r["name"] or key, RUN_COLUMNS[0][1]), clip(policy_label(spec), RUN_COLUMNS[1][1]),
                               short_id(adapter_label(spec), 10) or "—", cfg.get("scaffold", ""), overall["n"],
                               fmt_mean(overall["medal"], True), fmt_mean(overall["valid"], True),
                               fmt_mean(overall["human_rank"]))))
        fill_table(self.runs_table, rows, keep)
        self.show_selected()

    def summary(self, run: dict) -> tuple[dict, dict[str, dict]]:
        """``summarize`` of the run's results, computed again only when the run changed."""
        return self.memo.get(run, lambda: summarize(self.store.runs.eval_results(run["id"])))

    def show_selected(self) -> None:
        key = selected_key(self.runs_table)
        summary = self.query_one("#eval-summary", Static)
        if key is None:
            summary.update("no eval runs yet · launch one from Training (4, then l, kind eval)")
            self.results_table.clear()
            return
        run = self.runs[key]
        overall, per_env = self.summary(run)
        cost = fmt_cost(run_cost(self.store, run))
        summary.update(
            f"[b]{run['name'] or key}[/b] · {run['status']} · {overall['n']} episodes · "
            f"wall {fmt_duration(wall_seconds(run))}" + (f" · {cost}" if cost else "") + "\n"
            f"medal {fmt_ms(overall['medal'], True)} · gold {fmt_ms(overall['gold'], True)} · "
            f"valid {fmt_ms(overall['valid'], True)} · HumanRank {fmt_ms(overall['human_rank'])}")
        fill_table(self.results_table, [
            (env, (short_id(env, ENV_COLUMNS[0][1]), f["n"], fmt_ms(f["valid"], True, compact=True),
                   fmt_ms(f["medal"], True, compact=True), fmt_ms(f["human_rank"], compact=True),
                   fmt_score(f["score"]))) for env, f in per_env.items()], selected_key(self.results_table))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table.id == "eval-runs":
            self.show_selected()

    def action_episodes(self) -> None:
        key = selected_key(self.runs_table)
        if key is None:
            return
        from .trajectories import TrajectoriesScreen

        env = selected_key(self.results_table) if self.results_table.has_focus else None
        self.app.push_screen(TrajectoriesScreen(run_id=key, env_id=env))
