"""Collecting the groups of one GRPO step: G rollouts per environment, queued on an executor (the sandbox runs code
for one episode while the model generates for another; with ``max_staleness`` 1 the next step's rollouts queue
behind this step's), stored by the episode runner, and — on resume — taken back from the store instead of being
sampled again (a stored rollout is never lost nor duplicated)."""

from __future__ import annotations

import time
from concurrent.futures import Future, as_completed
from dataclasses import dataclass, field
from typing import Any, Callable

from store import Store
from store.common import JSON
from store.trajectories import Trajectory, Turn

from ..agents.policies.hf import HFPolicy
from ..agents.rollout import run_episode
from ..envs.layout import EnvSpec
from ..executors import Executor, Worker
from ..inference import StaleSampleError, check_fresh
from .checkpoint import load_adapter_weights


@dataclass
class Rollout:
    """One trajectory as the trainer needs it (from a live episode or from the store)."""

    id: str
    env_id: str
    group_id: str
    rng_seed: int
    reward: float
    timed_out: bool
    turns: list[Turn]
    grade: dict[str, JSON] = field(default_factory=dict)
    wall_s: float = 0.0
    sandbox_s: float = 0.0
    reused: bool = False
    #: the episode broke for reasons outside the policy (interrupted, backend failure): masked like a time-out
    errored: bool = False
    #: longer than the trainer's max_seq_len: masked like a time-out, never cut
    overlong: bool = False
    #: sampled by weights more than max_staleness updates older than the trainer's: refused (masked)
    stale: bool = False
    #: updates between the weights that sampled its oldest turn and those it trains (None: no versions recorded)
    staleness: int | None = None

    @property
    def masked(self) -> bool:
        return self.timed_out or self.errored or self.overlong or self.stale

    @property
    def valid(self) -> bool:
        return bool(self.grade.get("valid_submission"))

    @property
    def medal(self) -> bool:
        return any(bool(self.grade.get(k)) for k in ("gold_medal", "silver_medal", "bronze_medal", "gold",
                                                       "silver", "bronze"))

    @property
    def rank(self) -> float | None:
        """The rank on the environment's board (HumanRank on a real leaderboard)."""
        v = self.grade.get("rank", self.grade.get("human_rank"))
        return float(v) if isinstance(v, (int, float)) else None

    @classmethod
    def from_trajectory(cls, t: Trajectory, *, reused: bool = False) -> "Rollout":
        return cls(id=t.id, env_id=t.env_id or "", group_id=t.group_id or "", rng_seed=int(t.rng_seed or 0),
                   reward=t.reward, timed_out=t.timed_out, turns=list(t.turns), grade=dict(t.grade or {}),
                   wall_s=t.wall_s, sandbox_s=t.sandbox_s, reused=reused, errored=t.status == "error")


def _versions(rollout: Rollout) -> list[int]:
    return [t.policy_version for t in rollout.turns if t.policy_version is not None]


def fresh(rollout: Rollout, version: int, max_staleness: int = 0) -> bool:
    """Whether every sampled turn of ``rollout`` came from policy ``version`` (or at most ``max_staleness``
    versions before it). Turns without a recorded version (text-only policies, trajectories stored before
    versions were) are not judged."""
    versions = _versions(rollout)
    try:
        check_fresh(versions, version, max_staleness=max_staleness)
    except StaleSampleError:
        return False
    return True


def staleness(rollout: Rollout, version: int) -> int | None:
    """How many updates the oldest sampled turn of ``rollout`` lags behind ``version`` (None: no turn recorded
    the version that sampled it)."""
    versions = _versions(rollout)
    return version - min(versions) if versions else None


def group_id_for(run_id: str, step: int, k: int) -> str:
    return f"{run_id}/s{step:05d}/g{k:02d}"


def rollout_seed(base_seed: int, step: int, k: int, i: int, group_size: int) -> int:
    return (base_seed * 1_000_003 + step * 10_007 + k * group_size + i) % (2**31 - 1)


def stored_plan(store: Store, run_id: str, step: int) -> dict[int, str]:
    """Group index → env id of the groups already started for this step (from stored trajectories)."""
    prefix = f"{run_id}/s{step:05d}/g"
    return {int(gid[len(prefix):]): env_id for gid, env_id in store.trajectories.groups(run_id, step).items()
            if gid.startswith(prefix)}


def stored_rollouts(store: Store, run_id: str, step: int) -> dict[tuple[str, int], Rollout]:
    """(group id, rng seed) → the stored rollout of this step that has a result. An ``error`` episode (an
    infrastructure or grading fault) has none: it is played again."""
    out: dict[tuple[str, int], Rollout] = {}
    for row in store.trajectories.list(run_id=run_id, step=step):
        if row.status == "error":
            continue
        r = Rollout.from_trajectory(store.trajectories.get(row.id), reused=True)
        out[(r.group_id, r.rng_seed)] = r
    return out


