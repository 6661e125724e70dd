"""Medal thresholds (MLE-bench's Kaggle rule by board size) and HumanRank (MLE-Dojo)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Sequence

import numpy as np


@dataclass(frozen=True)
class Thresholds:
    gold: float
    silver: float
    bronze: float
    median: float
    lower_is_better: bool

    def to_dict(self) -> dict:
        return asdict(self)

    def medal(self, score: float) -> str | None:
        """'gold' / 'silver' / 'bronze' / None — exclusive, using ≥ (≤ when lower is better)."""
        better_eq = (lambda a, b: a <= b) if self.lower_is_better else (lambda a, b: a >= b)
        for name in ("gold", "silver", "bronze"):
            if better_eq(score, getattr(self, name)):
                return name
        return None

    def above_median(self, score: float) -> bool:
        return score < self.median if self.lower_is_better else score > self.median


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


def thresholds(scores: Sequence[float], lower_is_better: bool) -> Thresholds:
    """Thresholds of a leaderboard: the board sorted best first, rank k = the k-th best score."""
    board = sorted((float(s) for s in scores), reverse=not lower_is_better)
    g, s, b = medal_ranks(len(board))
    return Thresholds(
        gold=board[g - 1], silver=board[s - 1], bronze=board[b - 1],
        median=float(np.median(board)), lower_is_better=lower_is_better,
    )


def human_rank(score: float, scores: Sequence[float], lower_is_better: bool) -> float:
    """1 − (position − 1)/N with position = 1 + the number of entries strictly better (MLE-Dojo)."""
    n = len(scores)
    if n == 0:
        raise ValueError("HumanRank needs a non-empty leaderboard")
    better = sum(1 for s in scores if (s < score if lower_is_better else s > score))
    return 1.0 - better / n
