"""Eval: one row per eval run (name, policy, adapter, scaffold, medal / valid / rank on the board), the selected run's
summary with ± SEM, and its per-environment table (tab moves into it; enter opens the episodes). ``c`` on two runs
compares them; beside the paired difference, the best constant strategy and the per-task oracle on the same
environments when they are cached (looked up in a thread: it reads and hashes the environments' files)."""

from __future__ import annotations

import re

from rich.markup import escape
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Footer, Static

from engine.errors import SandmleError
from engine.eval.compare import compare
from engine.eval.constants import cached_best
from engine.eval.report import RATE, RATE_NAMES, aggregate, left_out, rank_label, results_only, spread_by_env

from ..fmt import clip, fmt_cost, fmt_duration, short_id, wall_seconds
from ..runinfo import run_cost
from ..widgets.nav_bar import NavBar
from .base import BaseScreen, RunMemo, fill_table, selected_key
from .trajectories import TrajectoriesScreen

#: (column, width) of the runs table and the per-environment table: 80 columns each
RUN_COLUMNS = (("run", 16), ("policy", 11), ("adapter", 10), ("scaffold", 8), ("n", 3), ("medal", 5),
               ("valid", 5), ("rank", 4))
ENV_COLUMNS = (("environment", 24), ("n", 3), ("valid", 9), ("medal", 9), ("rank", 9), ("score", 12))
COMPARE_COLUMNS = (("environment", 24), ("pairs", 5), ("A", 6), ("B", 6), ("B − A", 7), ("95% interval", 16))
#: the rates `c` compares (m cycles): the engine's, in its order
COMPARED = RATE_NAMES
_ADAPTER = re.compile(r"adapter=([^,]+)")
_RUN_DIR = re.compile(r"/runs/([^/]+)/")


def fmt_ms(pair: tuple[float | None, float | None], pct: bool = False, compact: bool = False) -> str:
    """Mean ± SEM; n/a where the rate applies to no episode (medals and the rank need a leaderboard)."""
    m, s = pair
    if m is None:
        return "n/a"
    if pct:
        return f"{m:.0%}±{s:.0%}" if compact else f"{m:.0%} ± {s:.0%}"
    return f"{m:.2f}±{s:.2f}" if compact else f"{m:.3f} ± {s:.3f}"


def fmt_mean(pair: tuple[float | None, float | None], pct: bool = False) -> str:
    m = pair[0]
    return "n/a" if m is None else f"{m:.0%}" if pct else f"{m:.2f}"


def fmt_value(value: float, pct: bool) -> str:
    return f"{value:.0%}" if pct else f"{value:.2f}"


def fmt_diff(value: float, pct: bool) -> str:
    return f"{value * 100:+.0f}pp" if pct else f"{value:+.2f}"


def fmt_interval(interval, pct: bool) -> str:
    return f"[{fmt_diff(interval.low, pct)}, {fmt_diff(interval.high, pct)}]"


def fmt_score(pair: tuple[float | None, float | None]) -> str:
    m, s = pair
    return "—" if m is None else f"{m:.4g}±{s:.2g}"


def policy_label(spec: str) -> str:
    """The policy without its options: 'hf:tiny,adapter=…,temperature=0.6' → 'hf:tiny'."""
    return spec.split(",", 1)[0]


def policy_cell(spec: str, width: int) -> str:
    """The policy in a column: its model alone when kind and model do not both fit ('anthropic:claude-haiku-4-5'
    → 'claude-haik…'); the summary line shows it in full."""
    label = policy_label(spec)
    return clip(label if len(label) <= width else label.split(":", 1)[-1], width)


def adapter_label(spec: str) -> str:
    """The adapter of a policy spec, named by the run that trained it when it lies in a run folder."""
    found = _ADAPTER.search(spec)
    if not found:
        return ""
    path = found.group(1)
    run = _RUN_DIR.search(path + "/")
    return run.group(1) if run else path.rstrip("/").rsplit("/", 1)[-1]


def summarize(results: list[dict]) -> tuple[dict, dict[str, dict]]:
    """(overall, per env), as the engine reports them: overall, each rate averaged over environments per seed, then
    mean ± SEM over seeds (what `sandmle eval` reports); per environment, mean ± SEM over its episodes
    (:func:`engine.eval.report.spread_by_env`). Medals and the rank of a competition without a leaderboard are
    n/a; episodes that could not run (an ``error``) are counted apart. The rank is named for its boards
    (``rank_label``: HumanRank on real leaderboards, else the rank among N reference solutions)."""
    ran = results_only(results)
    summary = aggregate(ran)[0] if ran else {}

    def pair(stat: dict | None) -> tuple[float | None, float | None]:
        m = (stat or {}).get("mean")
        return (None, None) if m is None or m != m else (m, stat["sem"])  # None / NaN: nothing to average

    overall = {"n": len(ran), "errors": len(results) - len(ran), "no_board": left_out(ran)["episodes"],
               "valid": pair(summary.get("valid")), "medal": pair(summary.get("any_medal")),
               "gold": pair(summary.get("gold")), "rank": pair(summary.get("rank")),
               "rank_label": rank_label(ran)}
    per_env = {env: {"n": f["n"], "valid": pair(f["valid"]), "medal": pair(f["any_medal"]),
                     "rank": pair(f["rank"]), "score": pair(f["score"])}
               for env, f in spread_by_env(ran).items()}
    return overall, per_env


