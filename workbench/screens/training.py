"""Training: SFT and GRPO runs, live curves (reward mean, medal rate, valid rate, loss), a launch form, stop and
resume, and the rollouts of a run (turn by turn; two of one group side by side)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Footer, Static

from ..jobs import LAUNCHER, build_argv, pid_alive, resolve_command, stop_pid
from ..widgets.metric_curves import CURVES, MetricCurves
from ..widgets.nav_bar import NavBar
from .base import BaseScreen, fill_table, fmt_time, run_cli_quick, selected_key
from .launch_form import COMMANDS, LaunchFormScreen

KINDS = ("grpo", "sft", "rollout")


def last_value(series: dict, name: str) -> str:
    pts = series.get(name) or []
    return f"{pts[-1][1]:.3f}" if pts and pts[-1][1] is not None else ""


class TrainingScreen(BaseScreen):
    LABEL = "Training"
    BINDINGS = [
        Binding("l", "launch", "Launch", id="training.launch"),
        Binding("s", "stop", "Stop", id="training.stop"),
        Binding("r", "resume", "Resume", id="training.resume"),
        Binding("m", "cycle_curves", "Curves", id="training.curves"),
        Binding("t", "trajectories", "Rollouts", id="training.trajectories"),
        Binding("enter", "trajectories", "Rollouts", show=False, id="training.open"),
    ]

    def compose(self) -> ComposeResult:
        yield NavBar("training")
        yield DataTable(id="runs-table", cursor_type="row", zebra_stripes=True, classes="short-table")
        yield Static("", id="run-info", classes="info-line")
        yield MetricCurves(id="run-curves")
        yield Footer()

    def on_mount(self) -> None:
        self.table.add_columns("run", "kind", "status", "step", "reward", "medal", "valid", "started")
        self._points = -1
        self.reload()
        self.set_interval(1.0, self.tick)
        self.table.focus()
        self.ready = True

    @property
    def table(self) -> DataTable:
        return self.query_one("#runs-table", DataTable)

    @property
    def curves(self) -> MetricCurves:
        return self.query_one("#run-curves", MetricCurves)

    def training_runs(self) -> list[dict]:
        runs = []
        for kind in KINDS:
            runs += [r for r in self.store.runs.list(kind=kind, limit=200)
                     if (r.get("config") or {}).get("launcher") != LAUNCHER]
        return sorted(runs, key=lambda r: r["created_at"], reverse=True)

    def reload(self) -> None:
        keep = selected_key(self.table)
        self.runs = {r["id"]: r for r in self.training_runs()}
        rows = []
        for r in self.runs.values():
            series = self.store.runs.metrics(r["id"], ["reward_mean", "medal_rate", "valid_rate"])
            rows.append((r["id"], (r["id"][:16], r["kind"], r["status"], self.store.runs.last_step(r["id"]) or "",
                                   last_value(series, "reward_mean"), last_value(series, "medal_rate"),
                                   last_value(series, "valid_rate"), fmt_time(r["created_at"]))))
        fill_table(self.table, rows, keep)
        self._points = -1
        self.show_selected()

    def tick(self) -> None:
        """Poll the selected run's metrics (written by another process) and the run list while anything runs."""
        if any(r["status"] == "running" for r in getattr(self, "runs", {}).values()) or self.jobs.running():
            count = len(self.store.runs.list(limit=1000))
            if count != getattr(self, "_run_count", None):
                self._run_count = count
                self.reload()
                return
        self.show_selected()

    def show_selected(self) -> None:
        key = selected_key(self.table)
        run = self.runs.get(key) if key else None
        info = self.query_one("#run-info", Static)
        if run is None:
            info.update("no training runs yet · l: launch a run")
            if self._points != 0:
                self.curves.show({}, "")
                self._points = 0
            return
        points = self.store.runs.metric_points(run["id"])
        fresh = self.store.runs.get(run["id"])
        if fresh["status"] != run["status"]:
            self.runs[run["id"]] = fresh
            self.reload()
            return
        ckpt = self.store.runs.latest_checkpoint(run["id"])
        cfg = run.get("config") or {}
        info.update(f"{run['id']} · {run['status']} · model {cfg.get('model', '?')} · G {cfg.get('group_size', '?')} · "
                    f"ckpt {('step ' + str(ckpt['step'])) if ckpt else '—'}"
                    + (f" · [red]{run['error'][:60]}[/]" if run.get("error") else ""))
        if points != self._points:
            self._points = points
            self.curves.show(self.store.runs.metrics(run["id"], CURVES), run["id"][:16])

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._points = -1
        self.show_selected()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self.action_trajectories()

    def action_cycle_curves(self) -> None:
        self.notify(f"curves: {self.curves.cycle_view()}", timeout=2)

    def action_launch(self) -> None:
        def done(result: dict | None) -> None:
            if not result:
                return
            values = result["values"]
            self.app.launch_job(result["kind"], result["argv"], f"{result['kind']} {values.get('model', '')} "
                                f"× {values.get('steps', '?')} steps")
            if result["ignored"]:
                self.notify(f"not accepted by `sandmle {' '.join(COMMANDS[result['kind']])}`: "
                            f"{', '.join(result['ignored'])}", severity="warning", timeout=8)

        self.app.push_screen(LaunchFormScreen(), done)

    def action_stop(self) -> None:
        key = selected_key(self.table)
        run = self.runs.get(key) if key else None
        if run is None or run["status"] != "running":
            self.notify("select a running run to stop", severity="warning")
            return
        if resolve_command(["runs", "stop"]) is not None:
            run_cli_quick(self, ["runs", "stop", run["id"]], then=self.reload)
        elif stop_pid(run.get("pid")):
            self.notify(f"asked {run['id']} to stop (it saves a checkpoint first)")
        else:
            self.store.runs.finish(run["id"], "stopped", error="its process is gone")
            self.notify(f"{run['id']}: its process is gone; marked stopped", severity="warning")
            self.reload()

    def action_resume(self) -> None:
        key = selected_key(self.table)
        run = self.runs.get(key) if key else None
        if run is None:
            return
        if run["status"] == "running" and pid_alive(run.get("pid")):
            self.notify(f"{run['id']} is still running", severity="warning")
            return
        if resolve_command(["runs", "resume"]) is None:
            self.notify("`sandmle runs resume` has not landed in this build: this run cannot be resumed from "
                        "here yet", severity="error", timeout=8)
            return
        if run["status"] == "done":
            self.notify(f"{run['id']} is done; nothing to resume", severity="warning")
            return
        argv, _ = build_argv(["runs", "resume"], {"json": True})
        self.app.launch_job(run["kind"], [*argv, run["id"]], f"resume {run['id']}")

    def action_trajectories(self) -> None:
        key = selected_key(self.table)
        if key is not None:
            from .trajectories import TrajectoriesScreen

            self.app.push_screen(TrajectoriesScreen(run_id=key))
