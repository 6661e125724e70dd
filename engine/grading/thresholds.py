"""Medal thresholds (MLE-bench's Kaggle rule by board size) and the rank on a board (MLE-Dojo's HumanRank formula).

A board is one of :data:`BOARDS`: a real competition's leaderboard of people (``human``: the rank there is
HumanRank), a population of independent reference solutions run in the sandbox (``population``: every synthetic
environment's, and any environment that brings no board of its own), the paper's thresholds with our population
for the rank (``paper``), or the 9-entry board of the verifier's own three scripts that environments stored before
the population had (``ladder``: ``sandmle envs reboard`` rebuilds it). The rank is named for what it is
(:func:`rank_name`): HumanRank only against people.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Sequence

import numpy as np

#: board kind → what its entries are (in words)
BOARDS: dict[str, str] = {
    "human": "a real competition's leaderboard (people's submissions)",
    "population": "a population of independent reference solutions run in the sandbox",
    "paper": "the paper's own medal thresholds (the rank is among our population of reference solutions)",
    "ladder": "the verifier's own three reference scripts and blends of them (before population boards; reboard it)",
}


@dataclass(frozen=True)
class Thresholds:
    gold: float
    silver: float
    bronze: float
    median: float
    lower_is_better: bool
    board: str | None = None  #: the kind of board they come from (:data:`BOARDS`); None: unknown (stored before)
    entries: int | None = None  #: how many entries that board has

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, t: dict[str, Any], lower_is_better: bool) -> "Thresholds":
        return cls(gold=float(t["gold"]), silver=float(t["silver"]), bronze=float(t["bronze"]),
                   median=float(t["median"]), lower_is_better=lower_is_better, board=t.get("board"),
                   entries=int(t["entries"]) if t.get("entries") is not None else None)

    def medal(self, score: float) -> str | None:
        """'gold' / 'silver' / 'bronze' / None — exclusive, using ≥ (≤ when lower is better)."""
        better_eq = (lambda a, b: a <= b) if self.lower_is_better else (lambda a, b: a >= b)
        for name in ("gold", "silver", "bronze"):
            if better_eq(score, getattr(self, name)):
                return name
        return None

    def above_median(self, score: float) -> bool:
        return score < self.median if self.lower_is_better else score > self.median

    def distinct(self) -> bool:
        """Gold, silver and bronze are three different scores (every reward tier can be reached)."""
        return len({self.gold, self.silver, self.bronze}) == 3


def medal_ranks(n: int) -> tuple[int, int, int]:
    """(gold, silver, bronze) ranks: the k-th best score on a board of n entries."""
    if n < 1:
        raise ValueError("a leaderboard needs at least one entry")
    if n < 100:
        return max(1, int(0.1 * n)), max(1, int(0.2 * n)), max(1, int(0.4 * n))
    if n < 250:
        return 10, max(1, int(0.2 * n)), max(1, int(0.4 * n))
    if n < 1000:
        return 10 + int(0.002 * n), 50, 100
    return 10 + int(0.002 * n), int(0.05 * n), int(0.1 * n)


def thresholds(scores: Sequence[float], lower_is_better: bool, board: str | None = None) -> Thresholds:
    """Thresholds of a leaderboard: the board sorted best first, rank k = the k-th best score."""
    ordered = sorted((float(s) for s in scores), reverse=not lower_is_better)
    g, s, b = medal_ranks(len(ordered))
    return Thresholds(
        gold=ordered[g - 1], silver=ordered[s - 1], bronze=ordered[b - 1],
        median=float(np.median(ordered)), lower_is_better=lower_is_better, board=board, entries=len(ordered),
    )


def board_rank(score: float, scores: Sequence[float], lower_is_better: bool) -> float:
    """1 − (position − 1)/N with position = 1 + the number of entries strictly better (MLE-Dojo's formula)."""
    n = len(scores)
    if n == 0:
        raise ValueError("a rank needs a non-empty leaderboard")
    better = sum(1 for s in scores if (s < score if lower_is_better else s > score))
    return 1.0 - better / n


def rank_name(board: str | None, entries: int | None = None) -> str:
    """What the rank is, in words: HumanRank against people, else the rank among what the board holds."""
    if board == "human":
        return "HumanRank"
    n = f"{entries} " if entries else ""
    if board in ("population", "paper"):
        return f"rank among {n}reference solutions"
    if board == "ladder":
        return f"rank among {n}ladder entries (old board)"
    return "rank on the board"


def ranks_name(boards: Sequence[tuple[str | None, int | None]]) -> str:
    """The rank's name over several environments' boards: one kind → its name (the entry count when all agree)."""
    kinds = {b for b, _ in boards}
    if not kinds:
        return "rank"
    if len(kinds) > 1:
        return "rank (HumanRank on real leaderboards)" if "human" in kinds else "rank on the board"
    sizes = {n for _, n in boards}
    return rank_name(next(iter(kinds)), next(iter(sizes)) if len(sizes) == 1 else None)
