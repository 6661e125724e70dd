"""Environments: every synthetic task with its verification status (and why it was rejected) and its split.
Paged, so ten thousand rows open at once; enter opens the detail; p moves one between train and heldout."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Footer, Input, Static

from engine.envs.layout import REAL_SPLIT
from engine.envs.provenance import origin

from ..fmt import clip, short_id
from ..widgets.nav_bar import NavBar
from .base import PAGE, PagedScreen, fill_table, selected_key
from .env_detail import EnvDetailScreen, export_env

#: (column, width): 80 columns in all, the id wide enough to keep the part that tells synthesized ids apart
COLUMNS = (("id", 26), ("status", 10), ("split", 7), ("metric", 8), ("rows", 6), ("why", 9))
STATUSES = (None, "verified", "rejected", "pending")
MARK = {"verified": "✓ verified", "rejected": "✗ rejected", "pending": "… pending"}


class EnvironmentsScreen(PagedScreen):
    LABEL = "Environments"
    BINDINGS = [
        Binding("slash", "focus_filter", "Filter", id="envs.filter"),
        Binding("escape", "focus_table", "Table", show=False, id="envs.table"),
        Binding("enter", "open", "Open", id="envs.open", priority=True),
        Binding("v", "cycle_status", "Status", id="envs.status"),
        Binding("right_square_bracket", "page(1)", "Next page", show=False, id="envs.next_page"),
        Binding("left_square_bracket", "page(-1)", "Prev page", show=False, id="envs.prev_page"),
        Binding("p", "toggle_split", "Split", id="envs.split",
                tooltip="Move the selected environment between the train and heldout splits"),
        Binding("x", "export", "Export", id="envs.export"),
    ]

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.status: str | None = None

    def compose(self) -> ComposeResult:
        yield NavBar("environments")
        yield Input(placeholder="filter: id, title, seed, metric (/)", id="env-filter", classes="filter", compact=True)
        yield DataTable(id="envs-table", cursor_type="row", zebra_stripes=True, classes="main-table")
        yield Static("", id="envs-info", classes="info-line")
        yield Static("", id="env-summary", classes="summary")
        yield Footer()

    def on_mount(self) -> None:
        for label, width in COLUMNS:
            self.table.add_column(label, width=width)
        self.show_first(self.table)

    @property
    def table(self) -> DataTable:
        return self.query_one("#envs-table", DataTable)

    def filters(self) -> dict:
        text = self.query_one("#env-filter", Input).value.strip()
        return {"status": self.status, "text": text or None}

    def reload(self) -> None:
        f = self.filters()
        self.total = self.store.envs.count(**f)
        self.page_start = max(0, min(self.page_start, (self.total - 1) // PAGE * PAGE if self.total else 0))
        envs = self.store.envs.list(**f, limit=PAGE, offset=self.page_start)
        keep = selected_key(self.table)
        rows = [(e["id"], (short_id(e["id"], COLUMNS[0][1]), MARK.get(e["status"], e["status"]), e["split"] or "",
                           clip(e["metric"], COLUMNS[3][1]), f"{e['n_train'] or '?'}/{e['n_test'] or '?'}",
                           clip(e["reason"], COLUMNS[5][1])))
                for e in envs]
        fill_table(self.table, rows, keep)
        end = self.page_start + len(envs)
        self.query_one("#envs-info", Static).update(
            f"{self.page_start + 1 if envs else 0}–{end} of {self.total:,} · status {self.status or 'all'} · "
            f"{self.store.envs.count(status='verified', split='train')} train · "
            f"{self.store.envs.count(status='verified', split='heldout')} heldout verified · p: split")
        self.show_summary()

    def show_summary(self) -> None:
        key = selected_key(self.table)
        box = self.query_one("#env-summary", Static)
        if key is None:
            box.update("No environments yet: synthesize some from the Seeds screen (1, then s).")
            return
        env = self.store.envs.get(key)
        text = (f"[b]{env['title']}[/b] · {env['modality']} · {env['task_type']} · split {env['split']} · "
                f"{origin(env)}")
        if env["status"] == "rejected" and env["reason"]:
            text += f"\n[red]rejected:[/] {env['reason']}"
        elif env.get("thresholds"):
            t = env["thresholds"]
            text += "\nmedals: " + " · ".join(f"{k} {t[k]:.4g}" for k in ("gold", "silver", "bronze", "median")
                                              if isinstance(t.get(k), (int, float)))
        box.update(text)

    def on_input_changed(self, event: Input.Changed) -> None:
        self.page_start = 0
        self.reload()

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self.show_summary()

    def action_focus_filter(self) -> None:
        self.query_one("#env-filter", Input).focus()

    def action_focus_table(self) -> None:
        self.table.focus()

    def action_cycle_status(self) -> None:
        self.status = STATUSES[(STATUSES.index(self.status) + 1) % len(STATUSES)]
        self.page_start = 0
        self.reload()

    def action_open(self) -> None:
        key = selected_key(self.table)
        if not self.table.has_focus:  # enter in the filter: back to the table
            self.table.focus()
        elif key is not None:
            self.app.push_screen(EnvDetailScreen(key))

    def action_toggle_split(self) -> None:
        key = selected_key(self.table)
        if key is None:
            return
        env = self.store.envs.get(key)
        if env["split"] == REAL_SPLIT:
            self.notify(f"{key} is a real competition: it stays in split {REAL_SPLIT} (training never uses it)",
                        severity="warning")
            return
        split = "heldout" if env["split"] == "train" else "train"
        self.store.envs.set_split([key], split)
        self.notify(f"{key} → {split}", timeout=2)
        self.reload()

    def action_export(self) -> None:
        key = selected_key(self.table)
        if key is not None:
            export_env(self, key)
