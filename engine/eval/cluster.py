"""Intervals and claims on a paired difference whose units come in clusters: resample what is independent.

Twelve environments of three seeds are not twelve independent draws: environments of one seed share its data
generator, and one seed's effect moves all of them. So a claim on "B − A" treats *clusters* (the seeds, or the real
datasets) as the independent units, and the paired differences of a cluster as one block.

**The method: a cluster sign-flip test and the interval that inverts it** (:func:`cluster_interval`). Under "no
difference" the two arms of a pair are exchangeable, so each unit's difference is as likely to be d as −d, each
cluster's sum of differences is symmetric about 0, and the clusters are independent: flipping the signs of whole
clusters gives 2ᵏ equally likely versions of the data. The statistic is the pooled mean over units (what the rates
beside it are: a cluster weighs by its units); the p-value is the share of the 2ᵏ versions whose pooled mean is at
least as far from 0 as the one observed (ties count against the claim). This is exact at every k, whatever the
distribution of the differences — 0/1 medal differences, ties, clusters of unequal size — because it assumes only
the symmetry that "no difference" means. The interval is every shift δ the same test does not reject when each
difference is taken minus δ. Flipping a set F of clusters puts the statistic at or past the observed one exactly
when δ reaches the pooled mean of F's units (Hartigan 1969, "typical values"), so the bounds are order statistics
of the 2ᵏ − 1 subset means: at level 1 − α the lower bound is the ⌊α·2ᵏ⁻¹⌋-th smallest and the upper bound the
⌊α·2ᵏ⁻¹⌋-th largest, and "the lower bound is above 0" is "the test rejects at α in favour of B". Beyond
:data:`EXACT_K` clusters, ``n_flips`` random sign patterns replace the enumeration (p = (1 + count)/(n + 1): still
an exact test).

**What it cannot do, it says.** The smallest two-sided p a sign-flip test of k clusters reaches is 2/2ᵏ: 0.25 with
3 clusters, 0.0625 with 5, 0.031 with 6. Below 6 clusters no 95% claim can be made at all, whatever the data, and the
record says so (``low``/``high`` None, :attr:`ClusterInterval.note` "cannot be shown with k clusters") instead of
printing an interval that looks like one.

**Why not the alternatives** (measured by ``tests/test_cluster_coverage.py`` under no true difference, one-sided
nominal 2.5%): the percentile bootstrap of clusters (:func:`cluster_bootstrap`, the method before issue 40) puts its
lower bound at the smallest cluster mean with 3 clusters, so it claims on every dataset whose 3 cluster means are
all above 0 — about 1 in 8 of them — and with 10 clusters it still claims 5.5% of the time, which is why the
sign-flip test is used at every k, not only below 10; a t interval with k − 1 degrees of freedom assumes normal cluster means and,
on 0/1 differences, gives a zero-width interval when the cluster means are equal (3 one-unit clusters of +1: one
null dataset in 8 again). The sign-flip test holds at every k with no such assumption; its price is power at small k,
which is the honest price.

:class:`ClusterInterval` carries the mean, the interval, the p-value, what the method can reach with k clusters and
the verdict: ``beats`` (lower bound above 0), ``worse`` (upper bound below 0), ``tie`` (the mean difference is
exactly 0: equal rates on these pairs) or ``inconclusive``.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import asdict, dataclass
from itertools import combinations_with_replacement
from typing import Any, Hashable, Sequence

import numpy as np

#: enumerate every sign pattern up to this many clusters (2^16 − 1 subsets), else draw ``n_flips`` of them
EXACT_K = 16
#: compute the old bootstrap's distribution exactly when there are at most this many multisets of clusters
EXACT_LIMIT = 20_000
#: the verdicts a comparison can get
VERDICTS = ("beats", "tie", "worse", "inconclusive")


@dataclass(frozen=True)
class ClusterInterval:
    """The mean paired difference (pooled over units), its interval at ``level``, the method and its p-value.

    ``low``/``high`` are None where the method cannot bound the difference at this level with this many clusters
    (a sign-flip test of fewer than 6 clusters at 95%): nothing can be shown then, and :attr:`note` says so."""

    mean: float
    low: float | None
    high: float | None
    clusters: int
    units: int
    method: str  #: sign-flip (every pattern) | sign-flip sampled | bootstrap exact | bootstrap sampled
    level: float = 0.95
    #: what was resampled or flipped: whole clusters
    bootstrap: str = "cluster"
    #: two-sided p of "no difference" (sign-flip); None for the bootstrap, which has none
    p_value: float | None = None
    #: the smallest two-sided p the method can reach with these clusters (2/2^k for the sign-flip test)
    min_p: float | None = None

    @property
    def above_zero(self) -> bool:
        """B beats A: the lower bound is above 0 (for the sign-flip test: it rejects "no difference" at level)."""
        return self.low is not None and self.low > 0

    @property
    def below_zero(self) -> bool:
        return self.high is not None and self.high < 0

    @property
    def can_show(self) -> bool:
        """Whether any data of this many clusters could give a claim at this level."""
        return self.min_p is None or self.min_p <= 1 - self.level + 1e-12

    @property
    def verdict(self) -> str:
        """beats | worse | tie | inconclusive (:data:`VERDICTS`)."""
        if self.above_zero:
            return "beats"
        if self.below_zero:
            return "worse"
        return "tie" if self.mean == 0 else "inconclusive"

    @property
    def note(self) -> str:
        """Why there is no interval, in words ("" when there is one)."""
        if self.can_show:
            return ""
        return (f"cannot be shown with {self.clusters} cluster{'s' * (self.clusters != 1)}: the smallest two-sided "
                f"p a sign-flip test of {self.clusters} reaches is {self.min_p:.3g}")

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "verdict": self.verdict, "note": self.note}


def _groups(diffs: Sequence[float], clusters: Sequence[Hashable], weights: Sequence[float] | None = None
            ) -> list[tuple[float, float, int]]:
    """(weighted sum of the differences, sum of the weights, units) per cluster, in first-seen order (weights: 1
    per unit unless given)."""
    if len(diffs) != len(clusters) or (weights is not None and len(weights) != len(diffs)):
        raise ValueError(f"{len(diffs)} differences but {len(clusters)} cluster labels"
                         + ("" if weights is None else f" and {len(weights)} weights"))
    if not diffs:
        raise ValueError("no paired differences to resample")
    out: dict[Hashable, list[float]] = {}
    for i, (d, c) in enumerate(zip(diffs, clusters)):
        w = 1.0 if weights is None else float(weights[i])
        if not math.isfinite(float(d)):
            raise ValueError(f"a paired difference is not a finite number: {d!r}")
        if not (math.isfinite(w) and w > 0):
            raise ValueError(f"a weight is not a positive number: {w!r}")
        acc = out.setdefault(c, [0.0, 0.0, 0])
        acc[0] += w * float(d)
        acc[1] += w
        acc[2] += 1
    return [(s, w, int(n)) for s, w, n in out.values()]


# ------------------------------------------------------------------------------------------- the sign-flip test
def flip_sets(k: int, *, n_flips: int = 9999, seed: int = 0, exact: bool | None = None) -> tuple[np.ndarray, int]:
    """The sets of clusters whose signs are flipped: every nonempty subset of k (a (2^k − 1) × k 0/1 matrix) when
    ``exact`` (None: k ≤ :data:`EXACT_K`), else ``n_flips`` drawn uniformly from all 2^k (an empty draw is the
    observed data again). Also how many patterns there are in all, the observed one included (2^k, or n + 1)."""
    if exact if exact is not None else k <= EXACT_K:
        codes = np.arange(1, 2 ** k, dtype=np.int64)
        return ((codes[:, None] >> np.arange(k)) & 1).astype(float), 2 ** k
    rng = np.random.default_rng(seed)
    return rng.integers(0, 2, size=(n_flips, k)).astype(float), n_flips + 1


def flip_bounds(sums: np.ndarray, counts: np.ndarray, flipped: np.ndarray, n_patterns: int, level: float = 0.95
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The sign-flip interval and two-sided p of many datasets at once: ``sums[i, j]`` / ``counts[i, j]`` are
    cluster j's sum of differences and units in dataset i (counts may be one row for all), ``flipped`` and
    ``n_patterns`` from :func:`flip_sets`. Returns (low, high, p), NaN where a bound does not exist.

    Flipping the set F moves the statistic to or past the observed one, for the shifted data, exactly when the
    shift δ reaches F's pooled mean; so with c = ⌊α·N/2 − ties⌋ + 1 (ties: the patterns equal to the observed one)
    the lower bound is the c-th smallest subset mean and the upper the c-th largest."""
    sums = np.atleast_2d(np.asarray(sums, dtype=float))
    counts = np.broadcast_to(np.asarray(counts, dtype=float), sums.shape)
    empty = flipped.sum(axis=1) == 0
    ties = 1 + int(empty.sum())  # the observed pattern and every empty draw give the observed statistic
    sets = flipped[~empty]
    thr = np.round((sums @ sets.T) / (counts @ sets.T), 12)  # (datasets, subsets): each flipped set's pooled mean
    p_up = (ties + (thr <= 0).sum(axis=1)) / n_patterns  # one-sided p for "B > A"
    p_down = (ties + (thr >= 0).sum(axis=1)) / n_patterns
    p = np.minimum(1.0, 2 * np.minimum(p_up, p_down))
    c = math.floor((1 - level) / 2 * n_patterns - ties) + 1
    if c <= 0:
        nan = np.full(len(sums), np.nan)
        return nan, nan.copy(), p
    thr.sort(axis=1)
    return thr[:, c - 1], thr[:, -c], p


