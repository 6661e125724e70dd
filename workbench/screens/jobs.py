"""The job panel: synthesis, training, eval and benchmark jobs started from the workbench (each one run, shown on
its own screen too), with progress and a live tail of their output. Jobs keep running while you use other
screens; stopping one asks first."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Footer, Static

from ..cli.bench import benchmarks
from ..fmt import clip, fmt_cost, fmt_duration, short_id, wall_seconds
from ..jobs import LAUNCHER, build_argv, job_log, resolve_command, tail
from ..runinfo import run_cost
from ..widgets.log_view import LogView
from ..widgets.nav_bar import NavBar
from .base import LiveRunsScreen, fill_table, selected_key
from .confirm import ConfirmScreen
from .prompt import PromptScreen

STATUS_MARK = {"running": "▶ running", "done": "✓ done", "failed": "✗ failed", "stopped": "■ stopped",
               "pending": "… pending", "dead": "✗ dead"}
#: (column, width): 80 columns in all
COLUMNS = (("job", 16), ("kind", 9), ("status", 9), ("wall", 6), ("progress", 28))


class JobsScreen(LiveRunsScreen):
    LABEL = "Jobs"
    BINDINGS = [
        Binding("l", "bench", "Launch bench", id="jobs.bench", tooltip="Start a benchmark (sandmle bench NAME)"),
        Binding("s", "stop", "Stop", id="jobs.stop", tooltip="Stop the selected job (asks first)"),
        Binding("enter", "focus_log", "Log", id="jobs.log", priority=True, tooltip="Move into the job's output"),
        Binding("escape", "focus_table", "Table", show=False, id="jobs.table"),
    ]

    def compose(self) -> ComposeResult:
        yield NavBar("jobs")
        yield DataTable(id="jobs-table", cursor_type="row", zebra_stripes=True, classes="short-table")
        yield Static("", id="job-info", classes="info-line")
        yield LogView(id="job-log", poll_s=0.5)
        yield Footer()

    def on_mount(self) -> None:
        for label, width in COLUMNS:
            self.table.add_column(label, width=width)
        self.start_polling()
        self.show_first(self.table)

    @property
    def table(self) -> DataTable:
        return self.query_one("#jobs-table", DataTable)

    def job_runs(self) -> list[dict]:
        return [r for r in self.store.runs.list(limit=300) if (r.get("config") or {}).get("launcher") == LAUNCHER]

    def progress(self, run: dict) -> str:
        cfg = run.get("config") or {}
        if run["kind"] == "synthesis" and cfg.get("count"):
            made = self.store.envs.count(seed_id=cfg.get("seed_id"), since=run["created_at"])
            return f"{made}/{cfg['count']} envs · {tail(job_log(run))[:30]}"
        if run["kind"] == "eval":
            return f"{len(self.store.runs.eval_results(run['id']))} episodes · {cfg.get('policy', '')}"[:48]
        if run["kind"] in ("grpo", "sft"):
            step = self.store.runs.last_step(run["id"])
            reward = self.store.runs.metrics(run["id"], ["reward_mean"]).get("reward_mean") or [(0, None)]
            shown = "" if reward[-1][1] is None else f" · reward {reward[-1][1]:.3f}"
            return f"step {step or 0}/{cfg.get('steps') or '?'}{shown}"
        return tail(job_log(run))[:48] if run["status"] == "running" else (run.get("error") or "")[:48]

    def reload(self) -> None:
        keep = selected_key(self.table)
        self.runs = {r["id"]: r for r in self.job_runs()}
        rows = []
        for r in self.runs.values():
            rows.append((r["id"], (short_id(r["id"], COLUMNS[0][1]), r["kind"], STATUS_MARK.get(r["status"], r["status"]),
                                   fmt_duration(wall_seconds(r)), clip(self.progress(r), COLUMNS[4][1]))))
        fill_table(self.table, rows, keep)
        self.open_selected()

    def open_selected(self) -> None:
        run = self.selected_run()
        info = self.query_one("#job-info", Static)
        log = self.query_one("#job-log", LogView)
        if run is None:
            info.update("no jobs yet · l launches: synthesis (Seeds), training (Training), bench (here)")
            log.open(None)
            return
        cost = fmt_cost(run_cost(self.store, run))
        info.update(clip(f"{run['id']} · {run['name'] or ''}" + (f" · {cost}" if cost else ""), 78))
        path = job_log(run)
        if log.path != path:
            log.open(path)

    def action_stop(self) -> None:
        key = selected_key(self.table)
        job = self.jobs.jobs.get(key) if key else None
        if job is None or not job.running:
            self.notify(f"{key or 'no job'} is not running", severity="warning")
            return

        def done(yes: bool | None) -> None:
            if yes:
                self.run_worker(lambda: self.jobs.stop(job.run_id), thread=True, group="stop")
                self.notify(f"stopping {job.run_id}")

        self.app.push_screen(ConfirmScreen(f"Stop {job.label}?", "Ctrl-C first (the command keeps what it has "
                                           "done), then SIGTERM, then SIGKILL."), done)

    def action_bench(self) -> None:
        names = benchmarks()

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
