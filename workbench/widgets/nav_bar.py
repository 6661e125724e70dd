"""The top line of every main screen: the product name and the six screens with their keys (active one lit), and
"UNISOLATED" where the settings run sandboxes without isolation (``[sandbox] isolation = "none"``)."""

from __future__ import annotations

from textual.widgets import Static

from engine.config import Settings

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
        line = "[b $accent]SandMLE[/] " + "".join(parts)
        return line + (" [b reverse $error]UNISOLATED[/]" if unisolated(self.app) else "")


def unisolated(app: object) -> bool:
    """The app's settings (the workbench's ``settings``) run the local sandbox with no isolation."""
    settings = getattr(app, "settings", None)
    return isinstance(settings, Settings) and settings.sandbox.backend == "local" and \
        settings.sandbox.isolation == "none"
