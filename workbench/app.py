"""The Textual workbench. Built with its store passed in, so tests run it on a tmp store."""

from __future__ import annotations

from pathlib import Path

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Footer, Header, Input, Markdown

THEMES_DIR = Path(__file__).resolve().parent.parent / "themes"


class Workbench(App):
    """Seeds table with live filter and a Markdown detail pane."""

    TITLE = "SandMLE Workbench"
    CSS_PATH = [THEMES_DIR / "base.tcss"]
    BINDINGS = [
        Binding("q", "quit", "Quit", id="app.quit"),
        Binding("slash", "focus_filter", "Filter", id="seeds.filter"),
        Binding("e", "toggle_enabled", "Enable/disable", id="seeds.toggle"),
        Binding("escape", "focus_table", "Table", show=False, id="seeds.table"),
    ]

    def __init__(self, store, **kwargs):
        super().__init__(**kwargs)
        self.store = store

    def compose(self) -> ComposeResult:
        yield Header()
        yield Input(placeholder="filter seeds (/)", id="seed-filter")
        yield DataTable(id="seeds-table", cursor_type="row", zebra_stripes=True)
        yield Markdown(id="seed-detail")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#seeds-table", DataTable)
        table.add_columns("id", "modality", "metric", "on", "envs")
        self.refresh_seeds()
        table.focus()

    def refresh_seeds(self, text: str | None = None) -> None:
        table = self.query_one("#seeds-table", DataTable)
        table.clear()
        for seed in self.store.seeds.list(text=text or None):
            table.add_row(seed["id"], seed["modality"], seed["metric"], "✓" if seed["enabled"] else "·",
                          str(seed["n_verified"]), key=seed["id"])
        self.show_detail()

    def show_detail(self) -> None:
        table = self.query_one("#seeds-table", DataTable)
        detail = self.query_one("#seed-detail", Markdown)
        if table.row_count == 0:
            detail.update("*No seeds match.*")
            return
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        seed = self.store.seeds.get(key)
        detail.update(f"## {seed['title']}\n\n`{seed['task_type']}` · `{seed['metric']}`\n\n{seed['description']}")

    def on_input_changed(self, event: Input.Changed) -> None:
        self.refresh_seeds(event.value)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self.show_detail()

    def action_focus_filter(self) -> None:
        self.query_one("#seed-filter", Input).focus()

    def action_focus_table(self) -> None:
        self.query_one("#seeds-table", DataTable).focus()

    def action_toggle_enabled(self) -> None:
        table = self.query_one("#seeds-table", DataTable)
        if table.row_count == 0:
            return
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        seed = self.store.seeds.get(key)
        self.store.seeds.set_enabled(key, not seed["enabled"])
        row = table.cursor_row
        self.refresh_seeds(self.query_one("#seed-filter", Input).value)
        table.move_cursor(row=row)


def run_app(store) -> None:
    Workbench(store=store).run()
