"""The cluster bootstrap (engine/eval/cluster.py) on hand-made cases: the exact distribution over multisets of
clusters equals the one enumerated by hand (every ordered draw), the sampled one converges to it, and it is wider
than resampling environments when the effect lives in the clusters."""

from __future__ import annotations

import itertools
from collections import Counter
from fractions import Fraction

import numpy as np
import pytest

from engine.eval.cluster import cluster_bootstrap, exact_distribution, n_multisets

#: three clusters of unequal size: A wins all 4 of its environments, B 1 of 2, C none of 1
DIFFS = [1, 1, 1, 1, 1, 0, 0]
LABELS = ["A", "A", "A", "A", "B", "B", "C"]
#: by hand: each multiset of 3 clusters, its pooled mean and its number of ordered draws (of 27)
BY_HAND = {Fraction(0): 1, Fraction(1, 4): 3, Fraction(2, 5): 3, Fraction(1, 2): 1, Fraction(2, 3): 3,
           Fraction(5, 7): 6, Fraction(3, 4): 3, Fraction(8, 9): 3, Fraction(9, 10): 3, Fraction(1): 1}


def _enumerated() -> dict[Fraction, int]:
    """Every ordered draw of 3 clusters out of 3 (27, equally likely): the pooled mean of the units drawn."""
    units = {c: [d for d, lab in zip(DIFFS, LABELS) if lab == c] for c in "ABC"}
    out: Counter[Fraction] = Counter()
    for draw in itertools.product("ABC", repeat=3):
        pooled = [d for c in draw for d in units[c]]
        out[Fraction(sum(pooled), len(pooled))] += 1
    return dict(out)


def test_the_exact_distribution_is_the_hand_enumeration():
    assert _enumerated() == BY_HAND
    dist = exact_distribution(DIFFS, LABELS)
    assert [v for v, _ in dist] == pytest.approx([float(v) for v in sorted(BY_HAND)])
    assert [p for _, p in dist] == pytest.approx([BY_HAND[v] / 27 for v in sorted(BY_HAND)])


def test_the_interval_is_the_percentile_interval_of_the_cluster_resamples():
    # CDF over 27: 1, 4, 7, 8, 11, 17, 20, 23, 26, 27 → 80%: first above 2.7/27 is 1/4, first reaching 24.3/27 is 9/10
    ci = cluster_bootstrap(DIFFS, LABELS, level=0.8)
    assert (ci.method, ci.clusters, ci.units, ci.bootstrap) == ("exact", 3, 7, "cluster")
    assert ci.mean == pytest.approx(5 / 7)
    assert (ci.low, ci.high) == pytest.approx((0.25, 0.9))
    # 95%: the first value already holds 1/27 > 2.5%, the last is needed to reach 97.5%
    assert (cluster_bootstrap(DIFFS, LABELS).low, cluster_bootstrap(DIFFS, LABELS).high) == (0.0, 1.0)
    # drawn instead of enumerated: the same distribution, within sampling error
    sampled = cluster_bootstrap(DIFFS, LABELS, level=0.8, exact=False, n_boot=40_000, seed=1)
    assert sampled.method == "sampled" and 0.25 <= sampled.low <= 0.4 and 0.889 <= sampled.high <= 0.9


def test_two_clusters_with_a_known_effect():
    # seed A: the policy wins on both environments, seed B on neither. Resamples AA, AB, BB (1/4, 1/2, 1/4) give
    # 1, 1/2, 0: the 95% interval is [0, 1] and the 50% one [1/2, 1/2].
    diffs, labels = [1, 1, 0, 0], ["A", "A", "B", "B"]
    assert exact_distribution(diffs, labels) == pytest.approx([(0.0, 0.25), (0.5, 0.5), (1.0, 0.25)])
    ci = cluster_bootstrap(diffs, labels)
    assert (ci.mean, ci.low, ci.high, ci.above_zero) == (0.5, 0.0, 1.0, False)
    half = cluster_bootstrap(diffs, labels, level=0.5)
    assert (half.low, half.high) == (0.5, 0.5)


def test_resampling_clusters_is_wider_than_resampling_environments():
    # 12 environments, 3 seeds: two seeds all +1, one all 0. Environments as if independent say "above 0"; the
    # seeds (3 clusters) do not
    diffs = [1.0] * 8 + [0.0] * 4
    labels = ["s1"] * 4 + ["s2"] * 4 + ["s3"] * 4
    by_env = cluster_bootstrap(diffs, list(range(12)), n_boot=4000)
    by_seed = cluster_bootstrap(diffs, labels)
    assert by_env.method == "sampled" and by_env.low > 0.3  # the naive interval excludes 0
    assert by_seed.method == "exact" and by_seed.low == 0.0 and by_seed.high == 1.0
    assert by_seed.high - by_seed.low > 2 * (by_env.high - by_env.low)


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError, match="cluster labels"):
        cluster_bootstrap([1.0, 0.0], ["a"])
    with pytest.raises(ValueError, match="no paired"):
        cluster_bootstrap([], [])
    with pytest.raises(ValueError, match="finite"):
        cluster_bootstrap([float("nan")], ["a"])
    assert n_multisets(3) == 10 and n_multisets(12) == 1_352_078
    assert cluster_bootstrap(list(np.zeros(24)), [i % 12 for i in range(24)]).method == "sampled"
