"""The README's and docs' screenshots of the workbench, taken on a real store: the quick start's own (real
environments, a real SFT and GRPO run of the tiny model, a real eval), never an invented one.

    python scripts/screenshots.py [--home DATA_DIR] [FOLDER]      # default FOLDER: docs/screenshots

With ``--home`` it photographs that data dir as it is (e.g. one ``python scripts/quickstart.py DATA_DIR`` made);
without, it runs the README's quick start into a fresh temporary data dir first (about 5 minutes on two CPU cores;
the same commands, seeds and steps every time: the environments come out the same, while CPU training's noise moves
the rewards and medals from one run to the next).
Each screen is opened at 80x24 and saved as an SVG (Textual's screenshot) plus a plain-text capture (``.txt``),
without this checkout's place on the machine (``<checkout>/.venv/bin/python`` reads ``.venv/bin/python``: the
repository keeps no machine paths, tests/test_repository_hygiene.py). ``make screenshots`` runs it."""

from __future__ import annotations

import argparse
import asyncio
import html
import os
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "scripts")]

from quickstart import run_quickstart  # noqa: E402  (scripts/ is not a package)

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


def screen_text(app) -> str:
    """The active screen as text, one line per terminal row (trailing spaces removed). Textual has no public text
    export; its own SVG export renders the same compositor (a script's concern, kept out of the package)."""
    strips = app.screen._compositor.render_strips()
    return "\n".join(strip.text.rstrip() for strip in strips)


def machine_free(text: str, root: Path = ROOT) -> str:
    """A text capture without ``root/`` (the checkout's folder) in its paths."""
    return text.replace(f"{root}/", "")


_SVG_TEXT = re.compile(r'(<text\b[^>]*\btextLength=")([\d.]+)("[^>]*>)([^<]*)(</text>)')


def machine_free_svg(svg: str, root: Path = ROOT) -> str:
    """Textual's SVG without ``root/`` in its text: each shortened run of text gets the width of its new length
    (``textLength`` is per run, in cells)."""
    def one(m: re.Match) -> str:
        before = html.unescape(m.group(4))
        after = machine_free(before, root)
        if after == before:
            return m.group(0)
        width = float(m.group(2)) / len(before) * len(after)
        return f"{m.group(1)}{width:g}{m.group(3)}{machine_free(m.group(4), root)}{m.group(5)}"

    return _SVG_TEXT.sub(one, svg)


async def shoot(folder: Path, home: Path) -> list[Path]:
    from engine.config import Settings
    from store import Store
    from workbench.app import Workbench

    written = []
    with Store(home / "sandmle.db") as store:
        for stem, keys in SHOTS.items():
            app = Workbench(store=store, settings=Settings())
            async with app.run_test(size=(80, 24)) as pilot:
                for key in keys:
                    await pilot.press(key)
                    await pilot.pause(0.3)
                end = time.monotonic() + 10
                while not getattr(app.screen, "ready", False) and time.monotonic() < end:
                    await pilot.pause(0.05)
                await pilot.pause(0.5)
                svg = folder / f"{stem}.svg"
                app.save_screenshot(filename=svg.name, path=str(folder))
                svg.write_text(machine_free_svg(svg.read_text()))
                (folder / f"{stem}.txt").write_text(machine_free(screen_text(app)) + "\n")
                written += [svg, folder / f"{stem}.txt"]
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", nargs="?", default=str(ROOT / "docs" / "screenshots"))
    parser.add_argument("--home", help="a data dir to photograph as it is (default: run the quick start into a "
                                       "fresh one)")
    args = parser.parse_args()
    folder = Path(args.folder).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="sandmle-shots-") as tmp:
        home = Path(args.home).resolve() if args.home else Path(tmp) / "home"
        if not args.home:
            print(f"running the README's quick start into {home} ...", flush=True)
            home.mkdir()
            run_quickstart(home, log=lambda line: print(line, flush=True))
        elif not (home / "sandmle.db").is_file():
            sys.exit(f"no store in {home} (run: python scripts/quickstart.py {home})")
        os.environ["SANDMLE_HOME"] = str(home)
        os.environ["SANDMLE_CONFIG"] = str(Path(tmp) / "config.toml")  # the default theme, whatever the user's
        for path in asyncio.run(shoot(folder, home)):
            print(path)


if __name__ == "__main__":
    main()
