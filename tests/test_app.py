"""The workbench as a whole: it opens on the store, every screen paints at 80x24, seeds are curated by keyboard,
the theme is switchable and remembered, every binding has an id and a description, and the command palette
offers every screen action."""

from __future__ import annotations

import pytest
from textual.binding import Binding
from textual.widgets import DataTable, Input

from workbench.app import SCREENS, Workbench


async def wait_for(pilot, condition, timeout: float = 10.0) -> None:
    import time

    end = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > end:
            raise AssertionError("condition not met in time")
        await pilot.pause(0.05)


async def goto(pilot, key: str) -> None:
    """Press a screen's key and wait until that screen has its data on screen."""
    mode = next(name for name, (_, k) in SCREENS.items() if k == key)
    await pilot.press(key)
    await wait_for(pilot, lambda: pilot.app.current_mode == mode and getattr(pilot.app.screen, "ready", False))


async def test_seeds_filter_toggle_and_tag(seeded_store):
    app = Workbench(store=seeded_store)
    async with app.run_test(size=(80, 24)) as pilot:
        table = app.screen.query_one("#seeds-table", DataTable)
        assert table.row_count == seeded_store.seeds.count() >= 10
        await pilot.press("slash", *"whale")
        await pilot.pause()
        assert table.row_count == 1
        await pilot.press("escape", "e")
        await pilot.pause()
        assert seeded_store.seeds.get("whale-calls")["enabled"] is False
        await pilot.press("t")
        await pilot.pause()
        await pilot.press(*"audio-hard", "enter")
        await pilot.pause()
        assert "audio-hard" in seeded_store.seeds.get("whale-calls")["tags"]
        await pilot.press("t", "minus", *"audio-hard", "enter")
        await pilot.pause()
        assert "audio-hard" not in seeded_store.seeds.get("whale-calls")["tags"]


async def test_import_folder_from_the_seeds_screen(store):
    from conftest import DATA

    app = Workbench(store=store)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("i")
        await pilot.pause()
        app.screen.query_one(Input).value = str(DATA / "mlebench" / "spooky-mini")
        await pilot.press("enter")
        await wait_for(pilot, lambda: store.seeds.count() == 1)
        await wait_for(pilot, lambda: app.screen.query_one("#seeds-table", DataTable).row_count == 1)


async def test_every_screen_paints_at_80x24(seeded_store):
    app = Workbench(store=seeded_store)
    async with app.run_test(size=(80, 24)) as pilot:
        for mode, (cls, key) in SCREENS.items():
            await pilot.press(key)
            await wait_for(pilot, lambda: app.current_mode == mode and getattr(app.screen, "ready", False))
            assert isinstance(app.screen, cls)
            assert app.screen.size == (80, 24)
        await pilot.press("1")
        assert app.current_mode == "seeds"


async def test_theme_switches_and_is_remembered(store, home):
    from engine.config import load_settings

    app = Workbench(store=store)
    async with app.run_test(size=(80, 24)) as pilot:
        assert app.theme == "sandmle-dark"
        await pilot.press("ctrl+t")
        await pilot.pause()
        assert app.theme == "sandmle-light"
        assert app.current_theme.dark is False
    assert load_settings().workbench.theme == "sandmle-light"
    assert 'theme = "sandmle-light"' in (home / "config.toml").read_text()
    again = Workbench(store=store)
    async with again.run_test(size=(80, 24)):
        assert again.theme == "sandmle-light"


def test_theme_files_are_palettes():
    from workbench.themes import shipped_themes

    themes = {t.name: t for t in shipped_themes()}
    assert {"sandmle-dark", "sandmle-light"} <= set(themes)
    assert themes["sandmle-dark"].dark and not themes["sandmle-light"].dark
    assert themes["sandmle-light"].background.startswith("#f")


def _all_binding_classes():
    import importlib
    import pkgutil

    import workbench.screens
    import workbench.widgets

    classes = [Workbench]
    for pkg in (workbench.screens, workbench.widgets):
        for info in pkgutil.iter_modules(pkg.__path__):
            module = importlib.import_module(f"{pkg.__name__}.{info.name}")
            for obj in vars(module).values():
                if isinstance(obj, type) and obj.__module__ == module.__name__ and "BINDINGS" in vars(obj):
                    classes.append(obj)
    return classes


