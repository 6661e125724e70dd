"""The constant strategies: every option a policy can pick, run as a constant policy on the same tasks.

A policy here picks one of the 32 strategies of :mod:`engine.agents.templates` (:func:`options`). Run as a
*constant* policy — the option's solution trained on all training rows, whatever the task — its submission is
deterministic, so one run per option and task suffices: all options of a task go into one sandbox run
(:func:`constant_results`), cached by the task's content (its files, answers, grading spec and board) in
``<data dir>/envs-imported/.constants/<env id>.json`` (:func:`cache_dir`), beside the population boards and the
audit cache of the same data dir. Over a set of tasks (:func:`best_constant`):

- the **best constant strategy**: the option with the highest medal rate over the tasks (ties: the first in
  :func:`options`' order) — what a policy that ignored the task and always picked one option would get at best;
- the **per-task oracle**: the best option of each task, averaged — what a policy that read each task perfectly and
  picked among the same options would get.

Both can be weighed by a policy's episodes (``weights``): ``bench learn`` chooses and rates the best constant on
exactly the (task, RNG seed) pairs it compares, so a task counts as often as the policy played it there.

``sandmle eval constants`` reports both for a selector or an eval run's environments; ``bench learn`` sets them
beside SFT and SFT+GRPO; the workbench's Eval compare shows them when every compared environment is cached.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from store import Store

from ..agents.templates import MODELS, TEXTS, Choice
from ..config import load_settings
from ..envs.layout import EnvSpec
from ..errors import InvalidSubmission, SandmleError
from ..grading.score import read_frame, score_many
from ..grading.thresholds import Thresholds
from ..sandbox import Limits, RunMeta, SandboxBackend, get_backend
from ..synthesis.solutions import with_solution_imports
from ..synthesis.verifier import run_ladder
from .boards import MIN_TIMEOUT_S, board_key
from .realsuite import IMPORTED_DIR

#: the cache's folder name, inside a data dir's ``envs-imported/``
CONSTANTS_CACHE = ".constants"

#: option key → {score, valid, medal} of one environment
Results = dict[str, dict[str, Any]]


def options() -> list[Choice]:
    """Every strategy a policy can pick (the scripted teacher's and tiny's options)."""
    return [Choice(m, t, r, c) for m in MODELS for t in TEXTS for r in (True, False) for c in (True, False)]


def cache_dir(data_dir: str | Path) -> Path:
    """Where a data dir keeps the constants of its environments, one JSON file per environment."""
    return Path(data_dir) / IMPORTED_DIR / CONSTANTS_CACHE


def _file(key: str) -> str:
    return key.replace("/", "_").replace("+", "-")


def _cache_key(env: EnvSpec) -> str:
    return hashlib.sha256(json.dumps([board_key(env), env.thresholds, [c.key for c in options()]],
                                     sort_keys=True, default=str).encode()).hexdigest()


def has_thresholds(env: EnvSpec) -> bool:
    """Whether a medal means something on ``env`` (it has medal thresholds: a leaderboard or a built board)."""
    th = env.thresholds or {}
    return all(k in th for k in ("gold", "silver", "bronze", "median"))


def cached_results(env: EnvSpec, cache: Path) -> Results | None:
    """The cached :func:`constant_results` of ``env`` in the folder ``cache``, or None when there is none for its
    present content (reads files; runs nothing)."""
    try:
        data = json.loads((cache / f"{env.id}.json").read_text())
        if data.get("key") == _cache_key(env):
            return dict(data["options"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return None


def constant_results(env: EnvSpec, cache: Path, box: SandboxBackend) -> Results:
    """Option key → {score, valid, medal} of the constant policy of every option on ``env``: from the folder
    ``cache``, else one sandbox run of every option (then cached there)."""
    found = cached_results(env, cache)
    if found is not None:
        return found
    choices = {_file(c.key): c for c in options()}
    limits = Limits.from_settings(load_settings().sandbox)
    limits = dataclasses.replace(limits, timeout_s=max(limits.timeout_s, MIN_TIMEOUT_S),
                                 cpu_s=max(limits.cpu_s, 2 * MIN_TIMEOUT_S))
    runs, subs, _ = run_ladder(box, env.public, env.grade, (0,), limits=limits, meta=RunMeta(env_id=env.id),
                               ladder={f: c.strategy() for f, c in choices.items()})
    answers = read_frame(env.answers, env.grade.id_column)
    scores = score_many(env.grade, answers, {name: sub for (name, _), sub in subs.items()})
    th = Thresholds.from_dict(env.thresholds or {}, env.grade.lower_is_better)
    out: Results = {}
    for name, choice in choices.items():
        value = scores.get(name)
        score = None if value is None or isinstance(value, InvalidSubmission) else float(value)
        out[choice.key] = {"score": score, "valid": score is not None,
                           "medal": bool(score is not None and th.medal(score))}
    write_results(env, cache, out, failed=[{"name": r.name, "status": r.status, "error": r.error[-200:]}
                                         for r in runs if r.status != "ok"])
    return out


def write_results(env: EnvSpec, cache: Path, results: Results, *, failed: Sequence[dict[str, Any]] = ()) -> Path:
    """Cache ``results`` of ``env`` (keyed by its present content) in the folder ``cache``; ``failed``: the option
    runs that did not finish, kept with them. Written whole or not at all (a temporary file renamed)."""
    path = cache / f"{env.id}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"key": _cache_key(env), "env": env.id, "options": results, "runs": list(failed)}))
    tmp.replace(path)
    return path


def constants_of(envs: Sequence[EnvSpec], cache: Path, log: Callable[[str], None] | None = None, *,
                 store: Store | None = None) -> dict[str, Results]:
    """env id → :func:`constant_results` for every environment: one sandbox run per environment not cached in the
    folder ``cache`` (the sandbox starts only if one is not; ``store`` records its runs), a ``log`` line each."""
    box: SandboxBackend | None = None
    try:
        out = {}
        for i, env in enumerate(envs, 1):
            found = cached_results(env, cache)
            if found is None:
                if box is None:
                    box = get_backend(store=store, settings=with_solution_imports(load_settings().sandbox))
                found = constant_results(env, cache, box)
            out[env.id] = found
            if log is not None:
                best = max(found.items(), key=lambda kv: kv[1]["medal"])
                log(f"constants [{i}/{len(envs)}] {env.id}: {sum(v['medal'] for v in found.values())} of "
                    f"{len(found)} options earn a medal (e.g. {best[0] if best[1]['medal'] else 'none'})")
        return out
    finally:
        if box is not None:
            box.close()


def best_constant(constants: dict[str, Results], weights: Mapping[str, float] | None = None) -> dict[str, Any]:
    """The option with the highest medal rate over the tasks (ties: the first in :func:`options`' order), its
    rate, and the per-task oracle (the best option of each task).

    ``weights``: task → how much the task counts — e.g. how many episodes of it a policy has (``bench learn`` passes
    exactly the policy's (task, RNG seed) pairs, so the constant's rate is over the same episodes as the policy's,
    errored episodes left out of both). Tasks of weight 0 are left out. None: every task of ``constants`` once."""
    w = {t: 1.0 for t in constants} if weights is None else {t: float(v) for t, v in weights.items() if v > 0}
    tasks = sorted(w)
    if not tasks:
        raise SandmleError("no environment to take the best constant strategy over")
    missing = [t for t in tasks if t not in constants]
    if missing:
        raise SandmleError(f"no constant strategies for {len(missing)} task(s): {', '.join(missing[:3])}",
                           hint="`sandmle eval constants --envs ...` runs them")
    total = sum(w.values())
    rates = {c.key: sum(w[t] * constants[t][c.key]["medal"] for t in tasks) / total for c in options()}
    best = max(rates, key=lambda k: rates[k])  # max keeps the first of equal rates
    oracle = sum(w[t] * max(v["medal"] for v in constants[t].values()) for t in tasks) / total
    return {"best_constant_strategy": best, "best_constant_medal": rates[best], "oracle_medal": oracle,
            "constant_medals": dict(sorted(rates.items(), key=lambda kv: -kv[1])[:5]),
            "best_constant_per_task": {t: constants[t][best]["medal"] for t in tasks},
            "oracle_strategies": {t: sorted(k for k, v in constants[t].items() if v["medal"])[:3] for t in tasks}}


def cached_best(store: Store, env_ids: Sequence[str]) -> dict[str, Any] | None:
    """:func:`best_constant` over stored environments when every one of them is cached in the store's data dir
    (reads files; runs nothing), else None. An environment whose files are gone counts as not cached; one without
    medal thresholds is left out (a medal is n/a there, as in the eval's medal rate)."""
    cache = cache_dir(store.data_dir)
    found: dict[str, Results] = {}
    for env_id in env_ids:
        try:
            env = EnvSpec.from_store(store, env_id)
        except SandmleError:
            return None
        if not has_thresholds(env):
            continue
        results = cached_results(env, cache)
        if results is None:
            return None
        found[env_id] = results
    return best_constant(found) if found else None


def run_envs(store: Store, run_id: str) -> list[EnvSpec]:
    """The environments an eval run evaluated on (its config's, else its results'), as stored."""
    run = store.runs.get(run_id)
    if run["kind"] != "eval":
        raise SandmleError(f"run {run['id']} is a {run['kind']} run, not an eval run",
                           hint="`sandmle runs list --kind eval` lists them")
    listed = (run.get("config") or {}).get("envs")
    ids = [str(e) for e in listed] if isinstance(listed, list) else []
    if not ids:
        ids = sorted({str(r["env_id"]) for r in store.runs.eval_results(run["id"])})
    if not ids:
        raise SandmleError(f"eval run {run['id']} names no environment")
    return [EnvSpec.from_store(store, env_id) for env_id in ids]
