"""Snapshot tests of each screen at 80x24 on the stable demo data (cursor blink off).

First run, or after an intended change of looks: `pytest tests/test_snapshots.py --snapshot-update`,
then review and commit tests/__snapshots__/."""

from __future__ import annotations

import pytest
from textual.widgets import Input

from engine.config import Settings
from workbench.app import Workbench
from demo_store import populate


@pytest.fixture
def demo_app(store):
    populate(store)
    return lambda **kw: Workbench(store=store, settings=Settings(**kw))


def go(*keys: str):
    """Press ``keys`` one by one, each time waiting until the screen has its data on screen."""

    async def run(pilot) -> None:
        await settle(pilot)
        for key in keys:
            await pilot.press(key)
            await settle(pilot)

    return run


async def settle(pilot) -> None:
    """Wait until the active screen has its data on screen; turn the cursor blink off everywhere."""
    for _ in range(200):
        if getattr(pilot.app.screen, "ready", False):
            break
        await pilot.pause(0.02)
    for box in pilot.app.screen.query(Input):
        box.cursor_blink = False
    await pilot.pause(0.3)
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


@pytest.mark.parametrize("name,keys", [
    ("seeds", []),
    ("environments", ["2"]),
    ("environment_data", ["2", "enter", "right_square_bracket"]),
    ("sandbox", ["3"]),
    ("training", ["4"]),
    ("rollout_turns", ["4", "enter", "tab"]),
    ("rollouts_compare", ["4", "enter", "c"]),
    ("eval", ["5"]),
    ("eval_results", ["5", "tab"]),
    ("jobs", ["6"]),
])
def test_screen(snap_compare, demo_app, name, keys):
    assert snap_compare(demo_app(), terminal_size=(80, 24), run_before=go(*keys))


def test_light_theme(snap_compare, demo_app):
    app = demo_app(workbench={"theme": "sandmle-light"})
    assert snap_compare(app, terminal_size=(80, 24), run_before=go("2"))
