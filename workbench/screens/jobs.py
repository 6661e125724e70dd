"""The job panel: synthesis, training, eval and benchmark jobs started from the workbench, with progress and a
live tail of their output. Jobs keep running while you use other screens."""

from __future__ import annotations

from pathlib import Path

from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Footer, Static

from ..jobs import LAUNCHER, build_argv, resolve_command, tail
from ..widgets.log_view import LogView
from ..widgets.nav_bar import NavBar
from .base import BaseScreen, fill_table, fmt_duration, fmt_time, selected_key
from .prompt import PromptScreen

STATUS_MARK = {"running": "▶ running", "done": "✓ done", "failed": "✗ failed", "stopped": "■ stopped",
               "pending": "… pending"}


class JobsScreen(BaseScreen):
    LABEL = "Jobs"
    BINDINGS = [
        Binding("s", "stop", "Stop job", id="jobs.stop"),
        Binding("b", "bench", "Benchmark", id="jobs.bench"),
        Binding("l", "focus_log", "Log", id="jobs.log"),
        Binding("escape", "focus_table", "Table", show=False, id="jobs.table"),
    ]

    def compose(self) -> ComposeResult:
        yield NavBar("jobs")
        yield DataTable(id="jobs-table", cursor_type="row", zebra_stripes=True, classes="short-table")
        yield Static("", id="job-info", classes="info-line")
        yield LogView(id="job-log", poll_s=0.5)
        yield Footer()

    def on_mount(self) -> None:
        self.table.add_columns("job", "kind", "status", "time", "progress")
        self.reload()
        self.set_interval(1.0, self.reload_if_running)
        self.table.focus()
        self.ready = True

    @property
    def table(self) -> DataTable:
        return self.query_one("#jobs-table", DataTable)

    def job_runs(self) -> list[dict]:
        return [r for r in self.store.runs.list(limit=300) if (r.get("config") or {}).get("launcher") == LAUNCHER]

    def child_run(self, run: dict) -> dict | None:
        """The run the job's ``sandmle`` process created (same pid, same kind, created after the job)."""
        if not run.get("pid"):
            return None
        for other in self.store.runs.list(kind=run["kind"], limit=50):
            if (other["id"] != run["id"] and other.get("pid") == run["pid"] and other["created_at"] >= run["created_at"]
                    and (other.get("config") or {}).get("launcher") != LAUNCHER):
                return other
        return None

    def progress(self, run: dict) -> str:
        cfg = run.get("config") or {}
        log = Path(run["dir"] or "") / f"{run['id']}.log"
        if run["kind"] == "synthesis" and cfg.get("count"):
            made = self.store.envs.count(seed_id=cfg.get("seed_id"), since=run["created_at"])
            return f"{made}/{cfg['count']} envs · {tail(log)[:30]}"
        child = self.child_run(run) if run["kind"] in ("grpo", "sft", "eval") else None
        if child is not None:
            if run["kind"] == "eval":
                return f"{child['id'][:16]} · {len(self.store.runs.eval_results(child['id']))} episodes"
            step = self.store.runs.last_step(child["id"])
            total = (child.get("config") or {}).get("steps") or "?"
            reward = self.store.runs.metrics(child["id"], ["reward_mean"]).get("reward_mean") or [(0, None)]
            shown = "" if reward[-1][1] is None else f" · reward {reward[-1][1]:.3f}"
            return f"{child['id'][:16]} · step {step if step is not None else 0}/{total}{shown}"
        return tail(log)[:48] if run["status"] == "running" else (run.get("error") or "")[:48]

    def reload(self) -> None:
        keep = selected_key(self.table)
        self.runs = {r["id"]: r for r in self.job_runs()}
        rows = []
        for r in self.runs.values():
            job = self.jobs.jobs.get(r["id"])
            took = job.elapsed() if job and job.running else None
            rows.append((r["id"], (r["id"][:16], r["kind"], STATUS_MARK.get(r["status"], r["status"]),
                                   fmt_duration(took) if took is not None else fmt_time(r["created_at"]),
                                   self.progress(r))))
        fill_table(self.table, rows, keep)
        self.open_selected()

    def reload_if_running(self) -> None:
        if any(r["status"] == "running" for r in getattr(self, "runs", {}).values()):
            self.reload()

    def open_selected(self) -> None:
        key = selected_key(self.table)
        run = self.runs.get(key) if key else None
        info = self.query_one("#job-info", Static)
        log = self.query_one("#job-log", LogView)
        if run is None:
            info.update("no jobs yet · start one: Seeds → s (synthesize), Training → l (launch), b (benchmark)")
            log.open(None)
            return
        info.update(f"{run['name'] or run['id']}"[:76])
        path = Path(run["dir"] or "") / f"{run['id']}.log"
        if log.path != path:
            log.open(path)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self.open_selected()

    def action_stop(self) -> None:
        key = selected_key(self.table)
        if key is None:
            return
        if self.jobs.stop(key):
            self.notify(f"stopped {key}")
        else:
            self.notify(f"{key} is not running", severity="warning")
        self.reload()

    def action_bench(self) -> None:
        from engine.bench import available

        names = available()

        def done(name: str | None) -> None:
            if not name:
                return
            if name not in names:
                self.notify(f"unknown benchmark {name!r}; known: {', '.join(names)}", severity="error")
                return
            argv, _ = build_argv(["bench"], {"json": True})
            self.app.launch_job("bench", ["bench", name, *argv[1:]], f"bench {name}")

        if resolve_command(["bench"]) is None:
            self.notify("`sandmle bench` is not available in this build", severity="error")
            return
        self.app.push_screen(PromptScreen("Run a benchmark", "name", help_text="known: " + ", ".join(names)), done)

    def action_focus_log(self) -> None:
        self.query_one("#job-log", LogView).focus()

    def action_focus_table(self) -> None:
        self.table.focus()
