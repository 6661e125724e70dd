"""What every main screen shares: the store and job manager, the selected row of a table, and the reload the app
calls when the store changed (on the active screen at once, on the others when they come back)."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any, Callable

from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import DataTable


def selected_key(table: DataTable) -> str | None:
    """The row key under the cursor, or None for an empty table."""
    if table.row_count == 0:
        return None
    try:
        return table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
    except Exception:  # noqa: BLE001 - cursor past the end after a clear
        return None


def fill_table(table: DataTable, rows: list[tuple[str, tuple[Any, ...]]], keep: str | None = None) -> None:
    """Replace the rows of ``table`` (``(key, cells)`` pairs) and keep the cursor on ``keep`` if it is still there."""
    table.clear()
    for key, cells in rows:
        table.add_row(*["" if c is None else str(c) for c in cells], key=key)
    if keep is not None:
        try:
            table.move_cursor(row=table.get_row_index(keep), animate=False)
        except Exception:  # noqa: BLE001 - the row is gone
            pass


class RunMemo:
    """What a screen derived from a run's rows, kept until the run changes: its status, its end, or its heartbeat
    (every metric point and every eval result beats it). Screens re-read on every store change; most runs have
    not changed."""

    def __init__(self) -> None:
        self.values: dict[str, tuple[tuple, Any]] = {}

    def get(self, run: dict[str, Any], compute: Callable[[], Any]) -> Any:
        key = (run["status"], run.get("heartbeat_at"), run.get("ended_at"))
        hit = self.values.get(run["id"])
        if hit is None or hit[0] != key:
            hit = self.values[run["id"]] = (key, compute())
        return hit[1]


class BaseScreen(Screen):
    """A main screen (one per mode). ``ready`` turns True once its data is on screen (the TUI benchmark waits for it)."""

    #: shown in the command palette in front of the screen's actions
    LABEL = ""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.ready = False
        self.loaded_version = -1

    @property
    def store(self):
        return self.app.store

    @property
    def jobs(self):
        return self.app.jobs

    def reload(self) -> None:
        """Re-read what the screen shows from the store, keeping the reader's place."""

    def refresh_data(self) -> None:
        """``reload`` and remember which version of the store the screen now shows."""
        self.loaded_version = self.app.store_version
        self.reload()

    def show_first(self, focus: Widget, *, ready: bool = True) -> None:
        """The end of every main screen's ``on_mount``: its data on screen, the cursor in ``focus``, and ``ready``
        (unless the screen says later, as the Sandbox screen does once its log is indexed)."""
        self.refresh_data()
        focus.focus()
        if ready:
            self.ready = True

    def on_screen_resume(self) -> None:
        if self.is_mounted and self.ready and self.loaded_version != self.app.store_version:
            self.refresh_data()


def run_cli_quick(screen, argv: list[str], then: Callable[[], None] | None = None) -> None:
    """Run a quick ``sandmle`` command (stop, export) in a thread; its last line becomes a notification."""

    def run() -> None:
        env = dict(os.environ, SANDMLE_HOME=str(screen.store.path.parent))
        try:
            out = subprocess.run([sys.executable, "-m", "workbench", *argv], capture_output=True, text=True,
                                 env=env, timeout=300)
            lines = (out.stdout.strip() or out.stderr.strip() or f"exit {out.returncode}").splitlines()
            text, ok = lines[-1], out.returncode == 0
        except subprocess.TimeoutExpired:
            text, ok = f"`sandmle {' '.join(argv)}` took too long", False
        screen.app.call_from_thread(screen.notify, text, severity="information" if ok else "error", timeout=8)
        if then is not None:
            screen.app.call_from_thread(then)

    screen.run_worker(run, thread=True, group="cli-quick")


class LiveRunsScreen(BaseScreen):
    """A main screen listing runs (``runs``: id → row) beside the selected one's log: it re-reads every
    ``POLL_S`` while one of them is running, and follows the cursor with ``open_selected``."""

    POLL_S = 1.0
    table: DataTable

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.runs: dict[str, dict[str, Any]] = {}

    def start_polling(self) -> None:
        self.set_interval(self.POLL_S, self.reload_if_running)

    def reload_if_running(self) -> None:
        if any(r["status"] == "running" for r in self.runs.values()):
            self.reload()

    def selected_run(self) -> dict[str, Any] | None:
        key = selected_key(self.table)
        return self.runs.get(key) if key else None

    def open_selected(self) -> None:
        """Show the selected run's details and log."""

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self.open_selected()


PAGE = 100  # rows listed at once: a screenful is ~15, a GRPO run has thousands of rollouts; paging is one key


class PagedScreen(BaseScreen):
    """A main screen whose table lists one page of a long list at a time (``[`` ``]``): ``reload`` reads ``PAGE``
    rows from ``page_start`` and sets ``total``."""

    table: DataTable

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.page_start = 0
        self.total = 0

    def action_page(self, delta: int) -> None:
        new = self.page_start + delta * PAGE
        if 0 <= new < max(1, self.total):
            self.page_start = new
            self.reload()
            self.table.move_cursor(row=0)
