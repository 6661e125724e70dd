"""The GRPO trainer at its edges (issue 45): the KL is measured from the policy GRPO starts from (0 at step 0, also
when it starts from an SFT adapter); truncated importance sampling is exact under top-p (identical logits give
ρ = 1); a grading fault is an infrastructure fault (status error: masked, counted apart, played again, never a
reward) while an invalid submission stays the agent's; the sequence ends with the last reply; an all-equal group
kept by ``downweight`` only shrinks the step; a run killed after step s and resumed with max_staleness 1 trains on
the environments an uninterrupted run trains on. (tests/test_rl_ddp.py: data-parallel updates never deadlock.)"""

from __future__ import annotations

import json
import math
import shutil

import pytest
import torch

from engine.agents.format import tool_call_text
from engine.agents.policy import Action
from engine.rl.distributed import TokenLogProbs
from engine.rl.modeling import load_for_training
from engine.rl.objective import build_sequence, grpo_loss, sequence_logprobs, tis_weights
from engine.rl.update import grpo_update, make_optimizer
from rl_tiny import ENV_DIR, build_tiny, register_tiny_env
from store.trajectories import Turn


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return build_tiny(tmp_path_factory.mktemp("tiny") / "model")


def _turns(tok, answer: str, obs: str = "accuracy 0.81\n") -> list[Turn]:
    enc = lambda s: tok(s, add_special_tokens=False)["input_ids"]  # noqa: E731
    return [Turn("system", "", token_ids=enc("system: solve the task\n")),
            Turn("user", "", token_ids=enc("train.csv test.csv\n")),
            Turn("assistant", "", token_ids=enc(answer)), Turn("tool", "", token_ids=enc(obs)),
            Turn("assistant", "", token_ids=enc("submission.to_csv('submission.csv')\n"))]


# ------------------------------------------------------------------------------------------------ the KL reference
def test_the_kl_is_measured_from_the_starting_adapter_zero_at_step_zero(tiny, tmp_path, store):
    """GRPO started from an adapter (an SFT run's): the KL at step 0 is 0 to float error — not the adapter's
    distance from the base model (the adapter disabled) — and after an update it is the distance the update moved."""
    from engine.rl.config import GRPOConfig
    from engine.rl.grpo import GRPOTrainer

    torch.manual_seed(0)
    sft, tok, _ = load_for_training(str(tiny), lora_r=4, lora_alpha=8, device="cpu")
    with torch.no_grad():  # an adapter that moved away from the base, as SFT's does
        for name, p in sft.named_parameters():
            if "lora_B" in name:
                p.copy_(torch.randn_like(p) * 0.05)
    sft.save_pretrained(str(tmp_path / "sft"))
    seqs = [build_sequence(_turns(tok, code)) for code in ("model = LogisticRegression()\n", "x = 1\n")]
    ids = torch.tensor([seqs[0].input_ids])
    with torch.no_grad():  # what the KL read before: the adapter's own distance from the base
        lp = sequence_logprobs(sft, ids, torch.ones_like(ids))
        with sft.disable_adapter():
            base = sequence_logprobs(sft, ids, torch.ones_like(ids))
    assert float((lp - base).abs().mean()) > 0.05

    cfg = GRPOConfig(model=str(tiny), adapter=str(tmp_path / "sft"), env_ids=[register_tiny_env(store)], steps=1,
                     envs_per_step=1, group_size=2, lora_r=4, kl_coef=0.05, lr=5e-2, rollout_workers=1, device="cpu")
    trainer = GRPOTrainer(store, cfg)
    try:
        trainer.setup()
        first = trainer._update(seqs, [1.0, -1.0], [1.0, 1.0])
        second = trainer._update(seqs, [1.0, -1.0], [1.0, 1.0])
    finally:
        trainer.close()
    assert first.kl == pytest.approx(0.0, abs=1e-6) and first.loss == pytest.approx(first.pg_loss, abs=1e-6)
    assert second.kl > 1e-5  # the reference stays the start: it is not re-taken after each update


