"""Ctrl-C on a foreground `train`, `eval` or `synth` exits 130 (so scripts can tell it from a finished run), after
the work done so far is saved: GRPO's checkpoint of its last full step, eval's results so far, synthesis' finished
environments; each run ends `stopped`."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from typing import Callable

import pytest

from conftest import DATA, ROOT
from rl_tiny import build_tiny, register_tiny_env

pytestmark = pytest.mark.slow


def _default_sigint() -> None:
    """As in a terminal's foreground: a suite started in the background (`make test &`) ignores SIGINT, and an
    ignored signal stays ignored across exec."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _sandmle(home, *args: str) -> subprocess.Popen:
    env = {**os.environ, "SANDMLE_HOME": str(home), "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", "workbench", *args], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=_default_sigint)


def _interrupt_when(proc: subprocess.Popen, ready: Callable[[], bool], timeout: float = 300) -> str:
    deadline = time.time() + timeout
    while not ready():
        assert proc.poll() is None, proc.communicate()[1]
        assert time.time() < deadline, "never got far enough to interrupt"
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 130, err
    return err


def test_ctrl_c_on_grpo_exits_130_after_the_checkpoint(home, store, tmp_path):
    model = build_tiny(tmp_path / "tiny")
    env_id = register_tiny_env(store)
    proc = _sandmle(home, "train", "grpo", "--model", str(model), "--env-ids", env_id, "--steps", "50",
                    "--envs-per-step", "1", "--group-size", "2", "--max-turns", "2", "--max-new-tokens", "16",
                    "--save-every", "100", "--lora-r", "4")

    def one_step_done() -> bool:
        runs = store.runs.list(kind="grpo")
        return bool(runs) and store.runs.last_step(runs[0]["id"]) is not None

    _interrupt_when(proc, one_step_done)
    run = store.runs.list(kind="grpo")[0]
    assert run["status"] == "stopped"
    done = store.runs.last_step(run["id"])
    assert run["summary"]["steps_done"] == done < 50
    assert store.runs.latest_checkpoint(run["id"])["step"] == done  # saved although save_every is 100


def test_ctrl_c_on_eval_exits_130_and_keeps_the_results_so_far(home, store):
    proc = _sandmle(home, "eval", "--policy", "scripted", "--scaffold", "oneshot", "--envs",
                    str(DATA / "envs" / "tiny-tabular"), "--rng-seeds", "40", "--workers", "1")

    def one_result() -> bool:
        runs = store.runs.list(kind="eval")
        return bool(runs) and len(store.runs.eval_results(runs[0]["id"])) >= 1

    _interrupt_when(proc, one_result)
    run = store.runs.list(kind="eval")[0]
    assert run["status"] == "stopped"
    assert 1 <= len(store.runs.eval_results(run["id"])) < 40


def test_ctrl_c_on_synth_exits_130(home, seeded_store):
    proc = _sandmle(home, "synth", "--seed", "forest-cover", "--count", "6", "--workers", "1")
    _interrupt_when(proc, lambda: bool(seeded_store.runs.list(kind="synthesis")))
    assert seeded_store.runs.list(kind="synthesis")[0]["status"] == "stopped"
