"""Asked on quit while jobs run: stop them, leave them running in the background, or stay."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label


class ConfirmQuitScreen(ModalScreen[str | None]):
    """Dismisses with "stop", "leave" or None (cancel)."""

    BINDINGS = [
        Binding("s", "choose('stop')", "Stop jobs and quit", id="quit.stop"),
        Binding("l", "choose('leave')", "Leave running and quit", id="quit.leave"),
        Binding("escape,c", "choose('')", "Cancel", id="quit.cancel"),
    ]

    def __init__(self, labels: list[str]):
        super().__init__()
        self.labels = labels

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(f"{len(self.labels)} job(s) still running:", classes="dialog-title")
            for label in self.labels[:5]:
                yield Label(f"  • {label[:60]}")
            yield Label("Stop them (their work so far is kept), or leave them running in the background?",
                        classes="dialog-help")
            with Horizontal(classes="dialog-buttons"):
                yield Button("[s] Stop & quit", id="stop", variant="error", compact=True)
                yield Button("[l] Leave running", id="leave", variant="primary", compact=True)
                yield Button("[c] Cancel", id="cancel", compact=True)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.action_choose("" if event.button.id == "cancel" else event.button.id)

    def action_choose(self, choice: str) -> None:
        self.dismiss(choice or None)
