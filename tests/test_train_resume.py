"""Crash safety: `kill -9` a real `sandmle train grpo` process mid-run, then `sandmle runs resume ID` finishes it
from the last checkpoint — no step counted twice, no stored rollout lost or sampled again."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import ROOT
from rl_tiny import build_tiny, register_tiny_env


def _sandmle(home, *args, **kw):
    env = {**os.environ, "SANDMLE_HOME": str(home), "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", "workbench", *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


@pytest.mark.slow
def test_sigkill_then_resume_counts_every_step_once_and_keeps_every_rollout(home, store, tmp_path):
    model = build_tiny(tmp_path / "tiny")
    env_id = register_tiny_env(store)
    steps, G = 5, 4
    proc = _sandmle(home, "train", "grpo", "--model", str(model), "--env-ids", env_id, "--steps", str(steps),
                    "--envs-per-step", "1", "--group-size", str(G), "--max-turns", "2", "--max-new-tokens", "24",
                    "--save-every", "1", "--rollout-workers", "1", "--lora-r", "4", "--name", "crash-test")
    # wait until a checkpoint exists and the next step has stored some (not all) of its rollouts
    deadline = time.time() + 240
    run_id = None
    while time.time() < deadline:
        assert proc.poll() is None, proc.stderr.read()
        runs = store.runs.list(kind="grpo")
        if runs:
            run_id = runs[0]["id"]
            ck = store.runs.latest_checkpoint(run_id)
            if ck is not None:
                n_next = len([t for t in store.trajectories.list(run_id=run_id) if t.step == ck["step"] + 1])
                if 0 < n_next < G and ck["step"] < steps - 1:
                    break
        time.sleep(0.02)
    else:
        pytest.fail("the run never reached a checkpoint")
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL

    before = {t.id: (t.step, t.group_id, t.rng_seed) for t in store.trajectories.list(run_id=run_id)}
    ckpt_before = store.runs.latest_checkpoint(run_id)["step"]
    listed = _sandmle(home, "runs", "list", "--json").communicate(timeout=60)[0]
    assert [r for r in json.loads(listed) if r["id"] == run_id][0]["status"] == "dead"

    res = _sandmle(home, "runs", "resume", run_id, "--json")
    out, err = res.communicate(timeout=600)
    assert res.returncode == 0, err
    assert json.loads(out)["steps_done"] == steps

    row = store.runs.get(run_id)
    assert row["status"] == "done"
    # every step once
    rewards = store.runs.metrics(run_id, ["reward_mean"])["reward_mean"]
    assert [s for s, _ in rewards] == list(range(1, steps + 1))
    assert [c["step"] for c in store.runs.checkpoints(run_id)] == list(range(1, steps + 1))
    # every stored rollout kept, none sampled twice, every step has exactly G
    after = store.trajectories.list(run_id=run_id)
    keys = [(t.step, t.group_id, t.rng_seed) for t in after]
    assert len(keys) == len(set(keys)) == steps * G
    assert set(before) <= {t.id for t in after}
    # the interrupted step took back the rollouts stored before the kill
    reused = dict(store.runs.metrics(run_id, ["reused_rollouts"])["reused_rollouts"])
    n_pre = sum(1 for s, _, _ in before.values() if s == ckpt_before + 1)
    assert reused[ckpt_before + 1] == n_pre > 0
    # nothing the killed trainer opened is left: no workspace folder, no tmpfs mounted under the data dir
    mounts = [line.split()[1] for line in open("/proc/mounts").read().splitlines()]
    assert not [m for m in mounts if m.startswith(str(home))] and not list((home / "workspaces").glob("ws-*"))
