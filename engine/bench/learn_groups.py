"""``bench learn``'s evaluation groups and the constant strategies beside them.

Two groups of held-out tasks (:data:`GROUPS`): ``unseen_synthetic`` (environments of seeds never trained on; a
cluster is a seed) and ``real`` (the real held-out suite, :mod:`engine.eval.realsuite`; a cluster is a dataset).
Per group and scaffold: SFT's and SFT+GRPO's medal rates, the paired difference with the **cluster bootstrap**
(:mod:`engine.eval.cluster`: seeds or datasets resampled, not environments), and beside them

- the **best constant strategy** and the **per-task oracle** of :mod:`engine.eval.constants` over the group's
  tasks (every option a policy can pick run as a constant policy; cached in the data dir of the store that holds
  the tasks).

A constant does not depend on the scaffold (it is the submission), so one figure serves every scaffold.
"""

from __future__ import annotations

from typing import Any, Sequence

from store import Store

from ..eval.cluster import cluster_bootstrap
from ..eval.constants import best_constant
from ..eval.report import rates_of

GROUPS = ("unseen_synthetic", "real")
#: what a cluster is in each group
CLUSTER_OF = {"unseen_synthetic": "seed", "real": "dataset"}
RATE = "any_medal"


def _episodes(store: Store, run_id: str) -> dict[tuple[str, int], float]:
    """(env id, RNG seed) → the episode's medal (0/1) of an eval run; infrastructure errors left out."""
    out = {}
    for row in store.runs.eval_results(run_id):
        value = rates_of(row)[RATE]
        if value is not None and not row.get("error"):
            out[(str(row["env_id"]), int(row["rng_seed"] or 0))] = float(value)
    return out


def group_result(store: Store, group: str, sft_run: str, grpo_run: str, clusters: dict[str, str],
                 best: dict[str, Any], *, trained_in: bool, n_boot: int) -> dict[str, Any]:
    """One group and scaffold: both arms' medal rates, the cluster-bootstrap interval of SFT+GRPO − SFT (pairs of
    the same task and RNG seed), and of SFT+GRPO − the best constant on the same tasks."""
    a, b = _episodes(store, sft_run), _episodes(store, grpo_run)
    pairs = sorted(a.keys() & b.keys())
    diff = cluster_bootstrap([b[k] - a[k] for k in pairs], [clusters[k[0]] for k in pairs], n_boot=n_boot)
    const = best["best_constant_per_task"]
    vs = cluster_bootstrap([b[k] - float(const[k[0]]) for k in pairs], [clusters[k[0]] for k in pairs],
                           n_boot=n_boot)
    return {"sft_medal": sum(a[k] for k in pairs) / len(pairs), "grpo_medal": sum(b[k] for k in pairs) / len(pairs),
            "best_constant_medal": best["best_constant_medal"], "best_constant_strategy": best["best_constant_strategy"],
            "oracle_medal": best["oracle_medal"], "diff": diff.mean, "ci95_low": diff.low, "ci95_high": diff.high,
            "interval": diff.method, "vs_best_constant": vs.mean, "vs_best_constant_ci95_low": vs.low,
            "vs_best_constant_ci95_high": vs.high, "episodes": len(pairs), "tasks": len({k[0] for k in pairs}),
            "clusters": diff.clusters, "trained_in": trained_in,
            "target_met": bool(diff.low > 0 and b and sum(b[k] for k in pairs) / len(pairs)
                               >= best["best_constant_medal"])}


def groups_summary(store: Store, runs: dict[tuple[str, str, str], str], clusters: dict[str, dict[str, str]],
                   constants: dict[str, dict[str, dict[str, dict[str, Any]]]], scaffolds: Sequence[str],
                   trained_in: str, n_boot: int) -> dict[str, Any]:
    """``summary.groups``: per group its bootstrap kind, cluster kind, constants and per scaffold
    :func:`group_result`. ``runs[(group, arm, scaffold)]`` is an eval run id; ``clusters[group][env id]`` the
    environment's cluster; ``constants[group]`` :func:`constants_of` of its environments."""
    out: dict[str, Any] = {}
    for group in GROUPS:
        if group not in clusters:
            continue
        best = best_constant(constants[group])
        entry: dict[str, Any] = {"bootstrap": "cluster", "cluster": CLUSTER_OF[group],
                                 "tasks": len(clusters[group]), "clusters": len(set(clusters[group].values())),
                                 "best_constant_strategy": best["best_constant_strategy"],
                                 "best_constant_medal": best["best_constant_medal"],
                                 "oracle_medal": best["oracle_medal"], "top_constants": best["constant_medals"],
                                 "oracle_strategies": best["oracle_strategies"]}
        for s in scaffolds:
            entry[s] = group_result(store, group, runs[(group, "SFT", s)], runs[(group, "SFT+GRPO", s)],
                                    clusters[group], best, trained_in=s == trained_in, n_boot=n_boot)
        out[group] = entry
    return out
