"""Training: SFT and GRPO runs (those started here too), curves of every metric a run logs, a launch form, stop
(asks first) and resume, and the rollouts of a run (turn by turn; two of one group side by side)."""

from __future__ import annotations

from rich.markup import escape
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Footer, Static

from ..fmt import fmt_cost, fmt_duration, short_id, wall_seconds
from ..jobs import build_argv, pid_alive, resolve_command, stop_pid
from ..runinfo import run_cost
from ..widgets.metric_curves import MetricCurves
from ..widgets.nav_bar import NavBar
from .base import BaseScreen, RunMemo, fill_table, run_cli_quick, selected_key
from .confirm import ConfirmScreen
from .launch_form import COMMANDS, LaunchFormScreen, load_last, run_defaults, save_last
from .trajectories import TrajectoriesScreen

KINDS = ("grpo", "sft", "rollout")


def last_value(series: dict, name: str) -> str:
    pts = series.get(name) or []
    return f"{pts[-1][1]:.3f}" if pts and pts[-1][1] is not None else ""


class TrainingScreen(BaseScreen):
    LABEL = "Training"
    BINDINGS = [
        Binding("enter", "trajectories", "Rollouts", id="training.open", priority=True,
                tooltip="The run's rollouts, turn by turn"),
        Binding("l", "launch", "Launch", id="training.launch", tooltip="Launch SFT, GRPO or eval (form)"),
        Binding("s", "stop", "Stop", id="training.stop", tooltip="Stop the selected run (asks first)"),
        Binding("R", "resume", "Resume", id="training.resume", tooltip="Resume from the last checkpoint"),
        Binding("m", "cycle_curves", "Metrics", id="training.curves", tooltip="The next group of curves"),
    ]

    def compose(self) -> ComposeResult:
        yield NavBar("training")
        yield DataTable(id="runs-table", cursor_type="row", zebra_stripes=True, classes="short-table")
        yield Static("", id="run-info", classes="info-line")
        yield MetricCurves(id="run-curves")
        yield Footer()

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.memo = RunMemo()

    def on_mount(self) -> None:
        self.table.add_columns("run", "kind", "status", "step", "reward", "medal", "valid", "wall")
        self._points = -1
        self.show_first(self.table)

    @property
    def table(self) -> DataTable:
        return self.query_one("#runs-table", DataTable)

    @property
    def curves(self) -> MetricCurves:
        return self.query_one("#run-curves", MetricCurves)

    def training_runs(self) -> list[dict]:
        runs = [r for kind in KINDS for r in self.store.runs.list(kind=kind, limit=200)]
        return sorted(runs, key=lambda r: r["created_at"], reverse=True)

    def reload(self) -> None:
        keep = selected_key(self.table)
        self.runs = {r["id"]: r for r in self.training_runs()}
        rows = []
        for r in self.runs.values():
            series, step = self.memo.get(r, lambda r=r: (
                self.store.runs.metrics(r["id"], ["reward_mean", "medal_rate", "valid_rate"]),
                self.store.runs.last_step(r["id"])))
            total = (r.get("config") or {}).get("steps")
            rows.append((r["id"], (short_id(r["id"], 16), r["kind"], r["status"],
                                   f"{step or 0}/{total}" if total else (step or ""),
                                   last_value(series, "reward_mean"), last_value(series, "medal_rate"),
                                   last_value(series, "valid_rate"), fmt_duration(wall_seconds(r)))))
        fill_table(self.table, rows, keep)
        self._points = -1
        self.show_selected()

    def selected_run(self) -> dict | None:
        key = selected_key(self.table)
        return self.runs.get(key) if key else None

    def show_selected(self) -> None:
        run = self.selected_run()
        info = self.query_one("#run-info", Static)
        if run is None:
            info.update("no training runs yet · l: launch a run")
            if self._points != 0:
                self.curves.show({}, "")
                self._points = 0
            return
        ckpt = self.store.runs.latest_checkpoint(run["id"])
        cfg = run.get("config") or {}
        envs = f"{len(cfg['env_ids'])} envs" if cfg.get("env_ids") else f"split {cfg.get('env_split', '?')}"
        cost = fmt_cost(run_cost(self.store, run))
        points = self.store.runs.metric_points(run["id"])
        if points != self._points:
            self._points = points
            self.curves.show(self.store.runs.metrics(run["id"]), short_id(run["id"], 16))
        info.update(self.warning(run)
                    + f"{run['id']} · {run['status']} · {cfg.get('model', cfg.get('policy', '?'))}"
                    + (" + adapter" if cfg.get("adapter") else "") + f" · {envs} · G {cfg.get('group_size', '-')} · "
                    f"ckpt {('step ' + str(ckpt['step'])) if ckpt else '—'} · wall {fmt_duration(wall_seconds(run))}"
                    + (f" · {cost}" if cost else "") + (f" · [red]{run['error'][:60]}[/]" if run.get("error") else ""))

    def warning(self, run: dict) -> str:
        """The info line's prefix when GRPO saw a collapse: the last step its ``collapse`` metric flagged (live, while
        the run goes on; the full warning is in the run's output and, once it ended, its summary)."""
        flagged = [step for step, value in self.curves.series.get("collapse", []) if value]
        if flagged:
            return f"[yellow]⚠ possible collapse at step {flagged[-1]}[/] · "
        warnings = (run.get("summary") or {}).get("warnings") or []
        return f"[yellow]⚠ {escape(str(warnings[-1]))}[/] · " if warnings else ""

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._points = -1
        self.show_selected()

    def action_cycle_curves(self) -> None:
        self.notify(f"curves: {self.curves.cycle_view()}", timeout=2)

    def action_launch(self) -> None:
        last = load_last(self.store.data_dir)
        kind = last.pop("kind", "grpo")
        defaults = {**last, **run_defaults(self.selected_run())}

        def done(result: dict | None) -> None:
            if not result:
                return
            values = result["values"]
            save_last(self.store.data_dir, result["kind"], values)
            self.app.launch_job(result["kind"], result["argv"], f"{result['kind']} {values.get('model', '')} "
                                f"× {values.get('steps', '?')} steps")
            if result["ignored"]:
                self.notify(f"not accepted by `sandmle {' '.join(COMMANDS[result['kind']])}`: "
                            f"{', '.join(result['ignored'])}", severity="warning", timeout=8)

        self.app.push_screen(LaunchFormScreen(kind, defaults), done)

    def action_stop(self) -> None:
        run = self.selected_run()
        if run is None or run["status"] != "running":
            self.notify("select a running run to stop", severity="warning")
            return

        def done(yes: bool | None) -> None:
            if yes:
                self.stop(run)

        self.app.push_screen(ConfirmScreen(f"Stop {run['id']}?", "It saves a checkpoint after the current step; "
                                           "R resumes it later."), done)

    def stop(self, run: dict) -> None:
        if resolve_command(["runs", "stop"]) is not None:  # ends after the current step, with a checkpoint
            run_cli_quick(self, ["runs", "stop", run["id"]], then=self.reload)
        elif stop_pid(run.get("pid")):
            self.notify(f"asked {run['id']} to stop (it saves a checkpoint first)")
        else:
            self.store.runs.finish(run["id"], "stopped", error="its process is gone")
            self.notify(f"{run['id']}: its process is gone; marked stopped", severity="warning")
            self.reload()

    def action_resume(self) -> None:
        run = self.selected_run()
        if run is None:
            return
        if run["status"] == "running" and pid_alive(run.get("pid")):
            self.notify(f"{run['id']} is still running", severity="warning")
            return
        if resolve_command(["runs", "resume"]) is None:
            self.notify("`sandmle runs resume` is missing from this install (reinstall sandmle): this run cannot "
                        "be resumed from here", severity="error", timeout=8)
            return
        if run["status"] == "done":
            self.notify(f"{run['id']} is done; nothing to resume", severity="warning")
            return
        argv, _ = build_argv(["runs", "resume"], {"json": True})
        self.app.launch_job(run["kind"], [*argv, run["id"]], f"resume {run['id']}", run_id=run["id"])

    def action_trajectories(self) -> None:
        key = selected_key(self.table)
        if key is not None:
            self.app.push_screen(TrajectoriesScreen(run_id=key))
