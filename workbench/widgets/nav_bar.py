"""The top line of every main screen: the product name and the six screens with their keys (active one lit)."""

from __future__ import annotations

from textual.widgets import Static

ITEMS = (("seeds", "1", "Seeds"), ("environments", "2", "Envs"), ("sandbox", "3", "Sandbox"),
         ("training", "4", "Training"), ("eval", "5", "Eval"), ("jobs", "6", "Jobs"))


class NavBar(Static):
    DEFAULT_CSS = """
    NavBar { height: 1; background: $panel; color: $foreground; padding: 0 1; }
    """

    def __init__(self, active: str, **kwargs):
        super().__init__(**kwargs)
        self.active = active

    def on_mount(self) -> None:
        self.update(self.markup())

    def markup(self) -> str:
        parts = []
        for mode, key, label in ITEMS:
            if mode == self.active:
                parts.append(f"[reverse b] {key} {label} [/]")
            else:
                parts.append(f" [b]{key}[/b] {label} ")
        return "[b $accent]SandMLE[/] " + "".join(parts)
