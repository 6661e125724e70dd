"""Evaluation: many episodes of one policy + scaffold over a set of environments and RNG seeds, in parallel.

Reports the medal rate (any / gold / silver / bronze), valid-submission rate, above-median rate and the mean rank
on each environment's board (HumanRank on a real leaderboard, the rank among N reference solutions on a
population board: ``rank_label``), each as mean ± SEM over seeds, plus a per-competition table (:mod:`engine.eval.report`). Results go
into ``eval_results`` under a ``runs`` row of kind ``eval``.

Which environments: :mod:`engine.eval.select`.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, NotRequired, Sequence, TypedDict, cast

from store import Store

from ..agents.policies import load_policy
from ..agents.rollout import register_env, run_episode
from ..agents.scaffolds import get_scaffold
from ..config import SandboxSettings, load_settings
from ..envs.layout import EnvSpec
from ..errors import SandmleError
from ..executors import Executor, Worker, executor_class, get_executor
from ..upkeep import resumable
from .mlebench import Skipped
from .report import aggregate, left_out, rank_label


# ------------------------------------------------------------------ running
#: executor names of eval runs stored before every kind of work went through engine.executors
LEGACY_KINDS = {"thread": "local"}


class EvalConfig(TypedDict):
    """An eval run's config (the ``runs`` row's ``config``): what ``runs resume`` needs to finish it."""

    policy: str  #: the policy's name
    policy_spec: str | None  #: the spec it was loaded from (None: a policy object, which cannot be resumed)
    scaffold: str
    envs: list[str]
    rng_seeds: list[int]
    max_turns: int
    step_timeout_s: float
    episode_timeout_s: float
    reward: str
    workers: int
    executor: str
    address: str | None
    skipped: NotRequired[list[dict[str, str]]]
    sandbox: NotRequired[dict[str, Any]]  #: the SandboxSettings its code ran under (absent in older runs)
    isolation: NotRequired[str]  #: ``unisolated`` where its code ran with no isolation (``SandboxSettings.isolation_note``)


@dataclass
class EvalReport:
    run_id: str
    policy: str
    scaffold: str
    n_envs: int
    rng_seeds: list[int]
    n_episodes: int
    summary: dict[str, dict[str, float | None]]  #: rate → {"mean", "sem"} (None: n/a everywhere)
    per_env: list[dict[str, Any]]  #: per competition: MLE-bench's report fields as rates, score, the rank
    wall_s: float
    #: what the rank is, named for the boards: "HumanRank", "rank among 48 reference solutions", ...
    rank_label: str = "rank"
    status: str = "done"
    skipped: list[dict[str, str]] = field(default_factory=list)  #: competitions not run ({"id", "reason"})
    left_out: dict[str, Any] = field(default_factory=dict)  #: episodes without a leaderboard (medals n/a)
    #: episodes that could not run (an unreachable policy endpoint, a sandbox failure): left out of every rate
    errors: int = 0
    #: the first of their errors
    error: str | None = None
    workers_lost: list[str] = field(default_factory=list)  #: workers that died (their episodes were run again)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def result_row(traj, scaffold: str) -> dict[str, Any]:
    """The ``eval_results`` row of one trajectory."""
    g = traj.grade or {}
    return {"env_id": traj.env_id, "trajectory_id": traj.id, "policy": traj.policy, "scaffold": scaffold,
            "rng_seed": traj.rng_seed, "score": g.get("score"), "valid": bool(g.get("valid_submission")),
            "gold": bool(g.get("gold_medal")), "silver": bool(g.get("silver_medal")),
            "bronze": bool(g.get("bronze_medal")), "above_median": bool(g.get("above_median")),
            "rank": g.get("rank", g.get("human_rank")), "reward": traj.reward,
            # medal thresholds and the rank exist only against a leaderboard; without one they are n/a, not 0
            "has_leaderboard": g.get("gold_threshold") is not None,
            # which board it was graded on: HumanRank on a real leaderboard, else among reference solutions
            "board": g.get("board"), "board_entries": g.get("board_entries"),
            # an episode that could not run is not a result (`runs resume` plays it again)
            "error": traj.error if traj.status == "error" else None}


@dataclass
class EpisodeItem:
    """One episode of an eval run, as an executor's work item."""

    env: EnvSpec
    rng_seed: int
    policy: Any  #: a spec (each worker loads it once) or, on the local executor, a Policy shared by its threads
    scaffold: str
    run_id: str
    kw: dict[str, Any]


