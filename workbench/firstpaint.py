"""Measure the workbench's time to first paint of each screen on a given store (run by ``sandmle bench tui``
in a child process, so the engine never imports the UI). Prints JSON: [{"screen", "first_paint_s"}, …]."""

from __future__ import annotations

import argparse
import asyncio
import json
import time


async def measure(db: str, env_id: str | None = None, size: tuple[int, int] = (80, 24)) -> list[dict]:
    from engine.config import Settings
    from store import Store

    from .app import SCREENS, Workbench
    from .screens.env_detail import EnvDetailScreen

    store = Store(db)
    rows: list[dict] = []

    async def settle(pilot, screen, timeout: float = 30.0) -> None:
        end = time.monotonic() + timeout
        while not getattr(screen, "ready", False):
            if time.monotonic() > end:
                raise TimeoutError(f"{type(screen).__name__} did not paint in {timeout:.0f} s")
            await pilot.pause(0.001)
        await pilot.pause()  # one more refresh: what is ready is on screen

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
            screen = EnvDetailScreen(env_id)
            await app.push_screen(screen)
            await settle(pilot, screen)
            rows.append({"screen": "environment detail", "first_paint_s": time.perf_counter() - t})
    store.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--db", required=True, help="the store to open")
    parser.add_argument("--env", help="an environment id with files, for the detail screen")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(measure(args.db, args.env))))


if __name__ == "__main__":
    main()
