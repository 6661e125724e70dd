"""Sandbox runs: every execution of untrusted code (status, wall time, exit), running ones first, filtered by
status (v) and by text (/: run id, environment, command), and a log viewer that live-tails a running job and stays
responsive on a million-line log (/ in the log searches it; n, N)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Footer, Input, Static

from ..fmt import clip, fmt_duration, fmt_time, short_id
from ..messages import LogLoaded
from ..widgets.log_view import LogView
from ..widgets.nav_bar import NavBar
from .base import LiveRunsScreen, fill_table, selected_key

STATUS_MARK = {"running": "▶ running", "ok": "✓ ok", "error": "✗ error", "timeout": "⏱ timeout",
               "memory": "✗ memory", "killed": "✗ killed", "output_limit": "✗ output",
               "interrupted": "■ interrupted"}
STATUSES = (None, "running", "ok", "error", "timeout")
LIMIT = 300  # newest rows listed (the count says how many match)


def short_command(command: str | None) -> str:
    """'/long/path/.venv/bin/python _step.py' → 'python _step.py'."""
    words = (command or "").split()
    if words and "/" in words[0]:
        words[0] = words[0].rsplit("/", 1)[-1]
    return " ".join(words)


class SandboxScreen(LiveRunsScreen):
    POLL_S = 2.0
    LABEL = "Sandbox"
    BINDINGS = [
        Binding("slash", "find", "Find", id="sandbox.find",
                tooltip="Filter the runs (run id, environment, command); in the log: search it"),
        Binding("v", "cycle_status", "Status", id="sandbox.status", tooltip="Show only runs of one status"),
        Binding("escape", "focus_table", "Table", show=False, id="sandbox.table"),
    ]

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.status: str | None = None
        self.text: str | None = None

    def compose(self) -> ComposeResult:
        yield NavBar("sandbox")
        yield Input(placeholder="filter: run id, environment, command", id="sandbox-filter",
                    classes="filter hidden", compact=True)
        yield DataTable(id="sandbox-table", cursor_type="row", zebra_stripes=True)
        yield Static("", id="sandbox-info", classes="info-line")
        yield Input(placeholder="search the log (enter: find, n/N: next/previous)", id="log-search",
                    classes="filter hidden", compact=True)
        yield LogView(id="sandbox-log")
        yield Footer()

    def on_mount(self) -> None:
        self.table.add_columns("id", "status", "wall", "env", "command", "at")
        self.start_polling()
        self.show_first(self.table, ready=False)  # ready once the selected log is indexed (on_log_loaded)

    @property
    def table(self) -> DataTable:
        return self.query_one("#sandbox-table", DataTable)

    @property
    def log_view(self) -> LogView:
        return self.query_one("#sandbox-log", LogView)

    def listed(self) -> list[dict]:
        """Running runs first, then the newest others, under the current filters."""
        running = [] if self.status not in (None, "running") else self.store.sandbox.list(
            status="running", text=self.text, limit=LIMIT)
        others = [] if self.status == "running" else [
            r for r in self.store.sandbox.list(status=self.status, text=self.text, limit=LIMIT)
            if r["status"] != "running"]
        return (running + others)[:LIMIT]

    def reload(self) -> None:
        keep = selected_key(self.table)
        self.runs = {r["id"]: r for r in self.listed()}
        self.matching = self.store.sandbox.count(status=self.status, text=self.text)
        rows = [(r["id"], (short_id(r["id"], 12), STATUS_MARK.get(r["status"], r["status"])
                           + ("" if r["exit_code"] in (None, 0) else f" {r['exit_code']}"), fmt_duration(r["wall_s"]),
                           short_id(r["env_id"], 15), clip(short_command(r["command"]), 18),
                           fmt_time(r["started_at"])[6:]))
                for r in self.runs.values()]
        fill_table(self.table, rows, keep)
        self.open_selected()

    def open_selected(self) -> None:
        run = self.selected_run()
        path = run.get("log_path") if run else None
        info = self.query_one("#sandbox-info", Static)
        shown = f"{len(self.runs)} of {self.matching:,}" + (f" {self.status}" if self.status else "") + (
            f" matching '{self.text}'" if self.text else "")
        if run is None:
            info.update(f"no sandbox runs · {shown} · v: status  /: filter")
            self.log_view.open(None)
            self.ready = True
            return
        limits = run.get("limits") or {}
        info.update(clip(f"{shown} · {run['backend']}" + (f" · run {short_id(run['run_id'], 16)}" if run.get("run_id")
                                                           else "")
                         + f" · cpu {fmt_duration(run.get('cpu_s')) or '—'} · peak {run.get('peak_rss_mb') or 0:.0f} MB"
                         f" · limits {limits.get('timeout_s', '?')}s {limits.get('memory_mb', '?')} MB", 78))
        if self.log_view.path is None or str(self.log_view.path) != str(path):
            self.log_view.open(path)
        if not path:
            self.ready = True  # nothing to index

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self.log_view.focus()

    def on_log_loaded(self, event: LogLoaded) -> None:
        self.ready = True

    def action_find(self) -> None:
        box = self.query_one("#log-search" if self.log_view.has_focus else "#sandbox-filter", Input)
        box.remove_class("hidden")
        box.focus()

    def action_cycle_status(self) -> None:
        self.status = STATUSES[(STATUSES.index(self.status) + 1) % len(STATUSES)]
        self.reload()

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "sandbox-filter":
            self.text = event.value.strip() or None
            self.reload()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "log-search":
            if event.value:
                self.log_view.search(event.value)
            self.log_view.focus()
        else:
            self.table.focus()

    def action_focus_table(self) -> None:
        self.query_one("#log-search", Input).add_class("hidden")
        if not self.text:
            self.query_one("#sandbox-filter", Input).add_class("hidden")
        self.table.focus()
