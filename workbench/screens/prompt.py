"""A small modal that asks for one line of text (a tag, a folder, a benchmark name)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label


class PromptScreen(ModalScreen[str | None]):
    BINDINGS = [Binding("escape", "cancel", "Cancel", id="prompt.cancel")]

    def __init__(self, title: str, placeholder: str = "", value: str = "", help_text: str = ""):
        super().__init__()
        self.title_text, self.placeholder, self.value, self.help_text = title, placeholder, value, help_text

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(self.title_text, classes="dialog-title")
            if self.help_text:
                yield Label(self.help_text, classes="dialog-help")
            yield Input(value=self.value, placeholder=self.placeholder, id="prompt-input", compact=True)
            yield Label("enter: ok · escape: cancel", classes="dialog-help")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip() or None)

    def action_cancel(self) -> None:
        self.dismiss(None)
