"""Evaluation: many episodes of one policy + scaffold over a set of environments and RNG seeds, in parallel.

Reports the medal rate (any / gold / silver / bronze), valid-submission rate, above-median rate and mean
HumanRank, each as mean ± SEM over seeds, plus a per-competition table (:mod:`engine.eval.report`). Results go
into ``eval_results`` under a ``runs`` row of kind ``eval``.

Which environments: :mod:`engine.eval.select`.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

from store import Store

from ..agents.policies import load_policy
from ..agents.rollout import register_env, run_episode
from ..agents.scaffolds import get_scaffold
from ..config import load_settings
from ..envs.layout import EnvSpec
from ..errors import SandmleError
from ..sandbox import get_backend
from .mlebench import Skipped
from .report import aggregate, left_out


# ------------------------------------------------------------------ running
#: default turn budget per scaffold (react: model calls; aide: tree nodes; oneshot: one script)
DEFAULT_TURNS = {"react": 15, "aide": 5, "oneshot": 1}


@dataclass
class EvalReport:
    run_id: str
    policy: str
    scaffold: str
    n_envs: int
    rng_seeds: list[int]
    n_episodes: int
    summary: dict[str, dict[str, float | None]]  #: rate → {"mean", "sem"} (None: n/a everywhere)
    per_env: list[dict[str, Any]]  #: per competition: MLE-bench's report fields as rates, score, HumanRank
    wall_s: float
    status: str = "done"
    skipped: list[dict[str, str]] = field(default_factory=list)  #: competitions not run ({"id", "reason"})
    left_out: dict[str, Any] = field(default_factory=dict)  #: episodes without a leaderboard (medals n/a)
    #: episodes that could not run (an unreachable policy endpoint, a sandbox failure): left out of every rate
    errors: int = 0
    #: the first of their errors
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def result_row(traj, scaffold: str) -> dict[str, Any]:
    """The ``eval_results`` row of one trajectory."""
    g = traj.grade or {}
    return {"env_id": traj.env_id, "trajectory_id": traj.id, "policy": traj.policy, "scaffold": scaffold,
            "rng_seed": traj.rng_seed, "score": g.get("score"), "valid": bool(g.get("valid_submission")),
            "gold": bool(g.get("gold_medal")), "silver": bool(g.get("silver_medal")),
            "bronze": bool(g.get("bronze_medal")), "above_median": bool(g.get("above_median")),
            "human_rank": g.get("human_rank"), "reward": traj.reward,
            # medal thresholds and HumanRank exist only against a leaderboard; without one they are n/a, not 0
            "has_leaderboard": g.get("gold_threshold") is not None,
            # an episode that could not run is not a result (`runs resume` plays it again)
            "error": traj.error if traj.status == "error" else None}


def _episode_in_process(args: tuple) -> dict[str, Any]:
    """Worker of the process pool: its own store, policy and sandbox backend (kept between episodes)."""
    store_path, env, policy_spec, scaffold, seed, run_id, kw = args
    cache = _episode_in_process.__dict__.setdefault("cache", {})
    if "store" not in cache:
        cache["store"] = Store(store_path)
    if policy_spec not in cache:
        cache[policy_spec] = load_policy(policy_spec)
    if "backend" not in cache:
        cache["backend"] = sandbox_backend(cache["store"])
    traj = run_episode(env, cache[policy_spec], scaffold=scaffold, sandbox=cache["backend"], store=cache["store"],
                       run_id=run_id, rng_seed=seed, **kw)
    return result_row(traj, scaffold)


def run_parallel(fn: Callable[[Any], Any], items: list[Any], *, workers: int, kind: str = "thread",
                 on_done: Callable[[Any], None] | None = None) -> list[Any]:
    """Run ``fn`` over ``items`` concurrently (threads or spawned processes); results in completion order are
    passed to ``on_done`` as they arrive and returned in the items' order."""
    if kind == "thread":
        pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="eval")
    elif kind == "process":
        import multiprocessing

        pool = ProcessPoolExecutor(max_workers=max(1, workers), mp_context=multiprocessing.get_context("spawn"))
    else:
        raise SandmleError(f"unknown executor kind {kind!r}; expected thread or process")
    results: list[Any] = [None] * len(items)
    try:
        futures = {pool.submit(fn, item): i for i, item in enumerate(items)}
        for fut in as_completed(futures):
            results[futures[fut]] = fut.result()
            if on_done:
                on_done(results[futures[fut]])
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    return results


