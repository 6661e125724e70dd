"""The Textual workbench. Built with its store passed in (``Workbench(store=…)``), so tests run it on a tmp store.

Six screens, each a mode (so each keeps its state when you switch): Seeds, Environments, Sandbox, Training,
Eval and Jobs. Long work runs as ``sandmle`` child processes recorded in the store (see ``workbench/jobs.py``);
the app polls them, keeps them when you change screens, and asks before quitting while one runs. Screens refresh
themselves when anything (another process included) commits to the store: the app watches SQLite's
``data_version``, which changes with every commit made through another connection."""

from __future__ import annotations

import importlib
import threading
import time
from functools import partial
from typing import Iterable

from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen

from engine.config import Settings, load_settings
from engine.errors import SandmleError
from store import Store

from .jobs import Job, JobManager
from .messages import JobFinished, JobStarted
from .screens.base import BaseScreen
from .screens.confirm_quit import ConfirmQuitScreen
from .screens.environments import EnvironmentsScreen
from .screens.eval import EvalScreen
from .screens.jobs import JobsScreen
from .screens.sandbox import SandboxScreen
from .screens.seeds import SeedsScreen
from .screens.training import TrainingScreen
from .widgets.keys_panel import KeysPanel
from .widgets.trajectory_view import code_highlighter
from .themes import DEFAULT_THEME, THEMES_DIR, save_theme, saved_theme, shipped_themes

#: mode name → (screen class, key)
SCREENS = {
    "seeds": (SeedsScreen, "1"),
    "environments": (EnvironmentsScreen, "2"),
    "sandbox": (SandboxScreen, "3"),
    "training": (TrainingScreen, "4"),
    "eval": (EvalScreen, "5"),
    "jobs": (JobsScreen, "6"),
}


