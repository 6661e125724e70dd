"""GRPO steps on the tiny model through the batched sampler: concurrent rollouts share batches, the trainer trains on
exactly the sampled ids (their log-probs equal its own recomputation), every sampled turn records the policy version
that produced it, a trajectory longer than max_seq_len is masked and counted (never cut), and samples from other
weights than the trainer's are refused."""

from __future__ import annotations

import pytest

from engine.rl.config import GRPOConfig
from engine.rl.grpo import GRPOTrainer
from engine.rl.objective import build_sequence
from rl_tiny import build_tiny, register_tiny_env

G = 4


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return build_tiny(tmp_path_factory.mktemp("tiny") / "model")


def _step(store, tiny, *, publish_as: int | None = None, **kw) -> tuple[GRPOTrainer, dict]:
    env_id = register_tiny_env(store)
    cfg = GRPOConfig(model=str(tiny), env_ids=[env_id], steps=1, envs_per_step=1, group_size=G, max_turns=2,
                     max_new_tokens=12, rollout_workers=G, lora_r=4, equal_group="downweight", **kw)
    trainer = GRPOTrainer(store, cfg)
    trainer.setup()
    try:
        if publish_as is not None:
            trainer.sampler.publish(trainer.model, publish_as)
        return trainer, trainer.step(1)
    finally:
        trainer.close()


def _lengths(store, run_id: str) -> list[int]:
    rows = [store.trajectories.get(t.id) for t in store.trajectories.list(run_id=run_id)]
    return [len(build_sequence(r.turns).input_ids) for r in rows]


@pytest.mark.slow
def test_rollouts_share_batches_and_the_trainer_recomputes_their_logprobs(store, tiny):
    trainer, m = _step(store, tiny)
    assert m["sampler_requests"] == G * 2 and m["sampler_mean_batch"] > 1  # the episodes' turns shared forwards
    assert m["sampler_tokens"] == m["tokens"] > 0  # every sampled token is trained on, nothing re-tokenized
    assert m["sampler_logp_diff"] < 1e-4 and m["sampler_kl"] < 1e-6 and m["tis_capped"] == 0
    assert m["stale"] == 0 and m["overlong"] == 0 and m["trained_trajectories"] == G
    for t in store.trajectories.list(run_id=trainer.run_id):
        turns = store.trajectories.get(t.id).turns
        sampled = [x for x in turns if x.role == "assistant"]
        assert sampled and all(x.policy_version == 0 and x.finish_reason in ("stop", "length") for x in sampled)


@pytest.mark.slow
def test_an_overlong_trajectory_is_masked_and_counted_never_cut(store, tiny):
    first, _ = _step(store, tiny)
    lengths = _lengths(store, first.run_id)
    limit = max(lengths) - 1
    too_long = sum(n > limit for n in lengths)
    assert 0 < too_long <= G
    second, m = _step(store, tiny, max_seq_len=limit)  # same seeds: the same trajectories
    assert sorted(_lengths(store, second.run_id)) == sorted(lengths)
    assert m["overlong"] == too_long and m["timed_out"] == 0
    assert m["trained_trajectories"] == G - too_long
    assert m["seq_tokens"] == sum(lengths)  # every trajectory whole: none was cut to fit


@pytest.mark.slow
def test_samples_from_other_weights_are_refused(store, tiny):
    _, m = _step(store, tiny, publish_as=5)  # the sampler serves version 5, the trainer is at version 0
    assert m["stale"] == G and m["trained_trajectories"] == 0


@pytest.mark.slow
def test_grpo_samples_from_a_vllm_server_and_hot_loads_each_update(store, tiny, monkeypatch):
    from vllm_standin import StandIn

    monkeypatch.setenv("VLLM_ALLOW_RUNTIME_LORA_UPDATING", "True")
    with StandIn(tiny) as server:
        trainer, m = _step(store, tiny, sampler="vllm", sampler_url=server.url)
        served = [c["id"] for c in server.models()["data"]]
    assert m["stale"] == 0 and m["sampler_requests"] == G * 2 and m["trained_trajectories"] == G
    assert m["sampler_logp_diff"] < 1e-4  # the engine's log-probs are the trainer's (both fp32 here)
    paths = [(q["path"], q["body"]["lora_name"]) for q in server.requests if "lora_adapter" in q["path"]]
    assert paths == [("/v1/load_lora_adapter", "policy-step-0"), ("/v1/load_lora_adapter", "policy-step-1"),
                     ("/v1/unload_lora_adapter", "policy-step-0")]
    assert served == [str(tiny), "policy-step-1"]
    sampled = [q["body"]["model"] for q in server.requests if q["path"] == "/v1/completions"
               and "prompt_logprobs" not in q["body"]]
    assert sampled == ["policy-step-0"] * (G * 2)
    assert (trainer.run_dir / "sampler" / "adapters" / "policy-step-1" / "adapter_config.json").is_file()


@pytest.mark.slow
def test_train_grpo_starts_its_own_vllm_server_and_stops_it(run_cli, store, tiny, tmp_path, monkeypatch):
    """`--sampler vllm` without `--sampler-url`: the command starts `vllm serve MODEL --enable-lora ...` (here the
    stand-in, through SANDMLE_VLLM_COMMAND), samples from it, and stops it when the run ends."""
    import subprocess
    import sys

    from conftest import ROOT
    from engine.inference.vllm_server import COMMAND_ENV

    monkeypatch.setenv(COMMAND_ENV, f"{sys.executable} {ROOT / 'tests' / 'vllm_standin.py'} serve")
    env_id = register_tiny_env(store)
    res = run_cli("train", "grpo", "--model", str(tiny), "--env-ids", env_id, "--steps", "1", "--envs-per-step", "1",
                  "--group-size", "2", "--max-turns", "1", "--max-new-tokens", "8", "--lora-r", "4", "--sampler",
                  "vllm", "--json")
    assert res.code == 0, res.err
    run_id = res.json()["run_id"]
    log = store.data_dir / "runs" / run_id / "sampler" / "vllm.log"
    assert log.is_file()
    metrics = store.runs.metrics(run_id, ["sampler_requests", "stale"])
    assert metrics["sampler_requests"] == [(1, 2.0)] and metrics["stale"] == [(1, 0.0)]
    served = subprocess.run(["pgrep", "-f", str(tiny)], capture_output=True, text=True).stdout.split()
    assert not served  # the server the run started is gone
