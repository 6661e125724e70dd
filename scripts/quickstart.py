"""The README's quick start, run as written: every ``sandmle`` line of its first console block under "## Quick
start" as a real process on a data dir, with the run ids the train commands print put where the block says
``SFT_RUN`` / ``GRPO_RUN``. ``tests/test_quickstart.py`` checks what it made; ``scripts/screenshots.py`` takes its
pictures of the store it leaves (a real run: real environments, a real SFT and GRPO run of the tiny model, a real
eval).

    python scripts/quickstart.py DATA_DIR      # prints each command and its wall time
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEADING = "## Quick start"


def readme_commands() -> list[list[str]]:
    """The ``sandmle`` lines of the first console block under the quick-start heading, comments cut."""
    text = (ROOT / "README.md").read_text()
    block = text[text.index(HEADING):].split("```console\n", 1)[1].split("```", 1)[0]
    return [shlex.split(line, comments=True)[1:] for line in block.splitlines() if line.startswith("sandmle ")]


def sandmle(home: Path, args: list[str]) -> dict:
    """One command as a process (``--json`` added: its result), on the data dir ``home``."""
    env = {**os.environ, "SANDMLE_HOME": str(home), "OMP_NUM_THREADS": "1"}
    env.pop("SANDMLE_CONFIG", None)
    out = subprocess.run([sys.executable, "-m", "workbench", *args, "--json"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=900)
    if out.returncode != 0:
        raise RuntimeError(f"sandmle {shlex.join(args)} failed ({out.returncode}): {out.stderr[-2000:]}")
    return json.loads(out.stdout)


def run_quickstart(home: Path, log=None) -> dict:
    """Run the block on ``home``; the train summaries by placeholder and the eval summaries by (placeholder,
    split). ``log(line)`` hears each command with its wall time."""
    runs: dict[str, str] = {}
    result: dict = {"home": home, "train": {}, "eval": {}}
    for args in readme_commands():
        filled = list(args)
        for placeholder, run_id in runs.items():
            filled = [a.replace(placeholder, run_id) for a in filled]
        start = time.perf_counter()
        out = sandmle(home, filled)
        if log is not None:
            log(f"{time.perf_counter() - start:6.1f}s  sandmle {shlex.join(filled)}")
        if args[:1] == ["train"]:
            placeholder = "SFT_RUN" if args[1] == "sft" else "GRPO_RUN"
            runs[placeholder] = out["run_id"]
            result["train"][placeholder] = out
        elif args[:1] == ["eval"] and any(a.startswith("hf:") for a in args):
            adapter = next(a for a in args if a.startswith("hf:")).split("adapter=")[1]
            split = args[args.index("--envs") + 1].removeprefix("split:")
            result["eval"][(adapter, split)] = out
    return result


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit("usage: python scripts/quickstart.py DATA_DIR")
    home = Path(sys.argv[1]).resolve()
    home.mkdir(parents=True, exist_ok=True)
    run_quickstart(home, log=lambda line: print(line, flush=True))


if __name__ == "__main__":
    main()