def test_every_binding_has_an_id_and_a_description():
    classes = _all_binding_classes()
    assert len(classes) >= 10
    ids = []
    for cls in classes:
        for b in vars(cls)["BINDINGS"]:
            assert isinstance(b, Binding), f"{cls.__name__}: use Binding(..., id=...) for {b!r}"
            assert b.id and b.description, f"{cls.__name__}: binding {b.key} needs an id and a description"
            ids.append(b.id)
    assert len(ids) == len(set(ids)), "binding ids must be unique"


async def test_command_palette_offers_every_screen_action(seeded_store):
    app = Workbench(store=seeded_store)
    async with app.run_test(size=(80, 24)) as pilot:
        commands = {c.title: c for c in app.get_system_commands(app.screen)}
        for mode, (cls, _) in SCREENS.items():
            assert f"Go to {cls.LABEL}" in commands
            for b in cls.BINDINGS:
                if not b.action.startswith("app."):
                    assert f"{cls.LABEL}: {b.description}" in commands, (cls.LABEL, b.description)
        # running a command of another screen switches to it first
        commands["Environments: Status"].callback()
        await wait_for(pilot, lambda: app.current_mode == "environments")
        await pilot.pause(0.2)
        assert app.screen.status == "verified"


async def test_quit_without_jobs_exits(store):
    app = Workbench(store=store)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("q")
        await pilot.pause()
        assert not app.is_running


async def test_keymap_from_the_config_remaps_a_binding_by_id(seeded_store):
    from engine.config import Settings

    app = Workbench(store=seeded_store, settings=Settings(workbench={"keymap": {"nav.training": "f4"}}))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("f4")
        await wait_for(pilot, lambda: app.current_mode == "training")


async def test_help_panel_and_palette_by_keyboard(seeded_store):
    from workbench.widgets.keys_panel import KeysPanel, key_groups

    app = Workbench(store=seeded_store)
    async with app.run_test(size=(80, 24)) as pilot:
        await goto(pilot, "4")
        await pilot.press("question_mark")
        await pilot.pause()
        assert app.screen.query(KeysPanel)
        # the screen's own keys come first, Textual's cursor keys of the focused table last
        groups = key_groups(app.screen)
        assert [g for g, _ in groups][0] == "this screen" and groups[-1][0] == "moving around"
        assert ("l", "Launch") in groups[0][1] and ("R", "Resume") in groups[0][1]
        assert any(d == "Cursor up" for _, d in groups[-1][1])
        everywhere = dict((d, k) for k, d in dict(groups)["everywhere"])
        assert everywhere["Refresh"] == "r" and everywhere["Keys"] == "?"
        await pilot.press("question_mark")
        await pilot.pause()
        assert not app.screen.query(KeysPanel)
        # the palette names keys as they are typed
        commands = {c.title: c.help for c in app.get_system_commands(app.screen)}
        assert commands["Environments: Next page"].startswith("key ]")
        assert commands["Seeds: Filter"].startswith("key /")
        assert not any("square_bracket" in h or "slash" in h for h in commands.values())
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"seeds: launch synth")
        await pilot.pause(0.5)
        await pilot.press("enter")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "SynthFormScreen")


def test_one_meaning_per_key_across_the_main_screens():
    """A letter does one thing wherever it is bound (l launches, s stops, r refreshes, t tags…)."""
    meanings: dict[str, set[str]] = {}
    for cls, _ in SCREENS.values():
        for b in cls.BINDINGS:
            if len(b.key) == 1 and b.key.isalpha():
                meanings.setdefault(b.key, set()).add(b.description.split()[0].lower())
    for b in Workbench.BINDINGS:
        if len(b.key) == 1 and b.key.isalpha():
            meanings.setdefault(b.key, set()).add(b.description.split()[0].lower())
    assert {k: v for k, v in meanings.items() if len(v) > 1} == {}
    assert meanings["l"] == {"launch"} and meanings["s"] == {"stop"} and meanings["r"] == {"refresh"}
