"""Rewards: plain functions ``fn(report, turns) -> float`` composed with weights into named schemes.

A scheme is a list of ``(name, weight, fn)`` terms plus an optional cap. ``compute_reward`` returns the total and
a breakdown (each term's raw value and weighted contribution), which is stored with the trajectory.

- ``milestone`` (default): +0.2 valid submission, +0.7 gold / 0.6 silver / 0.5 bronze / 0.1 above median
  (the best one reached), +0.1 × share of well-formed assistant turns, capped at 1.0.
- ``sparse``: 0.1 × format + 0.9 × gold.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from store.common import JSON
from store.trajectories import Turn

from ..errors import SandmleError
from .grade import GradeReport

RewardFn = Callable[[GradeReport, Sequence[Turn]], float]



# ------------------------------------------------------------------ the plain reward functions
def valid_submission(report: GradeReport, turns: Sequence[Turn]) -> float:
    """1 when the final submission could be scored."""
    return 1.0 if report.valid_submission else 0.0


def medal_tier(report: GradeReport, turns: Sequence[Turn]) -> float:
    """0.7 gold / 0.6 silver / 0.5 bronze / 0.1 above median / 0 — the best one reached."""
    if report.gold_medal:
        return 0.7
    if report.silver_medal:
        return 0.6
    if report.bronze_medal:
        return 0.5
    if report.above_median:
        return 0.1
    return 0.0


def gold(report: GradeReport, turns: Sequence[Turn]) -> float:
    return 1.0 if report.gold_medal else 0.0


def any_medal(report: GradeReport, turns: Sequence[Turn]) -> float:
    return 1.0 if report.any_medal else 0.0


def well_formed_share(report: GradeReport, turns: Sequence[Turn]) -> float:
    """Share of the assistant turns that followed the scaffold's format (0 with no assistant turn)."""
    marks = [t.well_formed for t in turns if t.role == "assistant"]
    if not marks:
        return 0.0
    return sum(1 for m in marks if m) / len(marks)


def board_rank(report: GradeReport, turns: Sequence[Turn]) -> float:
    """The rank on the environment's board (HumanRank on a real leaderboard), 0 for an invalid submission."""
    return float(report.rank or 0.0) if report.valid_submission else 0.0


@dataclass(frozen=True)
class Term:
    name: str
    weight: float
    fn: RewardFn


@dataclass(frozen=True)
class Scheme:
    name: str
    terms: tuple[Term, ...]
    cap: float | None = None
    description: str = ""


SCHEMES: dict[str, Scheme] = {
    "milestone": Scheme(
        "milestone",
        (Term("valid", 0.2, valid_submission), Term("medal", 1.0, medal_tier), Term("format", 0.1, well_formed_share)),
        cap=1.0, description="+0.2 valid, +0.7/0.6/0.5 gold/silver/bronze or +0.1 above median, +0.1×format; ≤1",
    ),
    "sparse": Scheme(
        "sparse", (Term("format", 0.1, well_formed_share), Term("gold", 0.9, gold)),
        description="0.1×format + 0.9×gold",
    ),
    "humanrank": Scheme(
        "humanrank", (Term("valid", 0.2, valid_submission), Term("rank", 0.7, board_rank),
                      Term("format", 0.1, well_formed_share)),
        cap=1.0, description="+0.2 valid, +0.7×rank on the board (HumanRank on a real leaderboard), +0.1×format",
    ),
}


def get_scheme(scheme: str | Scheme) -> Scheme:
    if isinstance(scheme, Scheme):
        return scheme
    try:
        return SCHEMES[scheme]
    except KeyError:
        raise SandmleError(f"unknown reward scheme {scheme!r}; known: {', '.join(sorted(SCHEMES))}") from None


def compute_reward(report: GradeReport, turns: Sequence[Turn],
                   scheme: str | Scheme = "milestone") -> tuple[float, dict[str, JSON]]:
    """The reward of one trajectory and its breakdown ``{scheme, terms: {name: {value, weight, reward}}, total}``."""
    sch = get_scheme(scheme)
    terms: dict[str, JSON] = {}
    total = 0.0
    for term in sch.terms:
        value = float(term.fn(report, turns))
        terms[term.name] = {"value": value, "weight": term.weight, "reward": term.weight * value}
        total += term.weight * value
    total = raw = round(total, 12)  # 0.2 + 0.7 + 0.1 is 1.0, not 0.9999999999999999
    if sch.cap is not None:
        total = min(total, sch.cap)
    return total, {"scheme": sch.name, "terms": terms, "uncapped": raw, "total": total}
