"""Whose fault is it (issue 33)? A fault the agent causes in its own workspace (its step file replaced by a
folder or by a link out, a folder it made unwritable) is the agent's: a failed episode, reward 0, counted in every
rate of an eval and trained on by GRPO. Only faults of the infrastructure (the policy's endpoint down, the sandbox
unable to run) stay out of the rates, counted apart, and are masked by GRPO."""

from __future__ import annotations

import pytest

from conftest import DATA
from engine.agents.format import tool_call_text
from engine.agents.policies.scripted import ScriptedPolicy
from engine.agents.policy import Action
from engine.errors import InfrastructureError

TINY = DATA / "envs" / "tiny-tabular"
FAULTS = {
    "folder": "import os; os.remove('_step.py'); os.mkdir('_step.py')",
    "link out": "import os; os.remove('_step.py'); os.symlink('/etc/hostname', '_step.py')",
    "nested folder": "import os; os.remove('_step.py'); os.makedirs('_step.py/inner')",
}


class Breaker:
    """Plays the scripted teacher, except that on the seeds in ``breaks`` its first step breaks the workspace."""

    name = "breaker"

    def __init__(self, fault: str, breaks: set[int]):
        self.fault, self.breaks = fault, breaks
        self.inner = ScriptedPolicy(skill=1.0).in_scaffold("react", "tool_calls")

    def act(self, messages, *, rng_seed=None):
        if rng_seed in self.breaks and sum(t.role == "assistant" for t in messages) == 0:
            return Action(tool_call_text("python", {"code": self.fault}, think="tidy up"))
        return self.inner.act(messages, rng_seed=rng_seed)


class Unreachable:
    """A policy whose endpoint is down on the seeds in ``down``."""

    name = "flaky-endpoint"

    def __init__(self, down: set[int]):
        self.down = down
        self.inner = ScriptedPolicy(skill=1.0).in_scaffold("react", "tool_calls")

    def act(self, messages, *, rng_seed=None):
        if rng_seed in self.down:
            raise InfrastructureError("the policy endpoint did not answer (connection refused)")
        return self.inner.act(messages, rng_seed=rng_seed)


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_a_workspace_the_agent_broke_is_a_failed_episode_with_reward_zero(store, fault):
    from engine.agents.rollout import run_episode
    from engine.envs.layout import EnvSpec
    from engine.rl.rollouts import Rollout

    traj = run_episode(EnvSpec.from_dir(TINY), Breaker(FAULTS[fault], {0}), scaffold="react", store=store,
                       rng_seed=0, max_turns=4)
    assert traj.status == "failed" and traj.reward == 0.0 and traj.reward_breakdown == {"failed": 0.0}
    assert traj.error.startswith("workspace fault: ") and "_step.py" in traj.error
    assert traj.grade["valid_submission"] is False and traj.grade["error"] == traj.error
    stored = store.trajectories.get(traj.id)
    assert stored.status == "failed" and stored.reward == 0.0
    assert Rollout.from_trajectory(stored).masked is False  # GRPO learns from it (reward 0), never masks it


def test_eval_counts_failed_episodes_in_every_rate_and_keeps_infrastructure_faults_apart(store):
    from engine.envs.layout import EnvSpec
    from engine.eval.run import run_eval

    env = EnvSpec.from_dir(TINY)
    clean = run_eval(store, Breaker(FAULTS["folder"], set()), [env], scaffold="react", rng_seeds=[0, 1],
                     max_turns=6, workers=1)
    assert clean.n_episodes == 2 and clean.errors == 0 and clean.summary["valid"]["mean"] == 1.0
    broke = run_eval(store, Breaker(FAULTS["folder"], {0}), [env], scaffold="react", rng_seeds=[0, 1],
                     max_turns=6, workers=1)
    # the broken episode is a result: both episodes count, half of them valid
    assert broke.n_episodes == 2 and broke.errors == 0 and broke.summary["valid"]["mean"] == pytest.approx(0.5)
    rows = store.runs.eval_results(broke.run_id)
    assert sorted((r["rng_seed"], r["valid"], r["reward"] == 0.0, r["error"]) for r in rows) == \
        [(0, 0, True, None), (1, 1, False, None)]
    down = run_eval(store, Unreachable({0}), [env], scaffold="react", rng_seeds=[0, 1], max_turns=6, workers=1)
    # the endpoint's fault is no result: left out of the rates, counted apart
    assert down.n_episodes == 1 and down.errors == 1 and "did not answer" in down.error
    assert down.summary["valid"]["mean"] == 1.0


def test_grpo_masks_infrastructure_faults_only(store):
    from engine.agents.rollout import run_episode
    from engine.envs.layout import EnvSpec
    from engine.rl.rollouts import Rollout

    env = EnvSpec.from_dir(TINY)
    infra = run_episode(env, Unreachable({0}), scaffold="react", store=store, rng_seed=0, max_turns=4)
    assert infra.status == "error" and Rollout.from_trajectory(infra).masked is True
    agent = run_episode(env, Breaker(FAULTS["link out"], {0}), scaffold="react", store=store, rng_seed=0,
                        max_turns=4)
    assert agent.status == "failed" and Rollout.from_trajectory(agent).masked is False
