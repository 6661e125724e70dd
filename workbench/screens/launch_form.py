"""The launch form for SFT / GRPO / eval runs. The command line is built from the options the installed
``sandmle`` command really accepts; a field it does not accept is named, never silently dropped. The form opens
with the values of the last launch (``<data dir>/workbench/launch.json``), overridden by the selected run's, and
says which environments the run will use and how many."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Select

from store import Store

from ..jobs import build_argv, command_options, resolve_command
from ..runinfo import split_size

#: run kind → the sandmle subcommand that runs it
COMMANDS = {"sft": ["train", "sft"], "grpo": ["train", "grpo"], "eval": ["eval"]}
#: form field → option names the CLI may use for it (first one found wins)
ALIASES = {
    "model": ["model", "base_model", "policy"],
    "adapter": ["adapter", "init_adapter", "checkpoint"],
    "envs": ["env_split", "split", "envs", "environments", "env_ids"],
    "env_ids": ["env_ids", "envs", "env"],
    "group_size": ["group_size", "group", "num_generations", "g"],
    "steps": ["steps", "max_steps", "num_steps"],
    "backend": ["backend", "sandbox", "sandbox_backend", "executor"],
    "policy": ["policy"],
}
SPLITS = ("train", "heldout", "all")
FIELDS = [("model", "model", "tiny"), ("adapter", "adapter", ""), ("envs", "environments", "train"),
          ("group_size", "group size", "4"), ("steps", "steps", "10"), ("backend", "backend", ""),
          ("extra", "more options", "")]


def last_path(data_dir: Path) -> Path:
    return Path(data_dir) / "workbench" / "launch.json"


def load_last(data_dir: Path) -> dict[str, str]:
    """The values of the last launch from this data dir ({"kind": …, field: value}); {} before the first."""
    try:
        data = json.loads(last_path(data_dir).read_text())
    except (OSError, ValueError):
        return {}
    return {k: str(v) for k, v in data.items() if isinstance(v, (str, int, float))} if isinstance(data, dict) else {}


def save_last(data_dir: Path, kind: str, values: dict[str, str]) -> None:
    path = last_path(data_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"kind": kind, **values}, indent=2))


def run_defaults(run: dict[str, Any] | None) -> dict[str, str]:
    """Form values taken from a training run: its model, environments, group size and steps; as adapter, the one
    an SFT run produced (to go on with GRPO from it), else the adapter the run started from; the model a full
    fine-tuning SFT run produced in place of its model."""
    if run is None or run["kind"] not in ("sft", "grpo"):
        return {}
    cfg, summary = run.get("config") or {}, run.get("summary") or {}
    adapter = summary.get("adapter") if run["kind"] == "sft" else cfg.get("adapter")
    # a full fine-tuning run made a model (no adapter): go on from that model
    model = summary.get("model") if run["kind"] == "sft" and summary.get("model") else cfg.get("model")
    values = {"model": model, "adapter": adapter, "group_size": cfg.get("group_size"),
              "steps": cfg.get("steps") if run["kind"] == "grpo" else None,
              "envs": ",".join(cfg["env_ids"]) if cfg.get("env_ids") else cfg.get("env_split")}
    return {k: str(v) for k, v in values.items() if v not in (None, "")}


def envs_text(store: Store, envs: str) -> str:
    """What the environments field means: a split and how many verified environments it has, or a list of ids."""
    if envs in SPLITS:
        n = split_size(store, envs)
        hint = "" if n else " (none: synthesize some, or move some with p on Environments)"
        return f"split {envs}: {n} verified environment{'s' if n != 1 else ''}{hint}"
    ids = [e.strip() for e in envs.split(",") if e.strip()]
    known = sum(store.envs.find(e) is not None for e in ids)
    return f"{len(ids)} environment id(s), {known} in the store"


def map_values(kind: str, values: dict[str, str]) -> tuple[list[str], list[str], bool]:
    """(argv, fields the command does not accept, command available)."""
    path = COMMANDS[kind]
    if resolve_command(path) is None:
        return [], [], False
    accepted = command_options(path)
    mapped, missing = {}, []
    values = dict(values)
    extra = values.pop("extra", "")
    envs = values.get("envs", "")
    if kind == "eval":  # eval takes a policy spec and one --envs selector
        model, adapter = values.pop("model", ""), values.pop("adapter", "")
        if model:
            values["policy"] = model if (":" in model or model == "scripted") else (
                f"hf:{model}" + (f",adapter={adapter}" if adapter else ""))
        if envs in ("train", "heldout"):
            values["envs"] = f"split:{envs}"
    elif envs and envs not in SPLITS:  # a list of environment ids rather than a split
        values["env_ids"] = [e.strip() for e in envs.split(",") if e.strip()]
        values.pop("envs")
    for field, value in values.items():
        if not value:
            continue
        aliases = ["envs"] + ALIASES["envs"] if (kind == "eval" and field == "envs") else ALIASES.get(field, [field])
        name = next((a for a in aliases if a in accepted), None)
        if name is None:
            missing.append(field)
        else:
            mapped[name] = value
    if "json" in accepted:
        mapped["json"] = True
    argv, _ = build_argv(path, mapped)
    try:
        argv += shlex.split(extra)
    except ValueError:
        missing.append("more options (unbalanced quotes)")
    return argv, missing, True


class LaunchFormScreen(ModalScreen[dict | None]):
    """Dismisses with {"kind", "argv", "values"} or None."""

    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="launch.cancel"),
        Binding("ctrl+s", "submit", "Launch", id="launch.submit"),
    ]

    def __init__(self, kind: str = "grpo", defaults: dict[str, str] | None = None):
        super().__init__()
        self.kind = kind
        self.defaults = defaults or {}

    def compose(self) -> ComposeResult:
        with VerticalScroll(classes="dialog"):
            yield Label("Launch a run", classes="dialog-title")
            with Horizontal(classes="form-row"):
                yield Label("kind", classes="form-label")
                yield Select([("GRPO (RL)", "grpo"), ("SFT", "sft"), ("eval", "eval")], value=self.kind,
                             allow_blank=False, id="launch-kind")
            for name, label, default in FIELDS:
                with Horizontal(classes="form-row"):
                    yield Label(label, classes="form-label")
                    yield Input(self.defaults.get(name, default), id=f"launch-{name}", compact=True)
            yield Label("", id="launch-envs-info", classes="dialog-help")
            yield Label("", id="launch-command", classes="dialog-help")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Launch (ctrl+s)", id="start", variant="primary", compact=True)
                yield Button("Cancel (esc)", id="cancel", compact=True)

    def on_mount(self) -> None:
        self.update_preview()

    def values(self) -> dict[str, str]:
        return {name: self.query_one(f"#launch-{name}", Input).value.strip() for name, _, _ in FIELDS}

    def update_preview(self) -> None:
        kind = self.query_one("#launch-kind", Select).value
        argv, missing, ok = map_values(kind, self.values())
        self.query_one("#launch-envs-info", Label).update(envs_text(self.app.store, self.values()["envs"]))
        label = self.query_one("#launch-command", Label)
        if not ok:
            label.update(f"[b red]`sandmle {' '.join(COMMANDS[kind])}` is missing from this install (reinstall "
                         f"sandmle): this run cannot start.[/]")
        else:
            text = "runs: sandmle " + " ".join(argv)
            if missing:
                text += f"\n[yellow]not accepted by this command (ignored): {', '.join(missing)}[/]"
            label.update(text)
        self.query_one("#start", Button).disabled = not ok

    def on_select_changed(self, event: Select.Changed) -> None:
        self.update_preview()

    def on_input_changed(self, event: Input.Changed) -> None:
        self.update_preview()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.action_submit() if event.button.id == "start" else self.action_cancel()

    def action_submit(self) -> None:
        kind = self.query_one("#launch-kind", Select).value
        argv, missing, ok = map_values(kind, self.values())
        if not ok:
            self.notify(f"`sandmle {' '.join(COMMANDS[kind])}` is missing from this install", severity="error")
            return
        self.dismiss({"kind": kind, "argv": argv, "ignored": missing, "values": self.values()})

    def action_cancel(self) -> None:
        self.dismiss(None)