def run_episode_item(worker: Worker, item: EpisodeItem) -> dict[str, Any]:
    """The executor's work function: one episode with the worker's sandbox backend and store; its result row."""
    policy = item.policy
    if isinstance(policy, str):
        policy = worker.cached(("policy", policy), lambda: load_policy(item.policy, store=worker.store))
    traj = run_episode(item.env, policy, scaffold=item.scaffold, sandbox=worker.sandbox, store=worker.store,
                       run_id=item.run_id, rng_seed=item.rng_seed, **item.kw)
    return result_row(traj, item.scaffold)


def run_eval(store: Store, policy: str | Any, envs: list[EnvSpec], *, scaffold: str = "react",
             rng_seeds: list[int] | tuple[int, ...] = (0,), max_turns: int | None = None,
             step_timeout_s: float | None = None, episode_timeout_s: float = 1200, reward: str = "milestone",
             workers: int = 2, executor: str = "local", address: str | None = None, name: str | None = None,
             parent_id: str | None = None, sandbox: SandboxSettings | None = None,
             progress: Callable[[int, int], None] | None = None, on_lost: Callable[[str], None] | None = None,
             skipped: Sequence[Skipped] = ()) -> EvalReport:
    """Evaluate ``policy`` (a spec string, or a Policy object with the ``local`` executor) on every environment
    with every seed, on ``workers`` workers of ``executor`` (local | process | ray at ``address``, see
    :mod:`engine.executors`). Stores each trajectory, one ``eval_results`` row per episode and an ``eval`` run.
    Code runs under ``sandbox`` (default: the settings' ``[sandbox]``; kept in the run's config for a resume);
    ``step_timeout_s`` defaults to its ``timeout_s``; ``skipped`` (from ``select``) goes into the report."""
    played = get_scaffold(scaffold)
    sandbox = sandbox or load_settings().sandbox
    if step_timeout_s is None:
        step_timeout_s = sandbox.timeout_s
    if not envs:
        raise SandmleError("no environment to evaluate on")
    seeds = [int(s) for s in rng_seeds]
    turns = max_turns or played.turns
    spec = policy if isinstance(policy, str) else None
    if spec is None and not executor_class(LEGACY_KINDS.get(executor, executor)).in_process:
        raise SandmleError(f"a policy object can only be evaluated with the local executor (its workers share it), "
                           f"not {executor}; pass a spec string")
    for env in envs:
        register_env(store, env)
    config: EvalConfig = {"policy": spec or "", "policy_spec": spec, "scaffold": scaffold,
              "envs": [e.id for e in envs], "rng_seeds": seeds, "max_turns": turns, "step_timeout_s": step_timeout_s,
              "episode_timeout_s": episode_timeout_s, "reward": reward, "workers": workers, "executor": executor,
              "address": address, "skipped": [s.to_dict() for s in skipped], "sandbox": sandbox.model_dump(),
              "isolation": sandbox.isolation_note}
    with _executor(store, config, on_lost) as ex:
        policy_obj = _policy(store, ex, policy)
        config["policy"] = getattr(policy_obj, "name", None) or config["policy"]
        run_id = store.runs.create("eval", config, name=name, parent_id=parent_id)
        jobs = [(env, seed) for seed in seeds for env in envs]
        return _execute(store, ex, run_id, config, policy_obj, jobs, progress)


def resume_eval(store: Store, run_id: str, *, progress: Callable[[int, int], None] | None = None,
                on_lost: Callable[[str], None] | None = None) -> EvalReport:
    """Finish an eval run that was killed or stopped: the episodes it has not stored (and those that could not
    run) are played with the same seeds and settings; the ones it finished are kept."""
    row = resumable(store, run_id, "eval")
    config = cast(EvalConfig, row["config"])
    policy_spec = config["policy_spec"]
    if policy_spec is None:
        raise SandmleError(f"eval run {row['id']} evaluated a policy object, not a spec: it cannot be resumed")
    envs = {env_id: EnvSpec.from_store(store, env_id) for env_id in config["envs"]}
    jobs = [(envs[env_id], seed) for env_id, seed in missing_episodes(store, row["id"])]
    with _executor(store, config, on_lost) as ex:
        store.runs.drop_eval_errors(row["id"])  # episodes that could not run get another try
        store.runs.start(row["id"])
        return _execute(store, ex, row["id"], config, _policy(store, ex, policy_spec), jobs, progress)