@dataclass
class PolicyRef:
    """How a rollout worker in another process (or on another machine) gets the policy of one version: the base
    model plus the adapter the trainer published for that version (a folder every worker can read)."""

    model_path: str
    adapter_dir: str
    version: int
    name: str  #: the policy's name in the trajectories (the model and the adapter of this version)
    temperature: float
    top_p: float
    max_new_tokens: int


def worker_policy(worker: Worker, ref: PolicyRef) -> HFPolicy:
    """The worker's copy of the policy (loaded once), its weights moved to ``ref.version`` when they are older."""
    policy = worker.cached(("grpo-policy", ref.model_path), lambda: HFPolicy(
        ref.model_path, adapter=ref.adapter_dir, temperature=ref.temperature, top_p=ref.top_p,
        max_new_tokens=ref.max_new_tokens))
    if policy.sampler.version != ref.version:
        load_adapter_weights(policy.model, ref.adapter_dir)
        policy.sampler.publish(policy.model, ref.version)
    policy.name = ref.name
    return policy


@dataclass
class RolloutItem:
    """One rollout of a GRPO step, as an executor's work item."""

    env: EnvSpec
    group_id: str
    rng_seed: int
    step: int
    run_id: str
    policy: Any  #: the trainer's policy (local executor: its threads share the sampler) or a :class:`PolicyRef`
    scaffold: str
    kw: dict[str, Any]  #: max_turns, step_timeout_s, episode_timeout_s, reward
    episode_fn: Callable[..., Any] = run_episode


def run_rollout(worker: Worker, item: RolloutItem) -> Rollout:
    """The executor's work function: one episode in the worker's sandbox, stored through the worker's store."""
    policy = worker_policy(worker, item.policy) if isinstance(item.policy, PolicyRef) else item.policy
    traj = item.episode_fn(item.env, policy, scaffold=item.scaffold, store=worker.store, sandbox=worker.sandbox,
                           run_id=item.run_id, group_id=item.group_id, step=item.step, rng_seed=item.rng_seed,
                           **item.kw)
    return Rollout.from_trajectory(traj)


@dataclass
class StepRollouts:
    rollouts: list[Rollout]
    wall_s: float  #: how long the trainer waited for them (less than their run time when they overlapped)
    reused: int


@dataclass
class PendingStep:
    """The rollouts of one step: those taken back from the store and those queued on the executor."""

    step: int
    reused: list[Rollout]
    futures: list[Future]

    def collect(self, on_done: Callable[[Rollout], None] | None = None) -> StepRollouts:
        """Wait for every rollout of the step (``on_done`` as each is there); sorted by group, then seed."""
        t0 = time.perf_counter()
        done = list(self.reused)
        for r in self.reused:
            if on_done:
                on_done(r)
        try:
            for fut in as_completed(self.futures):
                done.append(fut.result())
                if on_done:
                    on_done(done[-1])
        except BaseException:
            self.cancel()
            raise
        done.sort(key=lambda r: (r.group_id, r.rng_seed))
        return StepRollouts(done, time.perf_counter() - t0, len(self.reused))

    def cancel(self) -> None:
        for fut in self.futures:
            fut.cancel()


def launch(executor: Executor, store: Store, run_id: str, step: int, env_ids: list[str], group_size: int,
           base_seed: int, make_item: Callable[[str, str, int], RolloutItem], *,
           share: Callable[[int], list[int]] | None = None) -> PendingStep:
    """Queue ``group_size`` rollouts for each environment of the step on ``executor`` — or take them back from
    the store (resume). ``make_item(env_id, group_id, rng_seed)`` builds a work item; ``share(n)`` picks this
    process's rollouts among the step's ``n`` (data-parallel training)."""
    have = stored_rollouts(store, run_id, step)
    jobs = [(env_id, group_id_for(run_id, step, k), rollout_seed(base_seed, step, k, i, group_size))
            for k, env_id in enumerate(env_ids) for i in range(group_size)]
    mine = share(len(jobs)) if share is not None else range(len(jobs))
    pending = PendingStep(step, [], [])
    for env_id, gid, seed in (jobs[n] for n in mine):
        if (gid, seed) in have:
            pending.reused.append(have[(gid, seed)])
        else:
            pending.futures.append(executor.submit(run_rollout, make_item(env_id, gid, seed),
                                                   label=f"rollout {gid} seed {seed}"))
    return pending