class EvalScreen(BaseScreen):
    LABEL = "Eval"

    BINDINGS = [
        Binding("enter", "episodes", "Episodes", id="eval.open", priority=True,
                tooltip="The run's episodes turn by turn (on an environment: that environment's)"),
        Binding("c", "compare", "Compare", id="eval.compare",
                tooltip="Mark this run as A; on another run: B − A per environment with 95% intervals"),
        Binding("m", "cycle_rate", "Metrics", id="eval.rate", tooltip="The rate compared (medal, valid, rank…)"),
        Binding("escape", "leave_compare", "Leave compare", show=False, id="eval.leave_compare"),
        Binding("tab", "app.focus_next", "Next table", show=False, id="eval.next_table"),
    ]

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.mark: str | None = None  #: run A of a comparison (chosen with c)
        self.versus: str | None = None  #: run B, once chosen
        self.rate = COMPARED[0]
        self.memo = RunMemo()
        #: the comparison on screen: (run A, run B, its environments), and its first lines
        self.compared: tuple[str, str, tuple[str, ...]] | None = None
        self.compare_head = ""
        #: the constants line of each comparison looked up so far (kept while it is looked up again)
        self.constants_lines: dict[tuple[str, str, tuple[str, ...]], str] = {}

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
        self.show_first(self.runs_table)

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
            rows.append((key, (short_id(r["name"] or key, RUN_COLUMNS[0][1]), policy_cell(spec, RUN_COLUMNS[1][1]),
                               short_id(adapter_label(spec), 10) or "—", cfg.get("scaffold", ""), overall["n"],
                               fmt_mean(overall["medal"], True), fmt_mean(overall["valid"], True),
                               fmt_mean(overall["rank"]))))
        fill_table(self.runs_table, rows, keep)
        self.show_selected()

    def summary(self, run: dict) -> tuple[dict, dict[str, dict]]:
        """``summarize`` of the run's results, computed again only when the run changed."""
        return self.memo.get(run, lambda: summarize(self.store.runs.eval_results(run["id"])))

    def show_selected(self) -> None:
        if self.versus is not None:
            self.show_comparison()
            return
        key = selected_key(self.runs_table)
        summary = self.query_one("#eval-summary", Static)
        if key is None:
            summary.update("no eval runs yet · launch one from Training (4, then l, kind eval)")
            self.results_table.clear()
            return
        run = self.runs[key]
        overall, per_env = self.summary(run)
        cost = fmt_cost(run_cost(self.store, run))
        cfg = run.get("config") or {}
        summary.update(
            f"[b]{escape(run['name'] or key)}[/b] · {escape(policy_label(cfg.get('policy_spec') or cfg.get('policy') or '?'))}"
            f" · {run['status']} · {overall['n']} episodes · "
            f"wall {fmt_duration(wall_seconds(run))}" + (f" · {cost}" if cost else "") + "\n"
            f"medal {fmt_ms(overall['medal'], True)} · gold {fmt_ms(overall['gold'], True)} · "
            f"valid {fmt_ms(overall['valid'], True)} · rank {fmt_ms(overall['rank'])}"
            + (f"\nrank: {escape(overall['rank_label'].removeprefix('rank '))}"
               if overall["rank_label"] not in ("rank", "rank on the board") else "")
            + (f"\nmedals and the rank leave out {overall['no_board']} episode(s) without a leaderboard"
               if overall["no_board"] else "")
            + (f"\n[red]{overall['errors']} episode(s) could not run[/]: not counted (`sandmle runs resume` "
               f"retries them)" if overall["errors"] else "")
            + (f"\n[yellow]A = {escape(self.runs[self.mark]['name'] or self.mark)}: c on another run compares "
               f"(esc: cancel)[/]" if self.mark in self.runs else ""))
        self.set_columns(ENV_COLUMNS)
        fill_table(self.results_table, [
            (env, (short_id(env, ENV_COLUMNS[0][1]), f["n"], fmt_ms(f["valid"], True, compact=True),
                   fmt_ms(f["medal"], True, compact=True), fmt_ms(f["rank"], compact=True),
                   fmt_score(f["score"]))) for env, f in per_env.items()], selected_key(self.results_table))

    def set_columns(self, columns: tuple[tuple[str, int], ...]) -> None:
        """The per-environment table's columns: the run's results, or a comparison's."""
        table = self.results_table
        if [c.label.plain for c in table.columns.values()] != [label for label, _ in columns]:
            table.clear(columns=True)
            for label, width in columns:
                table.add_column(label, width=width)

    def show_comparison(self) -> None:
        """B − A of the chosen rate per environment and overall (the engine's ``eval compare``)."""
        a, b = self.runs.get(self.mark), self.runs.get(self.versus)
        summary = self.query_one("#eval-summary", Static)
        self.set_columns(COMPARE_COLUMNS)
        if a is None or b is None:
            self.action_leave_compare()
            return
        try:
            cmp = compare(self.store, a["id"], b["id"], rate=self.rate)
        except SandmleError as exc:
            summary.update(f"[red]{escape(str(exc))}[/] · esc: leave compare")
            self.results_table.clear()
            return
        pct = RATE[self.rate].percent
        left = (f" · only in one run: {len(cmp.only_a) + len(cmp.only_b)} env(s)" if cmp.only_a or cmp.only_b else "")
        self.compare_head = (
            f"[b]{escape(b['name'] or b['id'])}[/b] − [b]{escape(a['name'] or a['id'])}[/b] · "
            f"{RATE[self.rate].label} · m: next rate · esc: leave\n"
            f"overall [b]{fmt_diff(cmp.diff, pct)}[/b] (95% {fmt_interval(cmp.interval, pct)}) over {cmp.n_pairs} "
            f"paired episodes in {len(cmp.per_env)} env(s){left}")
        self.compared = (a["id"], b["id"], tuple(e.env_id for e in cmp.per_env))
        self.show_compare_summary()
        self.look_up_constants(self.compared)
        fill_table(self.results_table, [
            (e.env_id, (short_id(e.env_id, COMPARE_COLUMNS[0][1]), e.n_pairs, fmt_value(e.a, pct), fmt_value(e.b, pct),
                        fmt_diff(e.diff, pct), fmt_interval(e.interval, pct))) for e in cmp.per_env],
            selected_key(self.results_table))

    def show_compare_summary(self) -> None:
        """The comparison's lines and, beside the paired difference, its constants line (once looked up)."""
        line = self.constants_lines.get(self.compared) if self.compared else None
        self.query_one("#eval-summary", Static).update(
            self.compare_head + "\n" + (line or "[dim]best constant: looking in the cache…[/]"))

    @work(thread=True, exclusive=True, group="eval-constants")
    def look_up_constants(self, key: tuple[str, str, tuple[str, ...]]) -> None:
        """The best constant strategy and the per-task oracle on the compared environments, from the cache of
        ``sandmle eval constants`` (never computed here); when one is not cached, how to compute them."""
        try:
            best = cached_best(self.store, key[2])
        except Exception:  # noqa: BLE001 - a cache that cannot be read is one not computed; the screen stays up
            best = None
        if best is None:
            line = f"best constant: not computed · sandmle eval constants --run {escape(key[1])}"
        else:
            line = (f"best constant {escape(best['best_constant_strategy'])}: medal "
                    f"[b]{best['best_constant_medal']:.0%}[/b] · per-task oracle {best['oracle_medal']:.0%}")
        self.app.call_from_thread(self.constants_found, key, line)

    def constants_found(self, key: tuple[str, str, tuple[str, ...]], line: str) -> None:
        self.constants_lines[key] = line
        if self.versus is not None and key == self.compared:
            self.show_compare_summary()

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table.id == "eval-runs" and self.versus is None:
            self.show_selected()

    def action_compare(self) -> None:
        key = selected_key(self.runs_table)
        if key is None:
            return
        if self.mark is None or self.mark == key or self.versus is not None:
            self.mark, self.versus = key, None
            self.show_selected()
            return
        self.versus = key
        self.show_selected()

    def action_cycle_rate(self) -> None:
        self.rate = COMPARED[(COMPARED.index(self.rate) + 1) % len(COMPARED)]
        if self.versus is not None:
            self.show_comparison()
        self.notify(f"compared rate: {RATE[self.rate].label}", timeout=2)

    def action_leave_compare(self) -> None:
        self.mark = self.versus = None
        self.compared = None
        self.show_selected()

    def action_episodes(self) -> None:
        key = selected_key(self.runs_table)
        if key is None:
            return
        env = selected_key(self.results_table) if self.results_table.has_focus else None
        self.app.push_screen(TrajectoriesScreen(run_id=key, env_id=env))