def _executor(store: Store, config: EvalConfig, on_lost: Callable[[str], None] | None) -> Executor:
    """The run's executor, its workers' sandbox backends started: one that cannot start fails here, first. (A run
    stored before its config kept the sandbox settings runs under the current ones.)"""
    kind = LEGACY_KINDS.get(config["executor"], config["executor"])
    sandbox = SandboxSettings(**config["sandbox"]) if "sandbox" in config else load_settings().sandbox
    return get_executor(kind, workers=config["workers"], store=store, sandbox=sandbox,
                        address=config.get("address"), on_lost=on_lost).prepare()


def _policy(store: Store, executor: Executor, policy: Any) -> Any:
    """What the work items carry: on the local executor one policy object its threads share (loaded here from a
    spec); elsewhere the spec, which each worker loads once."""
    if isinstance(policy, str) and executor.in_process:
        return load_policy(policy, store=store)
    return policy


def missing_episodes(store: Store, run_id: str) -> list[tuple[str, int]]:
    """The (environment id, seed) episodes of an eval run with no result yet (or one that could not run)."""
    config = cast(EvalConfig, store.runs.get(run_id)["config"])
    finished = {(r["env_id"], r["rng_seed"]) for r in store.runs.eval_results(run_id) if not r.get("error")}
    return [(env_id, seed) for seed in config["rng_seeds"] for env_id in config["envs"]
            if (env_id, seed) not in finished]


def _execute(store: Store, ex: Executor, run_id: str, config: EvalConfig, policy: Any,
             jobs: list[tuple[EnvSpec, int]], progress: Callable[[int, int], None] | None) -> EvalReport:
    """Play ``jobs`` (environment, seed) under eval run ``run_id`` on the executor's workers, storing each
    episode's result as it ends; then report on every episode the run holds."""
    scaffold = config["scaffold"]
    kw = {"max_turns": config["max_turns"], "step_timeout_s": config["step_timeout_s"],
          "episode_timeout_s": config["episode_timeout_s"], "reward": config["reward"]}
    items = [EpisodeItem(env, seed, policy, scaffold, run_id, kw) for env, seed in jobs]
    t0 = time.monotonic()

    def partial() -> dict[str, Any]:
        return {"partial": aggregate(store.runs.eval_results(run_id))[0], "workers_lost": ex.lost}

    try:
        for n_done, (_, row) in enumerate(ex.stream(run_episode_item, items), 1):
            store.runs.add_eval_results(run_id, [row])
            store.runs.heartbeat(run_id)
            if progress:
                progress(n_done, len(items))
    except KeyboardInterrupt:
        store.runs.finish(run_id, "stopped", summary=partial(), error="interrupted")
        raise
    except BaseException as exc:
        store.runs.finish(run_id, "failed", error=f"{type(exc).__name__}: {exc}", summary=partial())
        raise
    rows = store.runs.eval_results(run_id)  # this attempt's episodes and those of an earlier, killed one
    errors = [r for r in rows if r.get("error")]
    summary, table = aggregate(rows)
    report = EvalReport(run_id=run_id, policy=config["policy"], scaffold=scaffold, n_envs=len(config["envs"]),
                        rng_seeds=config["rng_seeds"], n_episodes=len(rows) - len(errors), summary=summary,
                        per_env=table, wall_s=time.monotonic() - t0, skipped=config.get("skipped", []),
                        left_out=left_out(rows), errors=len(errors), error=errors[0]["error"] if errors else None,
                        workers_lost=ex.lost, rank_label=rank_label(rows))
    result = {"summary": summary, "per_env": table, "n_episodes": report.n_episodes, "errors": report.errors,
              "rank_label": report.rank_label,
              "wall_s": report.wall_s, "skipped": report.skipped, "left_out": report.left_out,
              "workers_lost": report.workers_lost}
    if rows and len(errors) == len(rows):
        report.status = "failed"
        store.runs.finish(run_id, "failed", summary=result, error=f"every episode failed to run: {report.error}")
    else:
        store.runs.finish(run_id, "done", summary=result)
    return report
