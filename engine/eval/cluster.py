"""The cluster bootstrap of a paired difference: resample what is independent, not environments.

Twelve environments of three seeds are not twelve independent draws: environments of one seed share its data
generator, and one seed's effect moves all of them. So an interval on "B − A" resamples *clusters* (the seeds, or
the real datasets) with replacement and pools every paired difference of the clusters drawn; its spread is the
spread between clusters. With few clusters the bootstrap distribution is computed exactly (every multiset of
clusters with its multinomial probability, :func:`exact_distribution`), otherwise by ``n_boot`` draws; the
interval is the percentile interval of that distribution.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import asdict, dataclass
from itertools import combinations_with_replacement
from typing import Any, Hashable, Sequence

import numpy as np

#: compute the distribution exactly when there are at most this many multisets of clusters
EXACT_LIMIT = 20_000


@dataclass(frozen=True)
class ClusterInterval:
    """The mean paired difference, its percentile interval and what was resampled."""

    mean: float
    low: float
    high: float
    clusters: int
    units: int
    method: str  #: exact | sampled
    level: float = 0.95
    bootstrap: str = "cluster"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def above_zero(self) -> bool:
        return self.low > 0


def _groups(diffs: Sequence[float], clusters: Sequence[Hashable]) -> list[tuple[float, int]]:
    """(sum of the differences, count) per cluster, in first-seen order."""
    if len(diffs) != len(clusters):
        raise ValueError(f"{len(diffs)} differences but {len(clusters)} cluster labels")
    if not diffs:
        raise ValueError("no paired differences to resample")
    sums: dict[Hashable, list[float]] = {}
    for d, c in zip(diffs, clusters):
        if not math.isfinite(float(d)):
            raise ValueError(f"a paired difference is not a finite number: {d!r}")
        sums.setdefault(c, []).append(float(d))
    return [(sum(v), len(v)) for v in sums.values()]


def exact_distribution(diffs: Sequence[float], clusters: Sequence[Hashable]) -> list[tuple[float, float]]:
    """Every value the pooled mean takes over resamples of k clusters from k (with replacement), with its
    probability: each multiset of clusters has probability k! / (∏ mᵢ! · kᵏ). Sorted by value, ties merged."""
    groups = _groups(diffs, clusters)
    k = len(groups)
    out: dict[float, float] = {}
    for draw in combinations_with_replacement(range(k), k):
        counts = Counter(draw)
        p = math.factorial(k) / (math.prod(math.factorial(m) for m in counts.values()) * k ** k)
        total = sum(groups[i][0] * m for i, m in counts.items())
        units = sum(groups[i][1] * m for i, m in counts.items())
        value = round(total / units, 12)
        out[value] = out.get(value, 0.0) + p
    return sorted(out.items())


def _quantiles(dist: list[tuple[float, float]], level: float) -> tuple[float, float]:
    """The percentile interval of a discrete distribution: the smallest values whose CDF exceeds (1 − level)/2 and
    reaches (1 + level)/2."""
    lo_q, hi_q = (1 - level) / 2, (1 + level) / 2
    cdf, low, high = 0.0, None, None
    for value, p in dist:
        cdf += p
        if low is None and cdf > lo_q + 1e-12:
            low = value
        if high is None and cdf >= hi_q - 1e-12:
            high = value
    return float(low if low is not None else dist[-1][0]), float(high if high is not None else dist[-1][0])


def n_multisets(k: int) -> int:
    """How many multisets of k clusters drawn from k there are: C(2k − 1, k)."""
    return math.comb(2 * k - 1, k)


def cluster_bootstrap(diffs: Sequence[float], clusters: Sequence[Hashable], *, n_boot: int = 2000, seed: int = 0,
                      level: float = 0.95, exact: bool | None = None) -> ClusterInterval:
    """The mean of ``diffs`` (paired differences, one per unit) with the percentile interval of the cluster
    bootstrap: ``clusters[i]`` is the cluster of unit i (its seed, its dataset). ``exact``: None chooses exact
    enumeration when there are at most :data:`EXACT_LIMIT` multisets."""
    groups = _groups(diffs, clusters)
    k = len(groups)
    units = sum(n for _, n in groups)
    mean = sum(s for s, _ in groups) / units
    use_exact = n_multisets(k) <= EXACT_LIMIT if exact is None else exact
    if use_exact:
        low, high = _quantiles(exact_distribution(diffs, clusters), level)
        return ClusterInterval(mean, low, high, k, units, "exact", level)
    sums = np.array([s for s, _ in groups])
    counts = np.array([n for _, n in groups], dtype=float)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, k, size=(n_boot, k))
    stats = sums[draws].sum(axis=1) / counts[draws].sum(axis=1)
    low, high = np.quantile(stats, [(1 - level) / 2, (1 + level) / 2])
    return ClusterInterval(mean, float(low), float(high), k, units, "sampled", level)