# ------------------------------------------------------------------------------------------------ TIS under top-p
def test_identical_logits_give_importance_weights_of_one_under_top_p(tiny):
    """The sampler draws from the temperature-scaled top-p nucleus and reports log-probs under it; the trainer's
    log-probs apply the same temperature and nucleus, so on identical weights every ρ is 1 (the full-vocabulary
    softmax gave ρ = the nucleus mass, 0.90-0.92 on every token)."""
    from engine.inference import SampleRequest
    from engine.inference.hf import HFSampler

    model, tok, _ = load_for_training(str(tiny), lora_r=4, lora_alpha=8, device="cpu")
    model.eval()
    head = _turns(tok, "x")[:2]
    prompt = tuple(head[0].token_ids + head[1].token_ids)
    sampler = HFSampler(model)
    try:
        sample = sampler.generate([SampleRequest(prompt, 24, temperature=0.7, top_p=0.9, seed=1)])[0]
    finally:
        sampler.close()
    reply = Turn("assistant", "", token_ids=sample.token_ids, logprobs=sample.logprobs)
    seq = build_sequence([*head, reply])
    ids = torch.tensor([seq.input_ids])
    batch_mask = torch.zeros(1, ids.shape[1] - 1)
    batch_mask[0, len(seq.prompt_ids) - 1:] = 1.0
    old = torch.full_like(batch_mask, math.nan)
    old[0, len(seq.prompt_ids) - 1:] = torch.tensor(sample.logprobs)
    with torch.no_grad():
        full = sequence_logprobs(model, ids, torch.ones_like(ids), temperature=0.7)
        nucleus = sequence_logprobs(model, ids, torch.ones_like(ids), temperature=0.7, top_p=0.9)
    assert tis_weights(full, old, batch_mask, 2.0).abs_diff / len(sample.token_ids) > 0.05  # the bias it had
    rho = tis_weights(nucleus, old, batch_mask, 2.0)
    assert rho.tokens == len(sample.token_ids) == 24
    assert float((rho.weights - 1.0).abs().max()) < 1e-4
    scorer = TokenLogProbs(model, temperature=0.7, top_p=0.9)  # the update measures the same
    st = grpo_update(scorer, make_optimizer(model, lr=1e-3), [seq], [1.0], [1.0])
    assert st.sampler_tokens == 24 and st.sampler_logp_diff < 1e-4 and st.tis_capped == 0


def test_a_sampled_token_outside_the_trainers_nucleus_keeps_a_finite_log_prob():
    """Another engine's rounding can put a token inside its nucleus and outside the trainer's: the trainer keeps the
    sampled token in (its weight is then truncated, never NaN)."""
    from engine.inference.nucleus import nucleus_logits

    logits = torch.tensor([[[3.0, 2.0, 0.0, -1.0]]])
    cut = nucleus_logits(logits, 0.5)
    assert torch.isinf(cut[0, 0, 1:]).all() and cut[0, 0, 0] == 3.0
    kept = nucleus_logits(logits, 0.5, keep=torch.tensor([[2]])).log_softmax(-1)
    assert math.isfinite(float(kept[0, 0, 2])) and torch.isinf(kept[0, 0, [1, 3]]).all()
    assert nucleus_logits(logits, 1.0) is logits


# ------------------------------------------------------------------------------------------------ grading faults
#: the environment's own evaluator: accuracy over the answers; a submission with other columns is rejected
EVALUATOR = '''import argparse, json, sys
import pandas as pd
p = argparse.ArgumentParser()
p.add_argument("--submission_path")
sub = pd.read_csv(p.parse_args().submission_path)
answers = pd.read_csv("answer.csv")
if list(sub.columns) != list(answers.columns):
    sys.exit(f"expected columns {list(answers.columns)}")
score = float((sub.set_index("id")["label"] == answers.set_index("id")["label"]).mean())
print(json.dumps({"score": score, "is_lower_better": False}))
'''
#: an evaluator under which the grading run itself dies (its runner cannot write the results: as a run killed
#: under rollout load, it leaves none), though this submission is fine
DIES = '''import json, os
os.mkdir("_eval_result.json")
print(json.dumps({"score": 1.0, "is_lower_better": False}))
'''


def _evaluator_env(tmp_path, name: str, code: str):
    from engine.envs.layout import EnvSpec

    folder = tmp_path / name
    shutil.copytree(ENV_DIR, folder)
    spec = json.loads((folder / "private" / "grade.json").read_text())
    spec.update(metric="evaluator", grader="evaluator", proxy_metric="accuracy", answer_columns=["id", "label"])
    (folder / "private" / "grade.json").write_text(json.dumps(spec))
    (folder / "private" / "evaluator.py").write_text(code)
    return EnvSpec.from_dir(folder, env_id=name)


