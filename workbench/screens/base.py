"""What every main screen shares: the store and job manager, the selected row of a table, and a reload hook
the app calls while background jobs write to the store."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any, Callable

from textual.screen import Screen
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


def fmt_time(iso: str | None) -> str:
    """'2026-11-30T05:01:02.123+00:00' → '11-30 05:01'."""
    return iso[5:16].replace("T", " ") if iso else ""


def fmt_duration(seconds: float | None) -> str:
    if seconds is None:
        return ""
    if seconds < 60:
        return f"{seconds:.1f}s"
    if seconds < 3600:
        return f"{seconds // 60:.0f}m{seconds % 60:02.0f}s"
    return f"{seconds // 3600:.0f}h{(seconds % 3600) // 60:02.0f}m"


class BaseScreen(Screen):
    """A main screen (one per mode). ``ready`` turns True once its data is on screen (the TUI benchmark waits for it)."""

    #: shown in the command palette in front of the screen's actions
    LABEL = ""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.ready = False

    @property
    def store(self):
        return self.app.store

    @property
    def jobs(self):
        return self.app.jobs

    def reload(self) -> None:
        """Re-read what the screen shows from the store (called while jobs run and when they end)."""


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
