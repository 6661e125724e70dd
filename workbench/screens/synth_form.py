"""'Synthesize N environments from this seed' — a small form; dismisses with the job's options or None."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Select

from engine.backends import SYNTHESIS_BACKENDS


class SynthFormScreen(ModalScreen[dict | None]):
    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="synth.cancel"),
        Binding("ctrl+s", "submit", "Start", id="synth.submit"),
    ]

    def __init__(self, seed_id: str, available: bool, default_backend: str = "procedural"):
        super().__init__()
        self.seed_id, self.available, self.default_backend = seed_id, available, default_backend

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(f"Synthesize environments from seed {self.seed_id}", classes="dialog-title")
            if not self.available:
                yield Label("`sandmle synth` is missing from this install (reinstall sandmle): synthesis cannot start.",
                            classes="dialog-error", id="synth-missing")
            with Horizontal(classes="form-row"):
                yield Label("how many", classes="form-label")
                yield Input("4", id="synth-count", type="integer", compact=True)
            with Horizontal(classes="form-row"):
                yield Label("backend", classes="form-label")
                yield Select([(b, b) for b in SYNTHESIS_BACKENDS], value=self.default_backend, allow_blank=False,
                             id="synth-backend")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Start (ctrl+s)", id="start", variant="primary", disabled=not self.available, compact=True)
                yield Button("Cancel (esc)", id="cancel", compact=True)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "start":
            self.action_submit()
        else:
            self.action_cancel()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.action_submit()

    def action_submit(self) -> None:
        if not self.available:
            self.notify("`sandmle synth` is not available in this build", severity="error")
            return
        raw = self.query_one("#synth-count", Input).value.strip()
        if not raw.isdigit() or int(raw) < 1:
            self.notify("how many: a whole number ≥ 1", severity="error")
            return
        backend = self.query_one("#synth-backend", Select).value
        self.dismiss({"seed": self.seed_id, "count": int(raw), "backend": backend})

    def action_cancel(self) -> None:
        self.dismiss(None)