def sandbox_backend(store):
    """The sandbox backend of the settings, with their per-step limits (timeout, memory, disk quota)."""
    settings = load_settings().sandbox
    return get_backend(settings.backend, store=store, settings=settings)


def run_eval(store, policy: str | Any, envs: list[EnvSpec], *, scaffold: str = "react",
             rng_seeds: list[int] | tuple[int, ...] = (0,), max_turns: int | None = None,
             step_timeout_s: float | None = None, episode_timeout_s: float = 1200, reward: str = "milestone",
             workers: int = 2, executor: str = "thread", name: str | None = None, parent_id: str | None = None,
             progress: Callable[[int, int], None] | None = None, skipped: list[Skipped] = ()) -> EvalReport:
    """Evaluate ``policy`` (a spec string, or a Policy object with ``executor="thread"``) on every environment
    with every seed. Stores each trajectory, one ``eval_results`` row per episode and an ``eval`` run.
    ``step_timeout_s`` defaults to ``[sandbox] timeout_s``; ``skipped`` (from ``select``) goes into the report."""
    get_scaffold(scaffold)
    if step_timeout_s is None:
        step_timeout_s = load_settings().sandbox.timeout_s
    if not envs:
        raise SandmleError("no environment to evaluate on")
    seeds = [int(s) for s in rng_seeds]
    turns = max_turns or DEFAULT_TURNS.get(scaffold, 15)
    spec = policy if isinstance(policy, str) else None
    if spec is None and executor != "thread":
        raise SandmleError("a policy object can only be evaluated with the thread executor; pass a spec string")
    policy_obj = load_policy(spec) if spec is not None and executor == "thread" else policy
    label = getattr(policy_obj, "name", spec)
    for env in envs:
        register_env(store, env)
    config = {"policy": label, "policy_spec": spec, "scaffold": scaffold, "envs": [e.id for e in envs],
              "rng_seeds": seeds, "max_turns": turns, "step_timeout_s": step_timeout_s,
              "episode_timeout_s": episode_timeout_s, "reward": reward, "workers": workers, "executor": executor,
              "skipped": [s.to_dict() for s in skipped]}
    run_id = store.runs.create("eval", config, name=name, parent_id=parent_id)
    jobs = [(env, seed) for seed in seeds for env in envs]
    return _execute(store, run_id, config, policy_obj, jobs, progress)


def resume_eval(store, run_id: str, *, progress: Callable[[int, int], None] | None = None) -> EvalReport:
    """Finish an eval run that was killed or stopped: the episodes it has not stored (and those that could not
    run) are played with the same seeds and settings; the ones it finished are kept."""
    row = store.runs.get(run_id)
    if row["kind"] != "eval":
        raise SandmleError(f"run {row['id']} is a {row['kind']} run, not an eval run")
    if row["status"] == "done":
        raise SandmleError(f"eval run {row['id']} already finished")
    config = row["config"]
    if config.get("policy_spec") is None:
        raise SandmleError(f"eval run {row['id']} evaluated a policy object, not a spec: it cannot be resumed")
    envs = {env_id: EnvSpec.from_store(store, env_id) for env_id in config["envs"]}
    jobs = [(envs[env_id], seed) for env_id, seed in missing_episodes(store, row["id"])]
    store.runs.drop_eval_errors(row["id"])  # episodes that could not run get another try
    store.runs.start(row["id"])
    policy_obj = load_policy(config["policy_spec"]) if config["executor"] == "thread" else None
    return _execute(store, row["id"], config, policy_obj, jobs, progress)