def cluster_interval(diffs: Sequence[float], clusters: Sequence[Hashable], *, weights: Sequence[float] | None = None,
                     level: float = 0.95, n_flips: int = 9999, seed: int = 0, exact: bool | None = None
                     ) -> ClusterInterval:
    """The mean of ``diffs`` (paired differences, one per unit; ``clusters[i]`` is unit i's cluster: its seed, its
    dataset) with the cluster sign-flip test's interval and p-value (module docstring). ``weights``: each unit's
    weight in the mean (default 1: the pooled mean over units; ``bench learn`` weighs each of several runs equally);
    a cluster's sum is then its weighted sum, and the test is as exact. ``exact``: None enumerates every sign
    pattern up to :data:`EXACT_K` clusters, else draws ``n_flips`` (RNG ``seed``)."""
    groups = _groups(diffs, clusters, weights)
    k = len(groups)
    sums = np.array([[s for s, _, _ in groups]])
    mass = np.array([w for _, w, _ in groups])
    flipped, n_patterns = flip_sets(k, n_flips=n_flips, seed=seed, exact=exact)
    low, high, p = flip_bounds(sums, mass, flipped, n_patterns, level)
    every = len(flipped) == 2 ** k - 1 and n_patterns == 2 ** k
    return ClusterInterval(mean=round(float(sums.sum() / mass.sum()), 12), low=_bound(low[0]), high=_bound(high[0]),
                           clusters=k, units=sum(n for _, _, n in groups),
                           method="sign-flip" if every else "sign-flip sampled", level=level, p_value=float(p[0]),
                           min_p=min(1.0, max(2 / 2 ** k, 2 / n_patterns)))


