"""engine/eval/cluster.py on hand-made cases. The sign-flip test (what every claim uses): its p-value and interval
equal the brute-force definition (every sign pattern, every shift), it says when k clusters cannot show anything,
a tie is a tie, and weighing runs equally is the mean of the runs. The old cluster bootstrap (kept for comparison):
the exact distribution over multisets of clusters equals the one enumerated by hand (every ordered draw), the
sampled one converges to it, and it is wider than resampling environments when the effect lives in the clusters.
Coverage by simulation: tests/test_cluster_coverage.py."""

from __future__ import annotations

import itertools
from collections import Counter
from fractions import Fraction

import numpy as np
import pytest

from engine.eval.cluster import cluster_bootstrap, cluster_interval, exact_distribution, n_multisets

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
    assert (ci.method, ci.clusters, ci.units, ci.bootstrap) == ("bootstrap exact", 3, 7, "cluster")
    assert ci.mean == pytest.approx(5 / 7)
    assert (ci.low, ci.high) == pytest.approx((0.25, 0.9))
    # 95%: the first value already holds 1/27 > 2.5%, the last is needed to reach 97.5%
    assert (cluster_bootstrap(DIFFS, LABELS).low, cluster_bootstrap(DIFFS, LABELS).high) == (0.0, 1.0)
    # drawn instead of enumerated: the same distribution, within sampling error
    sampled = cluster_bootstrap(DIFFS, LABELS, level=0.8, exact=False, n_boot=40_000, seed=1)
    assert sampled.method == "bootstrap sampled" and 0.25 <= sampled.low <= 0.4 and 0.889 <= sampled.high <= 0.9


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
    assert by_env.method == "bootstrap sampled" and by_env.low > 0.3  # the naive interval excludes 0
    assert by_seed.method == "bootstrap exact" and by_seed.low == 0.0 and by_seed.high == 1.0
    assert by_seed.high - by_seed.low > 2 * (by_env.high - by_env.low)


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError, match="cluster labels"):
        cluster_bootstrap([1.0, 0.0], ["a"])
    with pytest.raises(ValueError, match="no paired"):
        cluster_bootstrap([], [])
    with pytest.raises(ValueError, match="finite"):
        cluster_bootstrap([float("nan")], ["a"])
    assert n_multisets(3) == 10 and n_multisets(12) == 1_352_078
    assert cluster_bootstrap(list(np.zeros(24)), [i % 12 for i in range(24)]).method == "bootstrap sampled"


# ------------------------------------------------------------------------------------------ the sign-flip test
#: 7 clusters of unequal size (a seed's or a dataset's paired differences)
FLIP = {"a": [0.9, 0.4, 1.3], "b": [0.2], "c": [-0.3, 0.8], "d": [1.1, 0.6, 0.0, 0.5], "e": [0.7], "f": [-0.2, 0.3],
        "g": [1.5]}


def _flat(groups: dict[str, list[float]]) -> tuple[list[float], list[str]]:
    return [d for v in groups.values() for d in v], [c for c, v in groups.items() for _ in v]


def _brute_p(groups: dict[str, list[float]], delta: float = 0.0) -> tuple[float, float]:
    """One-sided p-values (B above, B below) of "the differences minus delta are symmetric", by flipping the signs
    of whole clusters in every one of the 2^k ways: the pooled mean of the flipped data against the observed one."""
    sums = [sum(v) - delta * len(v) for v in groups.values()]
    observed = sum(sums)
    flipped = [sum(s * x for s, x in zip(signs, sums)) for signs in itertools.product((1, -1), repeat=len(sums))]
    n = len(flipped)
    return (sum(t >= observed - 1e-12 for t in flipped) / n, sum(t <= observed + 1e-12 for t in flipped) / n)


