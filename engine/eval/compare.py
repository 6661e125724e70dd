"""``sandmle eval compare RUN_A RUN_B``: the paired difference B − A of one rate, per competition and overall, each
with a bootstrap 95 % interval — "SFT+GRPO vs SFT" is one command.

Episodes pair up by environment and RNG seed (both runs evaluated the same competition with the same seed). Per
environment the difference is the mean over its pairs; overall, the mean over environments. The intervals
resample pairs within an environment and, overall, environments too (two levels, so a small number of
competitions widens the interval as it should). The RNG seed is fixed: the same two runs give the same numbers.

These intervals describe two runs; they are **not a test**, and no claim is computed from them. Environments of
one seed are not independent, and a percentile bootstrap of a few units is too narrow (issue 40: its lower bound
was above 0 in 10% of simulated runs with no difference). ``bench learn``'s flags and verdicts come from the
cluster sign-flip test of :mod:`engine.eval.cluster` over seeds or datasets (:mod:`engine.bench.learn_groups`);
``bench learn`` keeps only this module's per-environment rows, for display.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Sequence

import numpy as np

from store import Store

from ..errors import SandmleError
from .report import RATE, RATE_NAMES, Result, rates_of


@dataclass(frozen=True)
class Interval:
    low: float
    high: float


@dataclass(frozen=True)
class EnvDiff:
    env_id: str
    n_pairs: int
    a: float  #: run A's mean of the rate over the paired episodes
    b: float
    diff: float  #: b − a
    interval: Interval


@dataclass(frozen=True)
class Comparison:
    run_a: str
    run_b: str
    rate: str
    per_env: list[EnvDiff]
    diff: float  #: mean of the per-environment differences
    interval: Interval
    n_pairs: int
    only_a: list[str]  #: environments only run A evaluated (left out)
    only_b: list[str]
    not_applicable: int  #: paired episodes left out because the rate is n/a there (no leaderboard)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _pairs(rows_a: Sequence[Result], rows_b: Sequence[Result], rate: str) -> tuple[dict[str, list[tuple[float, float]]], int]:
    """env id → [(a, b)] over the seeds both runs hold, and how many pairs had the rate n/a."""
    a = {(r["env_id"], r["rng_seed"]): rates_of(r)[rate] for r in rows_a}
    b = {(r["env_id"], r["rng_seed"]): rates_of(r)[rate] for r in rows_b}
    out: dict[str, list[tuple[float, float]]] = {}
    skipped = 0
    for key in sorted(a.keys() & b.keys(), key=str):
        x, y = a[key], b[key]
        if x is None or y is None:
            skipped += 1
            continue
        out.setdefault(key[0], []).append((x, y))
    return out, skipped


def compare_rows(rows_a: Sequence[Result], rows_b: Sequence[Result], rate: str = "any_medal", *, run_a: str = "A",
                 run_b: str = "B", n_boot: int = 2000, seed: int = 0) -> Comparison:
    """The comparison of two runs' ``eval_results`` rows (see the module docstring)."""
    if rate not in RATE:
        raise SandmleError(f"unknown rate {rate!r}", hint=f"choose one of {', '.join(RATE_NAMES)}")
    pairs, skipped = _pairs(rows_a, rows_b, rate)
    if not pairs:
        raise SandmleError(f"eval runs {run_a} and {run_b} share no scored episode (same environment and RNG seed)",
                           hint="compare two evals of the same --envs and --rng-seeds")
    rng = np.random.default_rng(seed)
    envs = sorted(pairs)
    # boot[e, k]: environment e's mean difference in bootstrap resample k (pairs resampled within e)
    boot = np.empty((len(envs), n_boot))
    per_env = []
    for e, env_id in enumerate(envs):
        d = np.array([b - a for a, b in pairs[env_id]])
        boot[e] = d[rng.integers(0, len(d), size=(n_boot, len(d)))].mean(axis=1)
        low, high = np.percentile(boot[e], [2.5, 97.5])
        per_env.append(EnvDiff(env_id=env_id, n_pairs=len(d), a=float(np.mean([p[0] for p in pairs[env_id]])),
                               b=float(np.mean([p[1] for p in pairs[env_id]])), diff=float(d.mean()),
                               interval=Interval(float(low), float(high))))
    picks = rng.integers(0, len(envs), size=(n_boot, len(envs)))
    overall = boot[picks, np.arange(n_boot)[:, None]].mean(axis=1)
    low, high = np.percentile(overall, [2.5, 97.5])
    keys_a, keys_b = {r["env_id"] for r in rows_a}, {r["env_id"] for r in rows_b}
    return Comparison(run_a=run_a, run_b=run_b, rate=rate, per_env=per_env,
                      diff=float(np.mean([e.diff for e in per_env])), interval=Interval(float(low), float(high)),
                      n_pairs=sum(e.n_pairs for e in per_env), only_a=sorted(keys_a - keys_b),
                      only_b=sorted(keys_b - keys_a), not_applicable=skipped)


def compare(store: Store, run_a: str, run_b: str, rate: str = "any_medal", *, n_boot: int = 2000,
            seed: int = 0) -> Comparison:
    """Compare two eval runs of the store (B − A)."""
    for run_id in (run_a, run_b):
        run = store.runs.get(run_id)
        if run["kind"] != "eval":
            raise SandmleError(f"run {run_id} is a {run['kind']} run, not an eval run")
    return compare_rows(store.runs.eval_results(run_a), store.runs.eval_results(run_b), rate, run_a=run_a,
                        run_b=run_b, n_boot=n_boot, seed=seed)
