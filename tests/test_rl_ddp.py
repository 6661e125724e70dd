"""Data-parallel GRPO never deadlocks (issue 45): two real gloo processes that keep different numbers of sequences —
2 micro-batches against 1, through every cause the trainer masks a trajectory for — run several updates with the
default kl_coef 0 to the end, and end with the adapter one process gets on the whole batch. (DDP's buffer broadcast
at the start of a forward, and a no-grad reference pass through the DDP wrapper, made the order of collectives
depend on each process's number of micro-batches: the processes waited on each other forever.)"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import psutil
import pytest
import torch

from engine.rl.distributed import ONE, launch_command

from conftest import ROOT
from rl_tiny import build_tiny

#: a deadlock shows as a launch that never ends: far longer than the run takes (~15 s on 2 busy cores)
HANG_S = 150


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return build_tiny(tmp_path_factory.mktemp("tiny") / "model")


def _launch_script(args: list[str], log: Path) -> tuple[int | None, str]:
    """(exit code, stderr tail) of ``tests/ddp_update.py ARGS`` on 2 processes; None when it hung (the launcher and
    its workers killed: torch's launcher starts each worker in a session of its own)."""
    cmd = [*launch_command(2, [])[:-2], str(ROOT / "tests" / "ddp_update.py"), *args]  # the script, not workbench
    with open(log, "w") as err:
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=err)
        try:
            code: int | None = proc.wait(timeout=HANG_S)
        except subprocess.TimeoutExpired:
            for p in [*psutil.Process(proc.pid).children(recursive=True), psutil.Process(proc.pid)]:
                p.kill()
            proc.wait()
            code = None
    return code, log.read_text()[-3000:]


@pytest.mark.slow
def test_uneven_micro_batches_with_every_masking_cause_run_every_step_and_match_one_process(tiny, tmp_path):
    from ddp_update import UNEVEN_STEPS, uneven

    out = tmp_path / "two.pt"
    code, err = _launch_script([str(tiny), str(out), "uneven"], tmp_path / "launch.log")
    assert code is not None, "the two processes deadlocked:\n" + err
    assert code == 0, err
    two = torch.load(out)
    assert two["world_size"] == 2
    assert two["kept_by_rank"] == [4, 1]  # sequences kept: 2 micro-batches of 2 against 1
    one = uneven(str(tiny), ONE, ranks=(0, 1))  # one process, the whole batch
    assert one["kept"] == 5 and one["trained"] == two["trained"] == [4] * UNEVEN_STEPS  # trajectories, not sequences
    assert two["loss"] == pytest.approx(one["loss"], rel=1e-4, abs=1e-6)
    assert two["grad_norm"] == pytest.approx(one["grad_norm"], rel=1e-4)
    for name, w in one["weights"].items():
        assert torch.allclose(two["weights"][name], w, atol=1e-5, rtol=1e-4), name
    assert max(float(g) for g in one["grad_norm"]) > 1e-3  # real steps, far above the tolerance


#: padding that makes an environment's task prompt ~300 tokens longer than tiny-tabular's (~680 with a reply)
LONGER = "\n".join(f"Note {i}: every row is an independent draw; the ids carry no signal." for i in range(20))


@pytest.mark.slow
def test_train_grpo_on_two_processes_with_masking_runs_five_steps_to_the_end(tiny, home, store, tmp_path):
    """`sandmle train grpo --processes 2` where masking makes the processes keep different numbers of trajectories:
    2 environments x 3 rollouts, one environment's episodes over --max-seq-len (masked as overlong), so one process
    keeps 2 trajectories and the other 1 (--micro-batch 1: 2 micro-batches against 1), with kl_coef 0."""
    import json
    import shutil
    import sys

    from engine.agents.rollout import register_env
    from engine.envs.layout import EnvSpec
    from rl_tiny import ENV_DIR, register_tiny_env

    short = register_tiny_env(store)
    folder = tmp_path / "tiny-long"
    shutil.copytree(ENV_DIR, folder)
    (folder / "public" / "description.md").write_text((ENV_DIR / "public" / "description.md").read_text() + LONGER)
    register_env(store, EnvSpec.from_dir(folder, env_id="tiny-long"), split="train")
    argv = [sys.executable, "-m", "workbench", "train", "grpo", "--processes", "2", "--steps", "5", "--model",
            str(tiny), "--env-ids", short, "--env-ids", "tiny-long", "--envs-per-step", "2", "--group-size", "3",
            "--max-turns", "2", "--max-new-tokens", "12", "--max-seq-len", "800", "--micro-batch", "1",
            "--equal-group", "downweight", "--rollout-workers", "3", "--lora-r", "4", "--device", "cpu", "--json"]
    log = tmp_path / "train.log"
    with open(log, "w") as err:
        proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=err, text=True,
                                env={**os.environ, "SANDMLE_HOME": str(home)})
        try:
            out, _ = proc.communicate(timeout=HANG_S + 60)
        except subprocess.TimeoutExpired:
            for p in [*psutil.Process(proc.pid).children(recursive=True), psutil.Process(proc.pid)]:
                p.kill()
            proc.wait()
            pytest.fail("the two processes deadlocked:\n" + log.read_text()[-3000:])
    assert proc.returncode == 0, log.read_text()[-3000:]
    summary = json.loads(out)
    assert summary["steps_done"] == 5 and summary["status"] == "done" and summary["world_size"] == 2
    m = store.runs.metrics(summary["run_id"])
    assert [v for _, v in m["overlong"]] == [3.0] * 5  # every step, the long environment's group: masked
    assert [v for _, v in m["trained_trajectories"]] == [3.0] * 5
    assert [c["step"] for c in store.runs.checkpoints(summary["run_id"])] == [5]