def test_the_sign_flip_p_value_and_interval_are_the_brute_force_definition():
    diffs, labels = _flat(FLIP)
    ci = cluster_interval(diffs, labels)
    assert (ci.method, ci.clusters, ci.units, ci.level) == ("sign-flip", 7, 14, 0.95)
    assert ci.mean == pytest.approx(sum(diffs) / len(diffs))
    up, down = _brute_p(FLIP)
    assert ci.p_value == pytest.approx(min(1.0, 2 * min(up, down)))
    assert ci.p_value == pytest.approx(2 / 128) and ci.min_p == pytest.approx(2 / 128)  # 1 pattern of 128 as far
    # the interval is the set of shifts the test does not reject (either side at 2.5%), checked on a fine grid
    for delta in np.linspace(-0.5, 1.5, 801) + 1e-7:
        up, down = _brute_p(FLIP, delta)
        kept = up > 0.025 and down > 0.025
        assert kept == (ci.low <= delta <= ci.high), delta
    assert ci.low > 0 and ci.above_zero and ci.verdict == "beats" and ci.note == ""


def test_few_clusters_cannot_show_anything_and_say_so():
    # three seeds, every environment +1: the old bootstrap's interval is [1, 1]; three signs can be flipped 8 ways,
    # so the observed pattern is 1 of 8 (p = 0.25 two-sided) and no 95% claim exists
    diffs, labels = [1.0] * 6, ["s1", "s1", "s2", "s2", "s3", "s3"]
    ci = cluster_interval(diffs, labels)
    assert (ci.low, ci.high, ci.p_value, ci.min_p) == (None, None, 0.25, 0.25)
    assert not ci.above_zero and not ci.can_show and ci.verdict == "inconclusive"
    assert ci.note == "cannot be shown with 3 clusters: the smallest two-sided p a sign-flip test of 3 reaches is 0.25"
    assert cluster_bootstrap(diffs, labels).low == 1.0  # the old method claimed it
    assert cluster_interval([1.0] * 5, list("abcde")).note.startswith("cannot be shown with 5 clusters")
    six = cluster_interval([1.0] * 6, list("abcdef"))  # 6 clusters: 1 pattern of 64 is as far: p 0.031 < 0.05
    assert six.can_show and six.verdict == "beats" and six.p_value == pytest.approx(1 / 32)


def test_a_tie_is_a_tie_and_the_other_verdicts():
    ties = cluster_interval([0.0] * 12, [i % 12 for i in range(12)])
    assert (ties.mean, ties.low, ties.high, ties.p_value, ties.verdict) == (0.0, 0.0, 0.0, 1.0, "tie")
    assert cluster_interval([0.0] * 3, ["a", "b", "c"]).verdict == "tie"  # no interval, but equal rates
    worse = cluster_interval([-1.0] * 8, list("abcdefgh"))
    assert worse.verdict == "worse" and worse.below_zero and worse.high == -1.0
    mixed = cluster_interval([1.0, -1.0, 1.0, 0.0, 1.0, -1.0, 1.0, 1.0], list("abcdefgh"))
    assert mixed.verdict == "inconclusive" and mixed.low < 0 < mixed.high
    assert mixed.to_dict()["verdict"] == "inconclusive"


def test_weights_make_each_run_count_once_and_sampling_matches_enumeration():
    # run 1 has 2 pairs, run 2 has 4: weights 1/2 and 1/4 make the mean the mean of the two runs' means
    diffs, labels = [1.0, 0.0, 1.0, 1.0, 1.0, 0.0], ["a", "b", "a", "b", "c", "c"]
    weights = [1 / 2] * 2 + [1 / 4] * 4
    ci = cluster_interval(diffs, labels, weights=weights)
    assert ci.mean == pytest.approx((0.5 + 0.75) / 2) and ci.units == 6
    with pytest.raises(ValueError, match="weight"):
        cluster_interval(diffs, labels, weights=[0.0] * 6)
    # 12 clusters: 4,095 subsets enumerated vs 40,000 random patterns
    rng = np.random.default_rng(3)
    diffs12 = list(rng.normal(0.4, 1, 36))
    labels12 = [i % 12 for i in range(36)]
    full, drawn = cluster_interval(diffs12, labels12), cluster_interval(diffs12, labels12, exact=False, n_flips=40_000)
    assert (full.method, drawn.method) == ("sign-flip", "sign-flip sampled")
    assert drawn.low == pytest.approx(full.low, abs=0.03) and drawn.high == pytest.approx(full.high, abs=0.03)
    assert drawn.p_value == pytest.approx(full.p_value, abs=0.005)
