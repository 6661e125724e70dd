"""``bench learn``'s claims on the unseen seeds' group: per scaffold the arms' figures, the paired difference with
its verdict from the cluster sign-flip test over every run's pairs, and the two headline flags (``react_met``,
``transfer_met``). The real suite's claims are :mod:`.learn_groups`'."""

from __future__ import annotations

from typing import Any

from store import Store

from ..errors import SandmleError
from ..eval.compare import compare
from ..eval.run import EvalReport
from .learn_groups import LEVEL, Pair, diff_interval

RATE = "any_medal"
#: the scaffold GRPO trains in
TRAINED_IN = "react"


def _fmt(rate: dict[str, float | None]) -> str:
    mean, sem = rate["mean"], rate["sem"]
    return "n/a" if mean is None else f"{mean:.3f} ± {sem or 0.0:.3f}"


def _mean(rep: EvalReport, rate: str) -> float:
    return rep.summary[rate]["mean"] or 0.0


def arm_figures(sft: EvalReport, grpo: EvalReport) -> dict[str, Any]:
    """What one run's two arms did in one scaffold beside the claims: valid rates and the rank on the board."""
    return {"sft_valid": _mean(sft, "valid"), "grpo_valid": _mean(grpo, "valid"), "rank_label": sft.rank_label,
            "sft_rank": _mean(sft, "rank"), "grpo_rank": _mean(grpo, "rank")}


def per_env(store: Store, sft: EvalReport, grpo: EvalReport) -> list[dict[str, Any]]:
    """Per environment the two arms' medal rates and their difference (:func:`engine.eval.compare.compare`'s
    per-environment rows: shown, never used for a claim)."""
    try:
        return [{"env_id": e.env_id, "sft": e.a, "grpo": e.b, "diff": e.diff}
                for e in compare(store, sft.run_id, grpo.run_id, RATE).per_env]
    except SandmleError:  # no episode both arms scored
        return []


def ratio_met(sft: float, grpo: float, target: float) -> bool:
    """SFT+GRPO's medal rate at least ``target`` times SFT's (any gain from 0 counts)."""
    return grpo > 0 if sft == 0 else grpo / sft >= target


def scaffold_claims(row: dict[str, Any], pairs: list[Pair], figures: list[dict[str, Any]], *, target_ratio: float,
                    level: float) -> dict[str, Any]:
    """One scaffold of the unseen seeds (its ``groups`` row, every run's pairs and :func:`arm_figures`): the
    difference with its verdict, and the target — the ratio of medal rates at least ``target_ratio`` and SFT+GRPO
    beating SFT by the cluster sign-flip test at ``level`` (below 95% where several scaffolds share one claim)."""
    if not pairs:
        return {"trained_in": row["trained_in"], "episodes": 0, "verdict": "inconclusive", "note": row.get("note"),
                "target_met": False}
    ci = diff_interval(pairs, level=level)
    a, b = row["sft_medal"], row["grpo_medal"]
    runs = len(figures)
    mean = {k: sum(f[k] for f in figures) / runs for k in ("sft_valid", "grpo_valid", "sft_rank", "grpo_rank")}
    return {"trained_in": row["trained_in"], "episodes": row["episodes"], "runs": row["runs"], "sft_medal": a,
            "grpo_medal": b, "ratio": b / a if a > 0 else None, "diff": row["diff"], "ci95_low": row["ci95_low"],
            "ci95_high": row["ci95_high"], "p_value": row["p_value"], "verdict": row["verdict"], "note": row["note"],
            "target_ratio": target_ratio, "target_level": level, "target_low": ci.low,
            "target_met": bool(ci.above_zero and ratio_met(a, b, target_ratio)),
            **mean, "rank_label": figures[0]["rank_label"], "rank_delta": mean["grpo_rank"] - mean["sft_rank"]}


def learn_claims(groups: dict[str, Any], pairs: dict[tuple[str, str], list[Pair]],
                 figures: dict[str, list[dict[str, Any]]], scaffolds: tuple[str, ...]) -> dict[str, Any]:
    """``summary.scaffolds`` and the two headline flags, on the unseen seeds' group, from the cluster method over
    every run's pairs: ``react_met`` — react's ratio at least 1.2 and SFT+GRPO beating SFT at 95%; ``transfer_met``
    — the same in some scaffold never trained in at ratio 1.1, each of the m such scaffolds tested at 1 − 0.05/m
    (Bonferroni: m chances at a claim must not add up to more than 5%)."""
    unseen = [s for s in scaffolds if s != TRAINED_IN]
    group = "unseen_synthetic"
    out = {s: scaffold_claims(groups[group][s], pairs.get((group, s), []), figures[s],
                              target_ratio=1.2 if s == TRAINED_IN else 1.1,
                              level=LEVEL if s == TRAINED_IN else 1 - (1 - LEVEL) / len(unseen))
           for s in scaffolds}
    return {"scaffolds": out, "react_met": out[TRAINED_IN]["target_met"],
            "transfer_met": any(out[s]["target_met"] for s in unseen)}