def missing_episodes(store, run_id: str) -> list[tuple[str, int]]:
    """The (environment id, seed) episodes of an eval run with no result yet (or one that could not run)."""
    config = store.runs.get(run_id)["config"]
    finished = {(r["env_id"], r["rng_seed"]) for r in store.runs.eval_results(run_id) if not r.get("error")}
    return [(env_id, seed) for seed in config["rng_seeds"] for env_id in config["envs"]
            if (env_id, seed) not in finished]


def _execute(store, run_id: str, config: dict[str, Any], policy_obj: Any, jobs: list[tuple[EnvSpec, int]],
             progress: Callable[[int, int], None] | None) -> EvalReport:
    """Play ``jobs`` (environment, seed) under eval run ``run_id``, storing each episode's result as it ends;
    then report on every episode the run holds."""
    scaffold, spec = config["scaffold"], config["policy_spec"]
    kw = {"max_turns": config["max_turns"], "step_timeout_s": config["step_timeout_s"],
          "episode_timeout_s": config["episode_timeout_s"], "reward": config["reward"]}
    n_done = 0
    t0 = time.monotonic()
    local = threading.local()
    backends: list[Any] = []
    lock = threading.Lock()

    def one(job: tuple[EnvSpec, int]) -> dict[str, Any]:
        env, seed = job
        if not hasattr(local, "backend"):
            local.backend = sandbox_backend(store)
            with lock:
                backends.append(local.backend)
        traj = run_episode(env, policy_obj, scaffold=scaffold, sandbox=local.backend, store=store, run_id=run_id,
                           rng_seed=seed, **kw)
        return result_row(traj, scaffold)

    def done(row: dict[str, Any]) -> None:
        nonlocal n_done
        n_done += 1
        store.runs.add_eval_results(run_id, [row])
        store.runs.heartbeat(run_id)
        if progress:
            progress(n_done, len(jobs))

    def partial() -> dict[str, Any]:
        return {"partial": aggregate(store.runs.eval_results(run_id))[0]}

    status = "done"
    try:
        if config["executor"] == "thread":
            run_parallel(one, jobs, workers=config["workers"], kind="thread", on_done=done)
        else:
            items = [(str(store.path), env, spec, scaffold, seed, run_id, kw) for env, seed in jobs]
            run_parallel(_episode_in_process, items, workers=config["workers"], kind="process", on_done=done)
    except KeyboardInterrupt:
        status = "stopped"
        raise
    except BaseException as exc:
        status = "failed"
        store.runs.finish(run_id, "failed", error=f"{type(exc).__name__}: {exc}", summary=partial())
        raise
    finally:
        for b in backends:
            b.close()
        if status == "stopped":
            store.runs.finish(run_id, "stopped", summary=partial(), error="interrupted")
    rows = store.runs.eval_results(run_id)  # this attempt's episodes and those of an earlier, killed one
    errors = [r for r in rows if r.get("error")]
    summary, table = aggregate(rows)
    report = EvalReport(run_id=run_id, policy=config["policy"], scaffold=scaffold, n_envs=len(config["envs"]),
                        rng_seeds=config["rng_seeds"], n_episodes=len(rows) - len(errors), summary=summary,
                        per_env=table, wall_s=time.monotonic() - t0, skipped=config.get("skipped", []),
                        left_out=left_out(rows), errors=len(errors), error=errors[0]["error"] if errors else None)
    result = {"summary": summary, "per_env": table, "n_episodes": report.n_episodes, "errors": report.errors,
              "wall_s": report.wall_s, "skipped": report.skipped, "left_out": report.left_out}
    if rows and len(errors) == len(rows):
        report.status = "failed"
        store.runs.finish(run_id, "failed", summary=result, error=f"every episode failed to run: {report.error}")
    else:
        store.runs.finish(run_id, "done", summary=result)
    return report