class Submits:
    """Writes ``csv`` as submission.csv in its one turn."""

    name = "submits"

    def __init__(self, csv: str):
        self.csv = csv

    def act(self, messages, *, rng_seed=None):
        return Action(tool_call_text("python", {"code": f"open('submission.csv', 'w').write({self.csv!r})"}))


def _answers_csv() -> str:
    return (ENV_DIR / "private" / "answers.csv").read_text()


def test_an_invalid_submission_stays_the_agents_and_a_grading_fault_is_an_error_never_a_reward(tmp_path, store):
    from engine.agents.rollout import run_episode
    from engine.rl.grpo import rollout_metrics
    from engine.rl.objective import group_advantages
    from engine.rl.rollouts import Rollout

    graded = _evaluator_env(tmp_path, "graded", EVALUATOR)
    right = run_episode(graded, Submits(_answers_csv()), store=store, max_turns=1, rng_seed=0)
    assert right.status == "done" and right.grade["valid_submission"] and right.grade["score"] == 1.0
    invalid = run_episode(graded, Submits("id,guess\n1,yes\n"), store=store, max_turns=1, rng_seed=1)
    assert invalid.status == "done" and not invalid.grade["valid_submission"]  # the agent's: a result
    assert "exited 1: expected columns" in invalid.grade["error"] and invalid.reward > 0  # the format share
    assert not Rollout.from_trajectory(invalid).masked

    dies = _evaluator_env(tmp_path, "dies", DIES)
    fault = run_episode(dies, Submits(_answers_csv()), store=store, max_turns=1, rng_seed=2)
    assert fault.status == "error" and fault.reward == 0.0 and fault.reward_breakdown == {"grading fault": 0.0}
    assert fault.error.startswith("grading fault: GradingFault: the environment's evaluator could not run")
    assert store.trajectories.get(fault.id).status == "error"
    # GRPO: masked out of the group statistics, counted apart, left out of the rates
    rollouts = [Rollout.from_trajectory(t) for t in (right, invalid, fault)]
    stats = group_advantages([r.reward for r in rollouts], ["g"] * 3, masked=[r.masked for r in rollouts])
    assert stats.weights == [1.0, 1.0, 0.0] and stats.masked == 1
    m = rollout_metrics(rollouts)
    assert m["errored"] == 1.0 and m["timed_out"] == 0.0
    assert m["reward_mean"] == pytest.approx((right.reward + invalid.reward) / 2) and m["valid_rate"] == 0.5


def test_a_grade_that_raises_ends_the_episode_as_an_error_not_the_run(tmp_path, store):
    """grade() raising (here: the environment's answers are gone) used to escape the episode and end a GRPO run."""
    from engine.agents.rollout import run_episode
    from engine.envs.layout import EnvSpec

    folder = tmp_path / "broken"
    shutil.copytree(ENV_DIR, folder)
    (folder / "private" / "answers.csv").unlink()
    traj = run_episode(EnvSpec.from_dir(folder, env_id="broken"), Submits(_answers_csv()), store=store, max_turns=1,
                       rng_seed=0)
    assert traj.status == "error" and traj.reward == 0.0 and "grading fault: GradingError" in traj.error


def test_a_resume_plays_errored_rollouts_again_and_takes_back_the_rest(tmp_path, store):
    from engine.agents.rollout import run_episode
    from engine.rl.rollouts import group_id_for, stored_rollouts

    run = store.runs.create("grpo", {})
    gid = group_id_for(run, 1, 0)
    kw = dict(store=store, run_id=run, group_id=gid, step=1, max_turns=1)
    done = run_episode(_evaluator_env(tmp_path, "graded", EVALUATOR), Submits(_answers_csv()), rng_seed=0, **kw)
    run_episode(_evaluator_env(tmp_path, "dies", DIES), Submits(_answers_csv()), rng_seed=1, **kw)
    assert {t.status for t in store.trajectories.list(run_id=run)} == {"done", "error"}
    assert list(stored_rollouts(store, run, 1)) == [(gid, 0)]  # seed 1 is sampled again
    assert stored_rollouts(store, run, 1)[(gid, 0)].id == done.id


