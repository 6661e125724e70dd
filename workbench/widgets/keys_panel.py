"""The `?` panel: the keys of this screen first, then those of the focused pane, then the app's, and Textual's
own cursor and scroll keys last (Textual's KeyPanel lists the focused widget's cursor keys first)."""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import KeyPanel, Static

GROUPS = ("this screen", "this pane", "everywhere", "moving around")


def ours(namespace: object, binding: Binding) -> bool:
    """Whether ``binding`` comes from a workbench class (not from Textual's own widgets and screens)."""
    return any(cls.__module__.startswith("workbench.")
               and any(isinstance(b, Binding) and b.action == binding.action for b in vars(cls).get("BINDINGS", ()))
               for cls in type(namespace).__mro__)


def key_groups(screen) -> list[tuple[str, list[tuple[str, str]]]]:
    """[(group title, [(keys, description), …]), …] in the order of GROUPS, empty groups left out."""
    app = screen.app
    found: dict[str, dict[str, tuple[list[str], str]]] = {g: {} for g in GROUPS}
    for namespace, binding, _enabled, _tooltip in screen.active_bindings.values():
        if binding.system:
            continue
        if not ours(namespace, binding):
            group = GROUPS[3]
        else:
            group = GROUPS[0] if namespace is screen else GROUPS[2] if namespace is app else GROUPS[1]
        keys, description = found[group].setdefault(binding.action, ([], binding.description or binding.action))
        shown = app.get_key_display(binding)
        if shown not in keys:
            keys.append(shown)
    return [(g, [(" ".join(k), d) for k, d in found[g].values()]) for g in GROUPS if found[g]]


class KeysTable(Static):
    def render(self) -> Any:
        table = Table(box=None, show_header=False, padding=(0, 1, 0, 0), expand=False)
        table.add_column(justify="right", style="bold")
        table.add_column()
        for n, (title, rows) in enumerate(key_groups(self.screen)):
            table.add_row("", Text(title, style="underline"), end_section=False)
            for keys, description in rows:
                table.add_row(keys, description)
            if n < len(GROUPS) - 1:
                table.add_row("", "")
        return table


class KeysPanel(KeyPanel):
    """Mounted on the active screen by `?`; recomposes when the bindings change (focus moves)."""

    def compose(self) -> ComposeResult:
        yield KeysTable()
