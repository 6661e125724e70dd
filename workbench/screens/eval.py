"""Eval: results per run and per environment — score, valid rate, medal rate and HumanRank with ± SEM."""

from __future__ import annotations

import math
from collections import defaultdict

from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Footer, Static

from ..jobs import LAUNCHER
from ..widgets.nav_bar import NavBar
from .base import BaseScreen, fill_table, fmt_time, selected_key


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


def fmt_ms(pair: tuple[float | None, float | None], pct: bool = False) -> str:
    m, s = pair
    if m is None:
        return "—"
    return f"{m:.0%} ± {s:.0%}" if pct else f"{m:.3f} ± {s:.3f}"


def summarize(results: list[dict]) -> tuple[dict, dict[str, dict]]:
    """(overall, per env). Overall is the engine's own figure (each rate averaged over environments per seed, then
    mean ± SEM over seeds — what `sandmle eval` reports); per environment, mean ± SEM over its episodes. An invalid
    submission has HumanRank 0 (it ranks below every entry), as in the engine."""
    from engine.eval.run import aggregate

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
    BINDINGS = [
        Binding("tab", "focus_next", "Next table", show=False, id="eval.next_table"),
        Binding("r", "reload", "Refresh", id="eval.refresh"),
    ]

    def compose(self) -> ComposeResult:
        yield NavBar("eval")
        yield DataTable(id="eval-runs", cursor_type="row", zebra_stripes=True, classes="short-table")
        yield Static("", id="eval-summary", classes="summary")
        yield DataTable(id="eval-results", cursor_type="row", zebra_stripes=True, classes="main-table")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#eval-runs", DataTable).add_columns("run", "status", "policy", "results", "started")
        self.query_one("#eval-results", DataTable).add_columns(
            "environment", "n", "valid", "medal rate", "HumanRank", "score")
        self.reload()
        self.query_one("#eval-runs", DataTable).focus()
        self.ready = True

    def reload(self) -> None:
        table = self.query_one("#eval-runs", DataTable)
        keep = selected_key(table)
        runs = [r for r in self.store.runs.list(kind="eval", limit=200)
                if (r.get("config") or {}).get("launcher") != LAUNCHER]
        self.results = {r["id"]: self.store.runs.eval_results(r["id"]) for r in runs}
        fill_table(table, [(r["id"], (r["id"][:16], r["status"], (r.get("config") or {}).get("policy", ""),
                                      len(self.results[r["id"]]), fmt_time(r["created_at"]))) for r in runs], keep)
        self.show_selected()

    def action_reload(self) -> None:
        self.reload()

    def show_selected(self) -> None:
        key = selected_key(self.query_one("#eval-runs", DataTable))
        summary = self.query_one("#eval-summary", Static)
        table = self.query_one("#eval-results", DataTable)
        if key is None:
            summary.update("no eval runs yet · launch one from Training (4, then l, kind eval)")
            table.clear()
            return
        overall, per_env = summarize(self.results.get(key, []))
        summary.update(f"[b]{key}[/b] · {overall['n']} episodes · medal rate {fmt_ms(overall['medal'], True)} · "
                       f"gold {fmt_ms(overall['gold'], True)} · HumanRank {fmt_ms(overall['human_rank'])} · "
                       f"valid {fmt_ms(overall['valid'], True)} (± SEM over seeds; per environment over episodes)")
        fill_table(table, [(env, (env[:22], f["n"], fmt_ms(f["valid"], True), fmt_ms(f["medal"], True),
                                  fmt_ms(f["human_rank"]), fmt_ms(f["score"]))) for env, f in per_env.items()])

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table.id == "eval-runs":
            self.show_selected()
