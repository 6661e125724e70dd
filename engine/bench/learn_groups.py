"""``bench learn``'s evaluation groups, the constant strategies beside them, and the claims over one or more runs.

Two groups of held-out tasks (:data:`GROUPS`): ``unseen_synthetic`` (environments of seeds never trained on; a
cluster is a seed) and ``real`` (the real held-out suite, :mod:`engine.eval.realsuite`; a cluster is a dataset).
Per group and scaffold, over exactly the (task, RNG seed) pairs both arms scored (:func:`paired_episodes`;
episodes that could not run left out of both):

- SFT's and SFT+GRPO's medal rates and the paired difference SFT+GRPO − SFT, with the **cluster sign-flip test**
  and its interval (:mod:`engine.eval.cluster`: seeds or datasets are the independent units, not environments);
- the **best constant strategy** and the **per-task oracle** of :mod:`engine.eval.constants` over the same pairs
  (every option a policy can pick run as a constant policy; one per task, whatever the scaffold), and SFT+GRPO −
  the best constant with the same test;
- a **verdict** for each difference: ``beats`` (the lower bound of the 95% interval is above 0), ``worse``,
  ``tie`` (equal rates on these pairs) or ``inconclusive`` — with a note where the number of clusters cannot show
  anything at 95% (fewer than 6). ``target_met``: SFT+GRPO beats SFT *and* beats the best constant; a tie with the
  constant is reported as a tie, never as the target.

**Several runs** (``bench learn --runs N``) pool their pairs per cluster: a seed's (or a dataset's) episodes of
every run are one cluster, because they share that seed or dataset; each run weighs the same (a pair of run r weighs
1/(pairs of run r)), so every figure is the mean over runs of that run's figure, and the test is over clusters as
before. The runs' trained policies are held fixed: the claim is about these N trained policies, on average, on new
tasks — N = 3 runs are too few to resample training itself (a sign-flip test of 3 can show nothing). Every run's
own figures and verdicts stand beside the pooled ones (``per_run``), never the best of them alone.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Sequence

from store import Store

from ..eval.cluster import ClusterInterval, cluster_interval
from ..eval.constants import best_constant
from ..eval.report import rates_of

GROUPS = ("unseen_synthetic", "real")
#: what a cluster is in each group
CLUSTER_OF = {"unseen_synthetic": "seed", "real": "dataset"}
RATE = "any_medal"
#: the method every claim of ``bench learn`` uses, and its level
METHOD = "cluster sign-flip"
LEVEL = 0.95

#: one paired episode: {"run", "task", "seed", "cluster", "sft", "grpo"} (medals 0/1)
Pair = dict[str, Any]
#: constant strategies: task → option → {score, valid, medal}
Constants = dict[str, dict[str, dict[str, Any]]]


def _episodes(store: Store, run_id: str) -> dict[tuple[str, int], float]:
    """(env id, RNG seed) → the episode's medal (0/1) of an eval run; infrastructure errors and n/a medals (no
    leaderboard) left out."""
    out = {}
    for row in store.runs.eval_results(run_id):
        value = rates_of(row)[RATE]
        if value is not None and not row.get("error"):
            out[(str(row["env_id"]), int(row["rng_seed"] or 0))] = float(value)
    return out


def paired_episodes(store: Store, sft_run: str, grpo_run: str, clusters: dict[str, str], *, run: int = 1
                    ) -> list[Pair]:
    """The (task, RNG seed) pairs both eval runs scored, each with its cluster (``clusters``: env id → cluster)
    and the number of the bench run it belongs to."""
    a, b = _episodes(store, sft_run), _episodes(store, grpo_run)
    return [{"run": run, "task": t, "seed": s, "cluster": clusters[t], "sft": a[(t, s)], "grpo": b[(t, s)]}
            for t, s in sorted(a.keys() & b.keys())]


def run_weights(pairs: Sequence[Pair]) -> list[float]:
    """Each pair's weight when runs weigh the same: 1/(pairs of its run)."""
    per_run = Counter(p["run"] for p in pairs)
    return [1.0 / per_run[p["run"]] for p in pairs]


def _mean(values: Sequence[float], weights: Sequence[float]) -> float:
    return sum(v * w for v, w in zip(values, weights)) / sum(weights)


def diff_interval(pairs: Sequence[Pair], *, level: float = LEVEL) -> ClusterInterval:
    """SFT+GRPO − SFT over ``pairs`` (runs weighing the same) with the cluster sign-flip interval at ``level``."""
    return cluster_interval([p["grpo"] - p["sft"] for p in pairs], [p["cluster"] for p in pairs],
                            weights=run_weights(pairs), level=level)


def _claim(ci: ClusterInterval, key: str = "diff", prefix: str = "") -> dict[str, Any]:
    """The record of one difference: its mean under ``key``, then (each key after ``prefix``) the interval (None
    where it cannot be bounded), p, verdict and note."""
    return {key: ci.mean, f"{prefix}ci95_low": ci.low, f"{prefix}ci95_high": ci.high, f"{prefix}p_value": ci.p_value,
            f"{prefix}verdict": ci.verdict, f"{prefix}note": ci.note}