class Workbench(App):
    """SandMLE Workbench: curate seeds, inspect environments and sandbox logs, train and evaluate agents."""

    TITLE = "SandMLE Workbench"
    CSS_PATH = [THEMES_DIR / "base.tcss"]
    MODES = {name: cls for name, (cls, _) in SCREENS.items()}
    BINDINGS = [
        *[Binding(key, f"switch_mode('{name}')", cls.LABEL, id=f"nav.{name}",
                  tooltip=f"Go to the {cls.LABEL} screen", show=False)
          for name, (cls, key) in SCREENS.items()],
        Binding("q", "quit", "Quit", id="app.quit"),
        Binding("ctrl+q", "quit", "Quit", show=False, priority=True, id="app.quit_now"),
        Binding("ctrl+t", "next_theme", "Theme", show=False, id="app.theme"),
        Binding("r", "refresh_screen", "Refresh", id="app.refresh", show=False,
                tooltip="Re-read this screen from the store (screens also refresh when it changes)"),
        Binding("question_mark", "toggle_help", "Keys", id="app.help"),
    ]

    def __init__(self, store: Store, *, settings=None, poll_s: float = 0.5, **kwargs):
        super().__init__(**kwargs)
        self.store = store
        try:
            self.settings = settings or load_settings()
        except SandmleError:
            self.settings = Settings()
        self.jobs = JobManager(store)
        self.poll_s = poll_s
        #: bumped whenever the store changed under us; a screen re-reads when it has seen an older one
        self.store_version = 0
        self._data_version = self._read_data_version()
        self._stale = False
        self._last_reload = 0.0
        self._theme_ready = False
        for theme in shipped_themes():
            self.register_theme(theme)
        if self.settings.workbench.keymap:
            self.set_keymap(self.settings.workbench.keymap)
        wanted = self.settings.workbench.theme if settings is not None else saved_theme()
        self.theme = wanted if wanted in self.available_themes else DEFAULT_THEME

    # ------------------------------------------------------------------ start
    def on_mount(self) -> None:
        # pandas (~0.7 s) and pygments' lexers take long to import: do it now, off the UI thread, before a
        # dataset preview or a highlighted description needs them
        self.set_timer(1.0, threading.Thread(target=_prewarm, daemon=True).start)
        self._theme_ready = True
        self.switch_mode("seeds")
        self.set_interval(self.poll_s, self.poll_jobs)
        self.set_interval(self.poll_s, self.poll_store)

    def get_default_screen(self) -> Screen:
        return Screen(id="_default")

    # ------------------------------------------------------------------ themes
    def watch_theme(self, name: str) -> None:
        if self._theme_ready:
            try:
                save_theme(name)
            except Exception as exc:  # noqa: BLE001 - a read-only config must not break the UI
                self.notify(f"could not remember the theme: {exc}", severity="warning")

    def action_next_theme(self) -> None:
        names = [t.name for t in shipped_themes()]
        self.theme = names[(names.index(self.theme) + 1) % len(names)] if self.theme in names else names[0]
        self.notify(f"theme: {self.theme}", timeout=2)

    # ------------------------------------------------------------------ jobs
    def launch_job(self, kind: str, argv: list[str], label: str, **extra) -> Job | None:
        """Start ``sandmle <argv>`` in the background; the Jobs screen shows it."""
        try:
            job = self.jobs.launch(kind, argv, label, **extra)
        except OSError as exc:
            self.notify(f"could not start {label}: {exc}", severity="error")
            return None
        self.notify(f"started: {label} (6: jobs)", title="job", timeout=4)
        self.post_message(JobStarted(job.run_id, label))
        return job

    def poll_jobs(self) -> None:
        for job in self.jobs.poll():
            self.post_message(JobFinished(job.run_id, job.status))

    def on_job_started(self, event: JobStarted) -> None:
        self.store_changed(now=True)

    def on_job_finished(self, event: JobFinished) -> None:
        job = self.jobs.jobs.get(event.run_id)
        label = job.label if job else event.run_id
        severity = "information" if event.status == "done" else "error" if event.status == "failed" else "warning"
        detail = "" if event.status == "done" or job is None else f": {job.last_line()[:80]}"
        self.notify(f"{label}: {event.status}{detail}", title="job", severity=severity, timeout=8)
        self.store_changed(now=True)

    # ------------------------------------------------------------------ the store changed
    def _read_data_version(self) -> int:
        return self.store.data_version()

    def poll_store(self) -> None:
        """Another process (or another connection of this one) committed: refresh the active screen."""
        version = self._read_data_version()
        if version != self._data_version:
            self._data_version = version
            self.store_changed()
        elif self._stale:
            self._refresh_active(force=False)

    def store_changed(self, now: bool = False) -> None:
        """Mark every screen stale and refresh the active one (at most once a second unless ``now``)."""
        self.store_version += 1
        self._stale = True
        self._refresh_active(force=now)

    def _refresh_active(self, force: bool) -> None:
        if not force and time.monotonic() - self._last_reload < 1.0:
            return  # the next poll picks it up
        self._last_reload = time.monotonic()
        self._stale = False
        screen = self.screen
        # it has loaded once (composed), and the app is not shutting down (its screens lose their widgets first)
        if isinstance(screen, BaseScreen) and screen.loaded_version >= 0 and self.is_running:
            screen.refresh_data()

    def action_refresh_screen(self) -> None:
        self.store_version += 1
        self._refresh_active(force=True)
        self.notify("refreshed", timeout=1)

    # ------------------------------------------------------------------ quit
    async def action_quit(self) -> None:
        running = self.jobs.running()
        if not running:
            self.exit()
            return

        def done(choice: str | None) -> None:
            if choice == "stop":
                self.jobs.stop_all()
                self.exit()
            elif choice == "leave":
                self.exit(message=f"{len(running)} job(s) left running; `sandmle` shows them on the Jobs screen.")

        self.push_screen(ConfirmQuitScreen([j.label for j in running]), done)

    def action_toggle_help(self) -> None:
        panels = self.screen.query(KeysPanel)
        if panels:
            panels.remove()
        else:
            self.screen.mount(KeysPanel())

    # ------------------------------------------------------------------ command palette
    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        """Every action: screen switches, every binding of every screen (switching screen first), the app's own."""
        yield from super().get_system_commands(screen)
        for name, (cls, key) in SCREENS.items():
            yield SystemCommand(f"Go to {cls.LABEL}", f"key {key} · the {cls.LABEL} screen",
                                partial(self.switch_mode, name))
        seen: set[str] = set()
        active = type(screen)
        groups = [(None, active)] + [(name, cls) for name, (cls, _) in SCREENS.items() if cls is not active]
        for mode, cls in groups:
            for binding in getattr(cls, "BINDINGS", []):
                if not isinstance(binding, Binding) or binding.id in seen or binding.action.startswith("app."):
                    continue
                seen.add(binding.id)
                label = getattr(cls, "LABEL", "") or cls.__name__
                yield SystemCommand(f"{label}: {binding.description}",
                                    f"key {self.get_key_display(binding)} · id {binding.id}" + (f" · {binding.tooltip}" if binding.tooltip else ""),
                                    partial(self._run_on, mode, binding.action))
        yield SystemCommand("Next theme", "ctrl+t · switch between the themes in themes/ (remembered)",
                            self.action_next_theme)

    def _run_on(self, mode: str | None, action: str) -> None:
        """Run a screen action, switching to its screen first when it lives on another one."""
        if mode is None or self.current_mode == mode:
            self.call_later(self.screen.run_action, action)
            return

        async def go() -> None:
            await self.switch_mode(mode)
            await self.screen.run_action(action)

        self.call_later(go)


def _prewarm() -> None:
    code_highlighter()  # the rollout view's Python lexer (compiling its regexes takes ~0.1 s)
    for name in ("pandas", "pygments.lexers.shell"):
        try:
            importlib.import_module(name)
        except ImportError:
            pass


def run_app(store: Store) -> None:
    Workbench(store=store).run()
