"""Data-parallel training with accelerate on CPU (gloo): one GRPO update split over 2 processes equals the same
update in one process; `sandmle train grpo --processes 2` trains, checkpoints once and records its world size."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch

from engine.rl.distributed import ONE, launch_command

from conftest import ROOT
from rl_tiny import build_tiny, register_tiny_env, scripted_demos


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return build_tiny(tmp_path_factory.mktemp("tiny") / "model")


def _launch(argv: list[str], env: dict[str, str] | None = None, timeout: int = 420) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=ROOT, env={**os.environ, **(env or {})}, capture_output=True, text=True,
                          timeout=timeout)


@pytest.mark.slow
def test_one_update_on_two_gloo_processes_gives_the_weights_of_one_process(tiny, tmp_path):
    from ddp_update import BATCH, update

    one = update(str(tiny), ONE)
    out = tmp_path / "two.pt"
    cmd = launch_command(2, [])[:-2]  # accelerate launch ... without "-m workbench": the script instead
    done = _launch([*cmd, str(ROOT / "tests" / "ddp_update.py"), str(tiny), str(out)])
    assert done.returncode == 0, done.stderr[-3000:]
    two = torch.load(out)
    assert two["world_size"] == 2
    assert two["trained"] == one["trained"] == sum(w > 0 for *_, w in BATCH)
    assert two["loss"] == pytest.approx(one["loss"], rel=1e-4) and two["kl"] == pytest.approx(one["kl"], rel=1e-3)
    assert two["grad_norm"] == pytest.approx(one["grad_norm"], rel=1e-4)
    for name, w in one["weights"].items():
        assert torch.equal(two["before"][name], one["before"][name])  # the same start
        assert torch.allclose(two["weights"][name], w, atol=1e-5, rtol=1e-4), name
    moved = max(float((w - one["before"][n]).abs().max()) for n, w in one["weights"].items())
    assert moved > 1e-3  # a real step, far above the tolerance


@pytest.mark.slow
def test_train_grpo_on_two_processes_checkpoints_once_and_records_its_world_size(tiny, home, store):
    env_id = register_tiny_env(store)
    done = _launch([sys.executable, "-m", "workbench", "train", "grpo", "--processes", "2", "--steps", "1",
                    "--model", str(tiny), "--env-ids", env_id, "--envs-per-step", "1", "--group-size", "4",
                    "--max-turns", "2", "--max-new-tokens", "12", "--rollout-workers", "2", "--lora-r", "4",
                    "--equal-group", "downweight", "--device", "cpu", "--json"],
                   env={"SANDMLE_HOME": str(home)})
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout)  # one report: the main process's
    run = store.runs.get(summary["run_id"])
    assert run["status"] == "done" and run["config"]["world_size"] == 2 and summary["world_size"] == 2
    assert [c["step"] for c in store.runs.checkpoints(run["id"])] == [1]
    assert os.path.isfile(os.path.join(store.runs.checkpoints(run["id"])[0]["path"], "adapter_model.safetensors"))
    trajectories = store.trajectories.list(run_id=run["id"])
    assert len(trajectories) == 4 and {t.group_id for t in trajectories} == {f"{run['id']}/s00001/g00"}
    assert all(t.staleness == 0 for t in trajectories)
    metrics = store.runs.metrics(run["id"])
    assert metrics["groups"] == [(1, 1.0)]  # logged once, by the main process, over both processes' rollouts
    assert metrics["staleness_max"] == [(1, 0.0)]


@pytest.mark.slow
@pytest.mark.parametrize("sharding", [[], ["--fsdp"]], ids=["ddp", "fsdp"])
def test_train_sft_on_two_processes_shares_the_examples_and_saves_one_adapter(tiny, home, store, sharding):
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    demos = scripted_demos(store, 4)
    done = _launch([sys.executable, "-m", "workbench", "train", "sft", "--processes", "2", "--model", str(tiny),
                    "--source-run", demos, "--epochs", "1", "--batch-size", "1", "--grad-accum", "1",
                    "--save-every", "1", "--lora-r", "4", "--device", "cpu", "--json", *sharding],
                   env={"SANDMLE_HOME": str(home)})
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout)
    run = store.runs.get(out["run_id"])
    assert run["status"] == "done" and run["config"]["world_size"] == 2 and out["world_size"] == 2
    assert out["examples"] == 4 and out["steps"] == 2  # 4 examples, 1 per process per step: 2 steps
    assert [c["step"] for c in store.runs.checkpoints(run["id"])] == [1, 2]  # recorded once each, by the main
    assert len(store.runs.metrics(run["id"], ["loss"])["loss"]) == 2
    base = AutoModelForCausalLM.from_pretrained(tiny)
    ids = torch.tensor([[5, 6, 7, 8]])
    with torch.no_grad():
        before = base(input_ids=ids).logits.clone()
        after = PeftModel.from_pretrained(base, out["adapter"])(input_ids=ids).logits
    assert not torch.allclose(before, after)


def test_fsdp_needs_several_processes_and_is_for_sft(run_cli):
    res = run_cli("train", "sft", "--fsdp")
    assert res.code == 1 and res.err.strip().splitlines() == [
        "error: --fsdp shards the model over several processes (add --processes N)"]
    res = run_cli("train", "grpo", "--fsdp", "--processes", "2")
    assert res.code == 2 and "fsdp is for sft" in res.err and len(res.err.strip().splitlines()) == 1
