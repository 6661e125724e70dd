"""The rollouts of one run: a table, one rollout turn by turn (tab or enter moves into it), and (c) two rollouts
of the same group side by side. Escape leaves compare mode first, then the screen."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.widgets import DataTable, Footer, Header, Static

from ..fmt import short_id
from ..widgets.trajectory_view import TrajectoryView
from .base import PAGE, PagedScreen, fill_table, selected_key


def short_group(group_id: str | None) -> str:
    """'grpo-1a2b3c/s00007/g01' → 's00007/g01' (the run is the screen's)."""
    return (group_id or "").split("/", 1)[-1][-10:]


class TrajectoriesScreen(PagedScreen):
    LABEL = "Rollouts"
    BINDINGS = [
        Binding("escape", "back", "Back", id="traj.back", tooltip="Leave compare mode, then the rollouts"),
        Binding("c", "compare", "Compare", id="traj.compare",
                tooltip="Another rollout of the same group side by side (again: the next one)"),
        Binding("tab", "app.focus_next", "Turns", show=False, id="traj.next_pane",
                tooltip="Move between the table and the turns"),
        Binding("right_square_bracket", "page(1)", "Next page", show=False, id="traj.next_page"),
        Binding("left_square_bracket", "page(-1)", "Prev page", show=False, id="traj.prev_page"),
    ]

    def __init__(self, run_id: str | None = None, env_id: str | None = None, **kwargs):
        super().__init__(**kwargs)
        self.run_id, self.env_id = run_id, env_id
        self.partner: str | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield DataTable(id="traj-table", cursor_type="row", zebra_stripes=True)
        yield Static("", id="traj-info", classes="info-line")
        with Horizontal(id="traj-panes"):
            yield TrajectoryView(id="traj-left")
            yield TrajectoryView(id="traj-right", classes="hidden")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = (f"run {self.run_id}" if self.run_id else "all rollouts") + (
            f" · {self.env_id}" if self.env_id else "")
        self.table.add_columns("rollout", "env", "group", "reward", "turns", "status")
        self.show_first(self.table)

    @property
    def table(self) -> DataTable:
        return self.query_one("#traj-table", DataTable)

    @property
    def left(self) -> TrajectoryView:
        return self.query_one("#traj-left", TrajectoryView)

    @property
    def right(self) -> TrajectoryView:
        return self.query_one("#traj-right", TrajectoryView)

    def reload(self) -> None:
        keep = selected_key(self.table)
        self.total = self.store.trajectories.count(run_id=self.run_id, env_id=self.env_id)
        self.rows = {t.id: t for t in self.store.trajectories.list(run_id=self.run_id, env_id=self.env_id,
                                                                   limit=PAGE, offset=self.page_start)}
        fill_table(self.table, [
            (t.id, (short_id(t.id, 12), short_id(t.env_id, 24), short_group(t.group_id), f"{t.reward:.3f}", t.n_turns,
                    t.status))
            for t in self.rows.values()], keep)
        self.show_selected()

    def show_selected(self) -> None:
        key = selected_key(self.table)
        if key is None:
            self.query_one("#traj-info", Static).update("no rollouts stored for this run")
            self.left.show(None)
            return
        if self.left.trajectory is None or self.left.trajectory.id != key:  # a stored rollout never changes: keep the place
            self.left.show(self.store.trajectories.get(key))
        if self.partner is not None:
            self.show_partner(key)
        else:
            end = self.page_start + len(self.rows)
            paging = f"{self.page_start + 1}–{end} of {self.total:,} ([ ])" if self.total > PAGE else f"{self.total}"
            self.query_one("#traj-info", Static).update(
                f"{paging} rollouts · tab/enter: read the turns · c: compare within the group")

    def group_mates(self, key: str) -> list[str]:
        group = self.rows[key].group_id
        if not group:
            return []
        return [t.id for t in self.store.trajectories.list(group_id=group) if t.id != key]

    def show_partner(self, key: str) -> None:
        mates = self.group_mates(key)
        info = self.query_one("#traj-info", Static)
        if not mates:
            info.update("this rollout has no other rollout in its group")
            self.leave_compare()
            return
        if self.partner not in mates:
            self.partner = mates[0]
        self.right.remove_class("hidden")
        if self.right.trajectory is None or self.right.trajectory.id != self.partner:
            self.right.show(self.store.trajectories.get(self.partner))
        info.update(f"{short_id(key, 12)} ↔ {short_id(self.partner, 12)} · group {short_group(self.rows[key].group_id)}"
                    f" · c: next · esc: leave compare")

    def leave_compare(self) -> None:
        self.partner = None
        self.right.add_class("hidden")
        if self.right.has_focus:
            self.left.focus()

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self.show_selected()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self.left.focus()

    def action_compare(self) -> None:
        key = selected_key(self.table)
        if key is None:
            return
        mates = self.group_mates(key)
        if self.partner in mates and len(mates) > 1:
            self.partner = mates[(mates.index(self.partner) + 1) % len(mates)]
        self.partner = self.partner or (mates[0] if mates else None)
        self.show_partner(key)

    def action_back(self) -> None:
        if self.partner is not None:
            self.leave_compare()
            self.show_selected()
        else:
            self.app.pop_screen()