def _bound(value: float) -> float | None:
    return None if math.isnan(value) else float(value)


# ------------------------------------------------------------------------ the old method, kept for comparison
def exact_distribution(diffs: Sequence[float], clusters: Sequence[Hashable]) -> list[tuple[float, float]]:
    """The cluster bootstrap's distribution: every value the pooled mean takes over resamples of k clusters from k
    (with replacement), with its probability: each multiset of clusters has probability k! / (∏ mᵢ! · kᵏ). Sorted
    by value, ties merged."""
    groups = [(s, float(n)) for s, _, n in _groups(diffs, clusters)]
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
    """The percentile interval of the cluster bootstrap — **not used for any claim** since issue 40: with few
    clusters it is too narrow (3 clusters: its lower bound is the smallest cluster mean; see the module
    docstring). Kept to show that by simulation. ``exact``: None enumerates every multiset of clusters when there
    are at most :data:`EXACT_LIMIT`, else ``n_boot`` draws."""
    groups = [(s, n) for s, _, n in _groups(diffs, clusters)]
    k = len(groups)
    units = sum(n for _, n in groups)
    mean = sum(s for s, _ in groups) / units
    use_exact = n_multisets(k) <= EXACT_LIMIT if exact is None else exact
    if use_exact:
        low, high = _quantiles(exact_distribution(diffs, clusters), level)
        return ClusterInterval(mean, low, high, k, units, "bootstrap exact", level)
    sums = np.array([s for s, _ in groups])
    counts = np.array([n for _, n in groups], dtype=float)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, k, size=(n_boot, k))
    stats = sums[draws].sum(axis=1) / counts[draws].sum(axis=1)
    low, high = np.quantile(stats, [(1 - level) / 2, (1 + level) / 2])
    return ClusterInterval(mean, float(low), float(high), k, units, "bootstrap sampled", level)
