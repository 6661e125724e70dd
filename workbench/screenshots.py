"""Write the README's screenshots: ``python -m workbench.screenshots [FOLDER]`` builds the demo store in a temporary
folder, opens each screen at 80x24 and saves an SVG (Textual's screenshot) plus a plain-text capture."""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path

from engine.config import Settings
from store import Store

from .app import Workbench
from .capture import screen_text
from .demo import populate

SHOTS = {  # file stem → keys pressed after the app opened
    "seeds": [],
    "environments": ["2"],
    "environment-data": ["2", "enter", "right_square_bracket"],
    "sandbox": ["3"],
    "training": ["4"],
    "rollout-turns": ["4", "enter", "tab"],
    "rollouts-compare": ["4", "enter", "c"],
    "eval": ["5"],
    "jobs": ["6"],
}


async def shoot(folder: Path, store_dir: Path) -> list[Path]:
    store = Store(store_dir / "sandmle.db")
    populate(store)
    written = []
    for stem, keys in SHOTS.items():
        app = Workbench(store=store, settings=Settings())
        async with app.run_test(size=(80, 24)) as pilot:
            for key in keys:
                await pilot.press(key)
                await pilot.pause(0.3)
            for _ in range(100):
                if getattr(app.screen, "ready", False):
                    break
                await pilot.pause(0.05)
            await pilot.pause(0.5)
            svg = folder / f"{stem}.svg"
            app.save_screenshot(filename=svg.name, path=str(folder))
            (folder / f"{stem}.txt").write_text(screen_text(app) + "\n")
            written += [svg, folder / f"{stem}.txt"]
    store.close()
    return written


def main() -> None:
    folder = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/screenshots").resolve()
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="sandmle-shots-") as tmp:
        os.environ["SANDMLE_HOME"] = tmp
        os.environ["SANDMLE_CONFIG"] = str(Path(tmp) / "config.toml")
        for path in asyncio.run(shoot(folder, Path(tmp))):
            print(path)


if __name__ == "__main__":
    main()
