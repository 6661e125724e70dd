"""Sandbox runs: every execution of untrusted code (status, wall time, exit), and a log viewer that live-tails a
running job and stays responsive on a million-line log (search with /, n, N)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Footer, Input, Static

from ..messages import LogLoaded
from ..widgets.log_view import LogView
from ..widgets.nav_bar import NavBar
from .base import BaseScreen, fill_table, fmt_duration, fmt_time, selected_key

STATUS_MARK = {"running": "▶ running", "ok": "✓ ok", "error": "✗ error", "timeout": "⏱ timeout",
               "memory": "✗ memory", "killed": "✗ killed", "output_limit": "✗ output",
               "interrupted": "■ interrupted"}


def short_command(command: str | None) -> str:
    """'/long/path/.venv/bin/python _step.py' → 'python _step.py'."""
    words = (command or "").split()
    if words and "/" in words[0]:
        words[0] = words[0].rsplit("/", 1)[-1]
    return " ".join(words)


class SandboxScreen(BaseScreen):
    LABEL = "Sandbox"
    BINDINGS = [
        Binding("slash", "search", "Search log", id="sandbox.search"),
        Binding("escape", "focus_table", "Table", show=False, id="sandbox.table"),
        Binding("l", "focus_log", "Log", id="sandbox.log"),
        Binding("r", "reload", "Refresh", id="sandbox.refresh"),
    ]

    def compose(self) -> ComposeResult:
        yield NavBar("sandbox")
        yield DataTable(id="sandbox-table", cursor_type="row", zebra_stripes=True, classes="short-table")
        yield Static("", id="sandbox-info", classes="info-line")
        yield Input(placeholder="search the log (enter: find, n/N: next/previous)", id="log-search",
                    classes="filter hidden", compact=True)
        yield LogView(id="sandbox-log")
        yield Footer()

    def on_mount(self) -> None:
        self.table.add_columns("id", "status", "wall", "env", "command", "at")
        self.reload()
        self.set_interval(2.0, self.reload_if_running)
        self.table.focus()
        if self.table.row_count == 0:
            self.ready = True

    @property
    def table(self) -> DataTable:
        return self.query_one("#sandbox-table", DataTable)

    @property
    def log_view(self) -> LogView:
        return self.query_one("#sandbox-log", LogView)

    def reload(self) -> None:
        keep = selected_key(self.table)
        self.runs = {r["id"]: r for r in self.store.sandbox.list(limit=200)}
        rows = [(r["id"], (r["id"][:12], STATUS_MARK.get(r["status"], r["status"])
                           + ("" if r["exit_code"] in (None, 0) else f" {r['exit_code']}"), fmt_duration(r["wall_s"]),
                           (r["env_id"] or "")[:16], short_command(r["command"])[:18], fmt_time(r["started_at"])[6:]))
                for r in self.runs.values()]
        fill_table(self.table, rows, keep)
        self.open_selected()

    def reload_if_running(self) -> None:
        if any(r["status"] == "running" for r in getattr(self, "runs", {}).values()):
            self.reload()

    def action_reload(self) -> None:
        self.reload()

    def open_selected(self) -> None:
        key = selected_key(self.table)
        run = self.runs.get(key) if key else None
        path = run.get("log_path") if run else None
        info = self.query_one("#sandbox-info", Static)
        if run is None:
            info.update("no sandbox runs yet")
            self.log_view.open(None)
            return
        limits = run.get("limits") or {}
        total = self.store.sandbox.count()
        info.update(f"{run['id']} · {run['backend']}" + (f" · run {run['run_id'][:18]}" if run.get("run_id") else "")
                    + f" · {len(self.runs)} newest of {total:,} · cpu {fmt_duration(run.get('cpu_s')) or '—'} · peak "
                    f"{run.get('peak_rss_mb') or 0:.0f} MB · limits {limits.get('timeout_s', '?')}s "
                    f"{limits.get('memory_mb', '?')} MB")
        if self.log_view.path is None or str(self.log_view.path) != str(path):
            self.log_view.open(path)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self.open_selected()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self.log_view.focus()

    def on_log_loaded(self, event: LogLoaded) -> None:
        self.ready = True

    def action_search(self) -> None:
        box = self.query_one("#log-search", Input)
        box.remove_class("hidden")
        box.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.value:
            self.log_view.search(event.value)
        self.log_view.focus()

    def action_focus_table(self) -> None:
        self.query_one("#log-search", Input).add_class("hidden")
        self.table.focus()

    def action_focus_log(self) -> None:
        self.log_view.focus()
