"""The README's quick start, run as written: every ``sandmle`` line of its console block (split, demonstrations,
``train sft --model tiny``, ``train grpo``, ``eval`` of both adapters) as a real process on a fresh data dir, with
the run ids the train commands print put where the block says ``SFT_RUN`` / ``GRPO_RUN``. The SFT adapter must
produce valid submissions on the training environments, and GRPO with tiny's default configuration must raise the
training reward over its short run (fixed seeds throughout)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

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
    assert out.returncode == 0, f"sandmle {shlex.join(args)}: {out.stderr[-2000:]}"
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def quickstart(tmp_path_factory) -> dict:
    """Run the block; the train summaries by placeholder and the eval summaries by (placeholder, split)."""
    home = tmp_path_factory.mktemp("quickstart")
    runs: dict[str, str] = {}
    result: dict = {"home": home, "train": {}, "eval": {}}
    for args in readme_commands():
        filled = list(args)
        for placeholder, run_id in runs.items():
            filled = [a.replace(placeholder, run_id) for a in filled]
        out = sandmle(home, filled)
        if args[:1] == ["train"]:
            placeholder = "SFT_RUN" if args[1] == "sft" else "GRPO_RUN"
            runs[placeholder] = out["run_id"]
            result["train"][placeholder] = out
        elif args[:1] == ["eval"] and any(a.startswith("hf:") for a in args):
            adapter = next(a for a in args if a.startswith("hf:")).split("adapter=")[1]
            split = args[args.index("--envs") + 1].removeprefix("split:")
            result["eval"][(adapter, split)] = out
    return result


def test_the_block_is_the_documented_path():
    commands = [" ".join(c[:2]) for c in readme_commands()]
    assert {"envs split", "train sft", "train grpo"} <= set(commands)
    assert any(c[:2] == ["train", "sft"] and c[c.index("--model") + 1] == "tiny" for c in readme_commands())
    assert sum(c.startswith("eval ") for c in commands) >= 4  # demonstrations and both adapters


@pytest.mark.slow
def test_the_sft_adapter_submits_valid_files_on_the_training_environments(quickstart):
    sft = quickstart["train"]["SFT_RUN"]
    assert sft["examples"] >= 8 and sft["train_loss"] < 3.0
    train = quickstart["eval"][("SFT_RUN", "train")]
    assert train["summary"]["valid"]["mean"] >= 0.5


@pytest.mark.slow
def test_grpo_with_tinys_defaults_raises_the_training_reward(quickstart):
    from store import Store

    grpo = quickstart["train"]["GRPO_RUN"]
    assert grpo["steps_done"] == 6 and grpo["warnings"] == []
    with Store(quickstart["home"] / "sandmle.db") as store:
        rewards = [v for _, v in sorted(store.runs.metrics(grpo["run_id"])["reward_mean"])]
    # step 1 samples from the SFT adapter; measured 0.56 then 0.93 1.00 0.99 1.00 1.00 (tiny VERSION 4; earlier
    # prompts: 0.70 then 0.90 0.83 0.91 0.90 0.76): batch composition in the shared sampler varies the numerics
    assert len(rewards) == 6
    assert sum(rewards[1:]) / 5 > rewards[0] + 0.05
