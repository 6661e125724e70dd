"""The rollouts of one run: a table, one rollout turn by turn with its reward breakdown, and (c) two rollouts of
the same group side by side."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.widgets import DataTable, Footer, Header, Static

from ..widgets.trajectory_view import TrajectoryView
from .base import BaseScreen, fill_table, selected_key


class TrajectoriesScreen(BaseScreen):
    LABEL = "Rollouts"
    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back", id="traj.back"),
        Binding("c", "compare", "Compare", id="traj.compare"),
        Binding("tab", "focus_next", "Next pane", show=False, id="traj.next_pane"),
    ]

    def __init__(self, run_id: str | None = None, **kwargs):
        super().__init__(**kwargs)
        self.run_id = run_id
        self.partner: str | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield DataTable(id="traj-table", cursor_type="row", zebra_stripes=True, classes="short-table")
        yield Static("", id="traj-info", classes="info-line")
        with Horizontal(id="traj-panes"):
            yield TrajectoryView(id="traj-left")
            yield TrajectoryView(id="traj-right", classes="hidden")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = f"run {self.run_id}" if self.run_id else "all rollouts"
        self.table.add_columns("rollout", "env", "group", "step", "reward", "turns", "status")
        self.reload()
        self.table.focus()
        self.ready = True

    @property
    def table(self) -> DataTable:
        return self.query_one("#traj-table", DataTable)

    def reload(self) -> None:
        keep = selected_key(self.table)
        self.rows = {t["id"]: t for t in self.store.trajectories.list(run_id=self.run_id, limit=2000)}
        fill_table(self.table, [
            (t["id"], (t["id"][:14], (t["env_id"] or "")[:16], (t["group_id"] or "")[:10], t["step"],
                       "" if t["reward"] is None else f"{t['reward']:.3f}", t["n_turns"], t["status"]))
            for t in self.rows.values()], keep)
        self.show_selected()

    def show_selected(self) -> None:
        key = selected_key(self.table)
        left = self.query_one("#traj-left", TrajectoryView)
        info = self.query_one("#traj-info", Static)
        if key is None:
            info.update("no rollouts stored for this run")
            left.show(None)
            return
        left.show(self.store.trajectories.get(key))
        if self.partner is not None:
            self.show_partner(key)
        else:
            info.update(f"{len(self.rows)} rollouts · c: compare with another rollout of the same group")

    def group_mates(self, key: str) -> list[str]:
        group = self.rows[key].get("group_id")
        if not group:
            return []
        return [t["id"] for t in self.store.trajectories.list(group_id=group) if t["id"] != key]

    def show_partner(self, key: str) -> None:
        right = self.query_one("#traj-right", TrajectoryView)
        mates = self.group_mates(key)
        info = self.query_one("#traj-info", Static)
        if not mates:
            info.update("this rollout has no other rollout in its group")
            right.add_class("hidden")
            self.partner = None
            return
        if self.partner not in mates:
            self.partner = mates[0]
        right.remove_class("hidden")
        right.show(self.store.trajectories.get(self.partner))
        info.update(f"comparing {key[:12]} ↔ {self.partner[:12]} (group {self.rows[key]['group_id']}) · "
                    f"c: next partner · escape: back")

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self.show_selected()

    def action_compare(self) -> None:
        key = selected_key(self.table)
        if key is None:
            return
        mates = self.group_mates(key)
        if self.partner is not None and self.partner in mates and len(mates) > 1:
            self.partner = mates[(mates.index(self.partner) + 1) % len(mates)]
        elif self.partner is None:
            self.partner = mates[0] if mates else None
        self.show_partner(key)
