"""Collecting the groups of one GRPO step: G rollouts per environment, run concurrently (the sandbox runs code for
one episode while the model generates for another), stored by the episode runner, and — on resume — taken back
from the store instead of being sampled again (a stored rollout is never lost nor duplicated)."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable

from store import Store
from store.common import JSON
from store.trajectories import Trajectory, Turn

from ..inference import StaleSampleError, check_fresh


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
    #: sampled by other weights than the trainer's current ones: refused (masked)
    stale: bool = False

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
    def human_rank(self) -> float | None:
        v = self.grade.get("human_rank")
        return float(v) if isinstance(v, (int, float)) else None

    @classmethod
    def from_trajectory(cls, t: Trajectory, *, reused: bool = False) -> "Rollout":
        return cls(id=t.id, env_id=t.env_id or "", group_id=t.group_id or "", rng_seed=int(t.rng_seed or 0),
                   reward=t.reward, timed_out=t.timed_out, turns=list(t.turns), grade=dict(t.grade or {}),
                   wall_s=t.wall_s, sandbox_s=t.sandbox_s, reused=reused, errored=t.status == "error")


def fresh(rollout: Rollout, version: int, max_staleness: int = 0) -> bool:
    """Whether every sampled turn of ``rollout`` came from policy ``version`` (or at most ``max_staleness``
    versions before it). Turns without a recorded version (text-only policies, trajectories stored before
    versions were) are not judged."""
    get = (lambda t, k: t.get(k)) if rollout.turns and isinstance(rollout.turns[0], dict) else getattr
    versions = [get(t, "policy_version") for t in rollout.turns if get(t, "policy_version") is not None]
    try:
        check_fresh(versions, version, max_staleness=max_staleness)
    except StaleSampleError:
        return False
    return True


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
    """(group id, rng seed) → the stored rollout of this step."""
    out: dict[tuple[str, int], Rollout] = {}
    for row in store.trajectories.list(run_id=run_id, step=step):
        r = Rollout.from_trajectory(store.trajectories.get(row.id), reused=True)
        out[(r.group_id, r.rng_seed)] = r
    return out


@dataclass
class StepRollouts:
    rollouts: list[Rollout]
    wall_s: float
    reused: int


def collect(
    store: Store, run_id: str, step: int, env_ids: list[str], group_size: int, base_seed: int,
    run_one: Callable[[str, str, int], Trajectory], *, workers: int = 2, on_done: Callable[[Rollout], None] | None = None,
) -> StepRollouts:
    """Run (or take back from the store) ``group_size`` rollouts for each environment of the step.
    ``run_one(env_id, group_id, rng_seed)`` runs one episode and stores it; it returns a Trajectory."""
    t0 = time.perf_counter()
    have = stored_rollouts(store, run_id, step)
    jobs: list[tuple[str, str, int]] = []
    done: list[Rollout] = []
    for k, env_id in enumerate(env_ids):
        gid = group_id_for(run_id, step, k)
        for i in range(group_size):
            seed = rollout_seed(base_seed, step, k, i, group_size)
            if (gid, seed) in have:
                done.append(have[(gid, seed)])
                if on_done:
                    on_done(have[(gid, seed)])
            else:
                jobs.append((env_id, gid, seed))
    reused = len(done)
    if jobs:
        with ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="rollout") as pool:
            futures = [pool.submit(run_one, *job) for job in jobs]
            try:
                for fut in futures:
                    r = Rollout.from_trajectory(fut.result())
                    done.append(r)
                    if on_done:
                        on_done(r)
            except BaseException:
                for fut in futures:
                    fut.cancel()
                raise
    order = {(group_id_for(run_id, step, k), rollout_seed(base_seed, step, k, i, group_size)): (k, i)
             for k in range(len(env_ids)) for i in range(group_size)}
    done.sort(key=lambda r: order.get((r.group_id, r.rng_seed), (10**9, 0)))
    return StepRollouts(done, time.perf_counter() - t0, reused)