def compare_pairs(pairs: Sequence[Pair], constants: Constants) -> dict[str, Any]:
    """One group and scaffold over ``pairs`` (one run's, or every run's pooled): both arms' medal rates, SFT+GRPO −
    SFT and SFT+GRPO − the best constant (chosen and rated on exactly these pairs) with their cluster sign-flip
    intervals, p-values and verdicts, and whether the target is met (both verdicts ``beats``)."""
    if not pairs:
        return {"episodes": 0, "tasks": 0, "clusters": 0, "runs": 0, "verdict": "inconclusive",
                "vs_best_constant_verdict": "inconclusive", "note": "no episode both arms scored",
                "target_met": False}
    weights = run_weights(pairs)
    task_weight: dict[str, float] = {}
    for p, w in zip(pairs, weights):
        task_weight[p["task"]] = task_weight.get(p["task"], 0.0) + w
    best = best_constant(constants, task_weight)
    const = best["best_constant_per_task"]
    labels = [p["cluster"] for p in pairs]
    diff = diff_interval(pairs)
    vs = cluster_interval([p["grpo"] - float(const[p["task"]]) for p in pairs], labels, weights=weights,
                          level=LEVEL)
    return {"sft_medal": _mean([p["sft"] for p in pairs], weights),
            "grpo_medal": _mean([p["grpo"] for p in pairs], weights),
            **_claim(diff), "method": METHOD, "level": LEVEL,
            "best_constant_strategy": best["best_constant_strategy"],
            "best_constant_medal": best["best_constant_medal"], "oracle_medal": best["oracle_medal"],
            **_claim(vs, "vs_best_constant", "vs_best_constant_"),
            "episodes": len(pairs), "tasks": len(task_weight), "clusters": diff.clusters,
            "runs": len(set(p["run"] for p in pairs)),
            "target_met": diff.verdict == "beats" and vs.verdict == "beats"}


def group_row(pairs: Sequence[Pair], constants: Constants, runs: Sequence[int], *, trained_in: bool
              ) -> dict[str, Any]:
    """:func:`compare_pairs` over every run's pairs, and beside it each run's own (``per_run``)."""
    return {**compare_pairs(pairs, constants), "trained_in": trained_in,
            "per_run": [{"run": r, **compare_pairs([p for p in pairs if p["run"] == r], constants)} for r in runs]}


def groups_summary(pairs: dict[tuple[str, str], list[Pair]], clusters: dict[str, dict[str, str]],
                   constants: dict[str, Constants], scaffolds: Sequence[str], trained_in: str,
                   runs: Sequence[int] = (1,)) -> dict[str, Any]:
    """``summary.groups``: per group the method, what a cluster is, the constants over all its tasks, and per
    scaffold :func:`group_row`. ``pairs[(group, scaffold)]``: every run's :func:`paired_episodes`;
    ``clusters[group][env id]``: the environment's cluster (every run's environments); ``constants[group]``:
    :func:`engine.eval.constants.constants_of` of those environments; ``runs``: the runs' numbers."""
    out: dict[str, Any] = {}
    for group in GROUPS:
        if group not in clusters:
            continue
        every = best_constant(constants[group])  # every task once: what the tasks offer, beside the rows
        entry: dict[str, Any] = {"method": METHOD, "level": LEVEL, "cluster": CLUSTER_OF[group], "runs": len(runs),
                                 "tasks": len(clusters[group]), "clusters": len(set(clusters[group].values())),
                                 "all_tasks": {k: every[k] for k in ("best_constant_strategy", "best_constant_medal",
                                                                     "oracle_medal", "constant_medals",
                                                                     "oracle_strategies")}}
        for s in scaffolds:
            entry[s] = group_row(pairs.get((group, s), []), constants[group], runs, trained_in=s == trained_in)
        out[group] = entry
    return out


def fmt_claim(row: dict[str, Any], key: str = "diff", prefix: str = "") -> str:
    """"+0.633 [+0.466, +0.800] beats" — or "+0.833 (cannot be shown with 3 clusters) inconclusive"."""
    if not row.get("episodes"):
        return "no episodes"
    mean = row[key]
    low, high = row[f"{prefix}ci95_low"], row[f"{prefix}ci95_high"]
    bounds = f"[{low:+.3f}, {high:+.3f}]" if low is not None and high is not None else \
        f"({row[f'{prefix}note'].split(':')[0]})"
    return f"{mean:+.3f} {bounds} {row[f'{prefix}verdict']}"


def claim_rows(groups: dict[str, Any], scaffolds: Sequence[str], runs: Sequence[int]) -> list[dict[str, Any]]:
    """The table of ``bench learn``: per group and scaffold one row per run and one for all runs (their mean),
    each difference with its interval and verdict."""
    rows = []
    for group, g in groups.items():
        for s in scaffolds:
            row = g[s]
            label = s + ("" if row["trained_in"] else " (unseen)")
            for r, one in [(str(x["run"]), x) for x in row["per_run"]] + [(f"mean of {len(runs)}", row)]:
                if len(runs) == 1 and r != "1":
                    continue  # one run: its row is the mean
                rows.append({"group": group, "scaffold": label, "run": r, "episodes": one.get("episodes", 0),
                             "sft_medal": _num(one.get("sft_medal")), "grpo_medal": _num(one.get("grpo_medal")),
                             "grpo_minus_sft": fmt_claim(one),
                             "best_constant": (f"{one['best_constant_medal']:.3f} ({one['best_constant_strategy']})"
                                               if one.get("episodes") else ""),
                             "grpo_minus_best_constant": fmt_claim(one, "vs_best_constant", "vs_best_constant_"),
                             "target_met": one["target_met"]})
    return rows


def _num(value: float | None) -> str:
    return "" if value is None else f"{value:.3f}"
