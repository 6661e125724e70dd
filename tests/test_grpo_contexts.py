"""GRPO trains each reply under the context it was sampled from (issue 33). aide samples each reply from the system
prompt and its step's prompt only, not the episode's history: a sequence of the whole transcript would compute the
trainer's log-probs (and the importance weights) under a context the policy never saw. Per reply, the trainer's
log-probs of the sequences GRPO builds equal the sampler's within 1e-4, in react and aide, and a GRPO step in aide
trains every sampled token once, with no engine/trainer mismatch."""

from __future__ import annotations

import math

import pytest
import torch

from engine.rl.render import reply_sequences
from rl_tiny import ENV_DIR, build_tiny, register_tiny_env


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return build_tiny(tmp_path_factory.mktemp("tiny") / "model")


@pytest.mark.parametrize("scaffold", ["react", "aide"])
def test_per_reply_the_trainers_logprobs_equal_the_samplers(store, tiny, scaffold):
    from engine.agents.policies.hf import HFPolicy
    from engine.agents.rollout import run_episode
    from engine.envs.layout import EnvSpec
    from engine.rl.objective import sequence_logprobs

    policy = HFPolicy(str(tiny), max_new_tokens=16, temperature=1.0, device="cpu")
    traj = run_episode(EnvSpec.from_dir(ENV_DIR), policy, scaffold=scaffold, store=store, rng_seed=3, max_turns=3)
    turns = store.trajectories.get(traj.id).turns
    replies = [t for t in turns if t.role == "assistant"]
    seqs = reply_sequences(scaffold, turns)
    assert len(replies) >= 2 and len(seqs) == (len(replies) if scaffold == "aide" else 1)
    # every sampled token is trained once, under the prompt the sampler had
    assert sum(s.model_tokens for s in seqs) == sum(len(t.token_ids or []) for t in replies)
    compared, worst = 0, 0.0
    policy.model.eval()
    with torch.no_grad():
        for seq in seqs:
            ids = torch.tensor([seq.input_ids])
            trainer = sequence_logprobs(policy.model, ids, torch.ones_like(ids))[0, len(seq.prompt_ids) - 1:]
            for lp, model_token, sampled in zip(trainer.tolist(), seq.env_mask, seq.old_logprobs):
                if model_token and not math.isnan(sampled):
                    worst = max(worst, abs(lp - sampled))
                    compared += 1
    assert compared == sum(len(t.logprobs or []) for t in replies) > 0
    assert worst < 1e-4, (scaffold, worst)


@pytest.mark.slow
def test_a_grpo_step_in_aide_has_no_engine_trainer_mismatch(store, tiny):
    from engine.rl.config import GRPOConfig
    from engine.rl.grpo import GRPOTrainer

    env_id = register_tiny_env(store)
    cfg = GRPOConfig(model=str(tiny), env_ids=[env_id], steps=1, envs_per_step=1, group_size=2, max_turns=2,
                     max_new_tokens=12, rollout_workers=2, lora_r=4, equal_group="downweight", scaffold="aide")
    trainer = GRPOTrainer(store, cfg)
    trainer.setup()
    try:
        m = trainer.step(1)
    finally:
        trainer.close()
    assert m["trained_trajectories"] == 2 and m["sampler_tokens"] == m["tokens"] > 0
    assert m["sampler_logp_diff"] < 1e-4 and m["sampler_kl"] < 1e-6 and m["tis_capped"] == 0, m