# ------------------------------------------------------------------------------------------------ sequences, groups
def test_the_sequence_ends_with_the_last_reply():
    """The last observation (which the model never read) is not rendered: no forward compute, no overlong."""
    turns = [Turn("system", "", token_ids=[1]), Turn("user", "", token_ids=[2]),
             Turn("assistant", "", token_ids=[10, 11], logprobs=[-0.1, -0.2]), Turn("tool", "", token_ids=[20, 21]),
             Turn("assistant", "", token_ids=[12]), Turn("tool", "", token_ids=[22, 23, 24]),
             Turn("user", "", token_ids=[25])]
    s = build_sequence(turns)
    assert s.prompt_ids == [1, 2] and s.completion_ids == [10, 11, 20, 21, 12] and s.env_mask == [1, 1, 0, 0, 1]
    silent = build_sequence([Turn("system", "", token_ids=[1]), Turn("user", "", token_ids=[2]),
                             Turn("tool", "", token_ids=[3])])
    assert silent.input_ids == [1, 2] and silent.model_tokens == 0


def test_downweight_only_shrinks_the_step():
    """An all-equal group kept with ``downweight`` has advantage 0: its tokens add no policy gradient and only
    enlarge the token mean's denominator — the gradient of the other groups, scaled down."""
    from engine.rl.objective import group_advantages

    rewards, groups = [1.0, 0.0, 0.5, 0.5], ["a", "a", "b", "b"]
    skip = group_advantages(rewards, groups, equal_group="skip")
    down = group_advantages(rewards, groups, equal_group="downweight", equal_weight=0.5)
    assert down.advantages == skip.advantages and down.advantages[2:] == [0.0, 0.0]
    mask = torch.ones(4, 3)

    def grad(stats):
        new = torch.zeros(4, 3, requires_grad=True)
        w = torch.tensor(stats.weights)
        loss, _ = grpo_loss(new, torch.zeros(4, 3), torch.tensor(stats.advantages), mask, weights=w,
                            normalizer=float((w[:, None] * mask).sum()))
        loss.backward()
        return new.grad

    g_skip, g_down = grad(skip), grad(down)
    assert g_down[2:].abs().sum() == 0  # no signal from the equal group
    assert torch.allclose(g_down, g_skip * (6 / 9))  # 6 tokens of signal over 6 + 0.5 x 6 weighted tokens


# ------------------------------------------------------------------------------------------------ resume
class Killed(Exception):
    """The process died right after step 2's checkpoint (before any of step 3's rollouts was stored)."""


def _plans(store, run_id: str) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for t in store.trajectories.list(run_id=run_id):
        out.setdefault(int(t.step), [])
        if t.env_id not in out[int(t.step)]:
            out[int(t.step)].append(t.env_id)
    return dict(sorted(out.items()))


def test_a_run_killed_after_step_s_resumes_on_the_environments_of_an_uninterrupted_run(tiny, store):
    """max_staleness 1 draws step s+1's environments before step s's checkpoint: the checkpoint keeps that draw, so
    a resume neither draws step s+1 again from an RNG already past it nor shifts every later step."""
    from engine.agents.rollout import register_env
    from engine.envs.layout import EnvSpec
    from engine.rl.config import GRPOConfig
    from engine.rl.grpo import GRPOTrainer

    envs = [f"tiny-{k}" for k in range(4)]
    for e in envs:
        register_env(store, EnvSpec.from_dir(ENV_DIR, env_id=e), split="train")
    cfg = GRPOConfig(model=str(tiny), env_ids=envs, steps=4, envs_per_step=1, group_size=2, max_turns=1,
                     max_new_tokens=6, rollout_workers=2, lora_r=4, max_staleness=1, save_every=1, curriculum=False,
                     device="cpu", seed=1)
    whole = GRPOTrainer(store, cfg)
    assert whole.train()["steps_done"] == 4
    expected = _plans(store, whole.run_id)
    assert list(expected) == [1, 2, 3, 4] and expected[3] != expected[4]  # a shifted draw would show

    def kill_after_2(step, _):
        if step == 2:
            raise Killed

    def episode(env, policy, **kw):
        if kw["step"] > 2:  # the killed process stored none of step 3's rollouts
            raise Killed
        from engine.agents.rollout import run_episode

        return run_episode(env, policy, **kw)

    killed = GRPOTrainer(store, cfg, on_step=kill_after_2, episode_fn=episode)
    with pytest.raises(Killed):
        killed.train()
    assert [c["step"] for c in store.runs.checkpoints(killed.run_id)] == [1, 2]
    resumed = GRPOTrainer.resume(store, killed.run_id)
    assert resumed.train()["steps_done"] == 4
    assert _plans(store, killed.run_id) == expected
