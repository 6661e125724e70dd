"""GRPO rollouts on the executors: Ray actors that load each adapter the trainer publishes (policy versions on
every sampled turn), and rollouts overlapped with updates (--max-staleness 1): the next step's rollouts sample with
the weights of before the update, their staleness is stored per trajectory and logged, and nothing staler is
trained on."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.config import ExecutorSettings
from engine.errors import TrainingError
from engine.rl.config import GRPOConfig
from engine.rl.grpo import GRPOTrainer

from rl_tiny import build_tiny, register_tiny_env

G = 4


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return build_tiny(tmp_path_factory.mktemp("tiny") / "model")


def _train(store, tiny, **kw) -> tuple[GRPOTrainer, dict]:
    env_id = register_tiny_env(store)
    cfg = GRPOConfig(model=str(tiny), env_ids=[env_id], envs_per_step=1, group_size=G, max_turns=2,
                     max_new_tokens=12, lora_r=4, lr=5e-3, equal_group="downweight", device="cpu", **kw)
    trainer = GRPOTrainer(store, cfg)
    return trainer, trainer.train()


def _sampled_versions(store, run_id: str) -> dict[int, set[int]]:
    """Step → the policy versions of its sampled turns."""
    out: dict[int, set[int]] = {}
    for t in store.trajectories.list(run_id=run_id):
        turns = store.trajectories.get(t.id).turns
        out.setdefault(t.step, set()).update(x.policy_version for x in turns if x.role == "assistant")
    return out


@pytest.mark.slow
def test_train_grpo_on_ray_samples_each_published_adapter(store, tiny, local_ray, run_cli):
    env_id = register_tiny_env(store)
    r = run_cli("train", "grpo", "--executor", "ray", "--rollout-workers", "2", "--steps", "2", "--model", str(tiny),
                "--env-ids", env_id, "--envs-per-step", "1", "--group-size", str(G), "--max-turns", "2",
                "--max-new-tokens", "12", "--lora-r", "4", "--equal-group", "downweight", "--device", "cpu",
                "--json")
    assert r.code == 0, r.err
    run = store.runs.get(r.json()["run_id"])
    assert r.json()["steps_done"] == 2 and run["status"] == "done" and run["config"]["executor"]["kind"] == "ray"
    assert _sampled_versions(store, run["id"]) == {1: {0}, 2: {1}}  # each step sampled the latest adapter
    metrics = store.runs.metrics(run["id"])
    assert metrics["stale"] == [(1, 0.0), (2, 0.0)] and metrics["staleness_max"] == [(1, 0.0), (2, 0.0)]
    assert [v for _, v in metrics["trained_trajectories"]] == [G, G]
    # the published adapters, none kept older than a queued rollout may ask for
    assert sorted(p.name for p in (Path(run["dir"]) / "policy").iterdir()) == ["v000001", "v000002"]
    trajectories = store.trajectories.list(run_id=run["id"])
    assert {t.staleness for t in trajectories} == {0}
    assert {t.step: t.policy for t in trajectories} == {1: f"hf:{tiny}", 2: f"hf:{tiny},adapter={run['id']}@1"}


def test_the_settings_executor_is_the_default_and_is_stored_with_the_run(store, home, tiny):
    """No executor given: [executor] kind (here process, which cannot serve a vLLM sampler: refused before anything
    starts); given: that one, stored in the run's config with the rollout workers it ran."""
    env_id = register_tiny_env(store)
    (home / "config.toml").write_text('[executor]\nkind = "process"\n')
    with pytest.raises(TrainingError, match="executor = process needs sampler = hf"):
        GRPOTrainer(store, GRPOConfig(model=str(tiny), env_ids=[env_id], sampler="vllm", lora_modules_to_save=[]))
    trainer = GRPOTrainer(store, GRPOConfig(model=str(tiny), env_ids=[env_id], rollout_workers=1),
                          executor=ExecutorSettings(kind="local"))
    trainer.close()
    assert store.runs.get(trainer.run_id)["config"]["executor"] == {"kind": "local", "workers": 1, "ray_address": None}


@pytest.mark.slow
def test_overlapped_rollouts_sample_one_update_behind_and_say_so(store, tiny, run_cli):
    trainer, summary = _train(store, tiny, steps=3, max_staleness=1, rollout_workers=G)
    assert summary["steps_done"] == 3
    versions = _sampled_versions(store, trainer.run_id)
    assert versions[1] == {0} and versions[2] <= {0, 1} and versions[3] <= {1, 2}
    lags = {t.step: set() for t in store.trajectories.list(run_id=trainer.run_id)}
    for t in store.trajectories.list(run_id=trainer.run_id):
        lags[t.step].add(t.staleness)
    assert lags[1] == {0} and lags[2] <= {0, 1} and lags[3] <= {0, 1}
    assert 1 in lags[2] | lags[3]  # rollouts really ran while an update did
    metrics = store.runs.metrics(trainer.run_id)
    assert metrics["stale"] == [(1, 0.0), (2, 0.0), (3, 0.0)]  # one update behind is allowed: all trained on
    assert [v for _, v in metrics["trained_trajectories"]] == [G, G, G]
    assert max(v for _, v in metrics["staleness_max"]) == 1.0
    stale = next(t for t in store.trajectories.list(run_id=trainer.run_id) if t.staleness == 1)
    shown = run_cli("trajectories", "show", stale.id)
    assert f"GRPO step {stale.step}: trained 1 update(s) after the weights that sampled it" in shown.out
    assert f"policy v{stale.step - 2}" in shown.out  # a turn sampled by the weights of two steps before
