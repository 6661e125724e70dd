"""Measure the workbench's time to first paint of each screen on a given store. A program, not a module: package
data of ``engine.bench`` that ``sandmle bench tui`` (:mod:`engine.bench.tui`) runs in a child process, so the engine
never imports the UI; it starts the app the way ``sandmle`` does and drives it headless at 80x24.

    python firstpaint.py --db DATA_DIR/sandmle.db [--env ENV_ID] [--run RUN_ID]

Prints JSON: [{"screen", "first_paint_s"}, …]."""

from __future__ import annotations

import argparse
import asyncio
import json
import time

from textual.app import App
from textual.widgets import DataTable, Footer, Input, Static

from engine.config import Settings
from store import Store
from workbench.app import SCREENS, Workbench
from workbench.screens.env_detail import EnvDetailScreen
from workbench.screens.trajectories import TrajectoriesScreen


async def measure(db: str, env_id: str | None = None, run_id: str | None = None,
                  size: tuple[int, int] = (80, 24)) -> list[dict]:
    store = Store(db)
    rows: list[dict] = []

    async def settle(pilot, screen, timeout: float = 30.0) -> None:
        end = time.monotonic() + timeout
        while not getattr(screen, "ready", False):
            if time.monotonic() > end:
                raise TimeoutError(f"{type(screen).__name__} did not paint in {timeout:.0f} s")
            await pilot.pause(0.001)
        await pilot.pause()  # one more refresh: what is ready is on screen

    rows.append({"screen": "bare Textual app (reference)", "first_paint_s": await bare_app(size)})
    t0 = time.perf_counter()
    app = Workbench(store=store, settings=Settings())
    async with app.run_test(size=size) as pilot:
        while app.current_mode != "seeds":
            await pilot.pause(0.001)
        await settle(pilot, app.screen)
        rows.append({"screen": "seeds (app start)", "first_paint_s": time.perf_counter() - t0})
        for mode in SCREENS:
            if mode == "seeds":
                continue
            t = time.perf_counter()
            await app.switch_mode(mode)
            await settle(pilot, app.screen)
            rows.append({"screen": mode, "first_paint_s": time.perf_counter() - t})
        if env_id:
            await app.switch_mode("environments")
            t = time.perf_counter()
            detail = EnvDetailScreen(env_id)
            await app.push_screen(detail)
            await settle(pilot, detail)
            rows.append({"screen": "environment detail", "first_paint_s": time.perf_counter() - t})
        if run_id:
            await app.switch_mode("training")
            t = time.perf_counter()
            rollouts = TrajectoriesScreen(run_id=run_id)
            await app.push_screen(rollouts)
            await settle(pilot, rollouts)
            rows.append({"screen": "rollouts (turn view)", "first_paint_s": time.perf_counter() - t})
    store.close()
    return rows


async def bare_app(size: tuple[int, int]) -> float:
    """First paint of a bare Textual app with an input, a table of 10 rows and a footer: the floor this machine
    sets under any screen (measured side by side, since a shared machine is noisy)."""
    class Bare(App):
        def compose(self):
            yield Input()
            yield DataTable()
            yield Static("detail")
            yield Footer()

        def on_mount(self) -> None:
            table = self.query_one(DataTable)
            table.add_columns("a", "b", "c")
            for i in range(10):
                table.add_row(str(i), "x" * 10, "y" * 10)

    t = time.perf_counter()
    app = Bare()
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
    return time.perf_counter() - t


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--db", required=True, help="the store to open")
    parser.add_argument("--env", help="an environment id with files, for the detail screen")
    parser.add_argument("--run", help="a run with rollouts, for the rollouts screen")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(measure(args.db, args.env, args.run))))


if __name__ == "__main__":
    main()
