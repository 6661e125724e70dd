"""Evaluating a policy on environments with a fixed budget: one episode per (environment, seed), results stored
as ``eval_results`` rows of an eval run, and summarized as medal rate, valid rate and HumanRank, mean ± SEM."""

from __future__ import annotations

import math
import statistics
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Sequence


@dataclass
class Summary:
    n: int
    medal_rate: float
    medal_sem: float
    valid_rate: float
    valid_sem: float
    human_rank: float
    human_rank_sem: float
    reward: float
    reward_sem: float

    def to_dict(self) -> dict[str, float]:
        return dict(self.__dict__)


def mean_sem(values: Sequence[float]) -> tuple[float, float]:
    vals = [float(v) for v in values]
    if not vals:
        return float("nan"), float("nan")
    if len(vals) == 1:
        return vals[0], 0.0
    return statistics.fmean(vals), statistics.stdev(vals) / math.sqrt(len(vals))


def summarize(rows: Sequence[dict[str, Any]]) -> Summary:
    medal = [1.0 if (r.get("gold") or r.get("silver") or r.get("bronze")) else 0.0 for r in rows]
    valid = [1.0 if r.get("valid") else 0.0 for r in rows]
    # an invalid submission ranks last: HumanRank 0
    rank = [float(r["human_rank"]) if r.get("human_rank") is not None else 0.0 for r in rows]
    reward = [float(r.get("reward") or 0.0) for r in rows]
    (m, ms), (v, vs), (h, hs), (w, ws) = mean_sem(medal), mean_sem(valid), mean_sem(rank), mean_sem(reward)
    return Summary(len(rows), m, ms, v, vs, h, hs, w, ws)


def result_row(traj: Any, policy_name: str, scaffold: str) -> dict[str, Any]:
    g = traj.grade or {}
    return {"env_id": traj.env_id, "trajectory_id": traj.id, "policy": policy_name, "scaffold": scaffold,
            "rng_seed": traj.rng_seed, "score": g.get("score"), "valid": bool(g.get("valid_submission")),
            "gold": bool(g.get("gold_medal")), "silver": bool(g.get("silver_medal")),
            "bronze": bool(g.get("bronze_medal")), "above_median": bool(g.get("above_median")),
            "human_rank": g.get("human_rank"), "reward": traj.reward}


def evaluate(store, policy: Any, env_ids: Sequence[str], *, scaffold: str = "react", seeds: Sequence[int] = (0,),
             max_turns: int = 15, step_timeout_s: float = 300, episode_timeout_s: float = 1200, workers: int = 2,
             name: str | None = None, parent_id: str | None = None, label: str | None = None,
             on_episode: Callable[[dict], None] | None = None) -> tuple[str, Summary]:
    """Run ``policy`` once per (environment, seed) in ``scaffold``; returns (eval run id, summary)."""
    from ..agents.rollout import run_episode
    from ..environment import EnvSpec

    label = label or getattr(policy, "name", "policy")
    run_id = store.runs.create("eval", {"policy": label, "scaffold": scaffold, "envs": list(env_ids),
                                        "seeds": list(seeds), "max_turns": max_turns}, name=name, parent_id=parent_id)
    jobs = [(e, s) for e in env_ids for s in seeds]

    def one(job: tuple[str, int]) -> dict[str, Any]:
        env_id, seed = job
        traj = run_episode(EnvSpec.from_store(store, env_id), policy, scaffold=scaffold, store=store, run_id=run_id,
                           rng_seed=seed, max_turns=max_turns, step_timeout_s=step_timeout_s,
                           episode_timeout_s=episode_timeout_s)
        row = result_row(traj, label, scaffold)
        store.runs.add_eval_results(run_id, [row])
        if on_episode:
            on_episode(row)
        return row

    try:
        with ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="eval") as pool:
            rows = list(pool.map(one, jobs))
    except BaseException as exc:
        store.runs.finish(run_id, "failed", error=f"{type(exc).__name__}: {exc}")
        raise
    summary = summarize(rows)
    store.runs.finish(run_id, "done", summary=summary.to_dict())
    return run_id, summary


def relative_gain(new: float, base: float) -> float | None:
    """new / base − 1 (None when the base is 0: a ratio does not exist)."""
    if base <= 0:
        return None
    return new / base - 1.0
