"""The vectorised bootstrap (engine/grading/bootstrap.py): every metric's score on every resample equals the
library's own function on those rows (scikit-learn's where it has the metric), undefined resamples left out; the
verifier's learnability lower bound rests on 1,000 resamples."""

from __future__ import annotations

import numpy as np
import pytest

from engine.grading.bootstrap import BATCH, N_BOOT, paired_gap_interval, resample_scores
from engine.grading.metrics import METRICS, get_metric
from test_grading import _case


def _loop(name: str, y: np.ndarray, p: np.ndarray, idx: np.ndarray) -> np.ndarray:
    out = []
    for rows in idx:
        try:
            out.append(get_metric(name).fn(y[rows], p[rows]))
        except ValueError:
            out.append(np.nan)
    return np.array(out)


@pytest.mark.parametrize("name", sorted(METRICS))
def test_every_metric_on_every_resample_equals_the_library_function(name):
    assert set(BATCH) == set(METRICS)  # a new metric brings its vectorised form
    y, best, worse = _case(name)
    rng = np.random.default_rng(3)
    mixed = np.where(rng.random((len(y), 1)) < 0.5, best, worse)  # right on some rows, wrong on others
    perm = rng.permutation(len(y))
    for rows in (len(y), 5):  # 5 rows: resamples of one class, constant answers (undefined, NaN) happen
        yy, pp = y[perm[:rows]], mixed[perm[:rows]]
        try:
            get_metric(name).fn(yy, pp)
        except ValueError:
            continue  # the metric refuses these 5 rows as a whole
        idx = rng.integers(0, rows, (30, rows))
        got, want = resample_scores(name, yy, pp, idx), _loop(name, yy, pp, idx)
        assert np.array_equal(np.isnan(got), np.isnan(want)), (name, rows)
        np.testing.assert_allclose(got[~np.isnan(got)], want[~np.isnan(want)], rtol=1e-9, atol=1e-9, err_msg=name)
        if rows == len(y):
            assert len(np.unique(got)) > 5  # the resamples differ: the comparison says something


def test_the_lower_bound_rests_on_1000_paired_resamples_and_separates_a_fluke_from_a_lead():
    assert N_BOOT >= 1000
    rng = np.random.default_rng(0)
    n = 300
    y = (rng.random((n, 1)) < 0.5).astype(float)
    good = np.clip(y * 0.4 + rng.random((n, 1)) * 0.6, 0, 1)  # a real lead over the constant
    noise = rng.random((n, 1))  # a "model" that knows nothing
    const = np.full((n, 1), 0.5)
    lo, hi, used = paired_gap_interval("roc_auc", False, y, good, const, np.random.default_rng(1))
    assert used == N_BOOT and 0.2 < lo < hi < 0.5
    lo, hi, used = paired_gap_interval("roc_auc", False, y, noise, const, np.random.default_rng(1))
    assert used == N_BOOT and lo < 0 < hi
    # lower is better: the gap is constant minus best (log loss), positive for a lead
    Y = np.eye(2)[y[:, 0].astype(int)]
    lo, _, _ = paired_gap_interval("log_loss", True, Y, np.column_stack([1 - good, good]), np.full((n, 2), 0.5),
                                   np.random.default_rng(1))
    assert lo > 0
    # a metric that refuses the whole test set: no interval
    assert paired_gap_interval("log_loss", True, y, good, const, np.random.default_rng(1)) == (0.0, 0.0, 0)


def test_the_verifier_bound_uses_1000_resamples_of_the_test_rows():
    import pandas as pd

    from engine.envs.layout import GradeSpec
    from engine.synthesis.verifier import paired_bootstrap_interval

    spec = GradeSpec("roc_auc", False, "id", ["y"], ["y"], classes=[0, 1], task_type="binary")
    rng = np.random.default_rng(0)
    n = 200
    answers = pd.DataFrame({"id": [str(i) for i in range(n)], "y": (rng.random(n) < 0.4).astype(int)})
    trivial = answers.assign(y=0.5)
    lead = answers.assign(y=np.clip(answers["y"] * 0.3 + rng.random(n) * 0.7, 0, 1))
    fluke = answers.assign(y=rng.random(n))  # random scores: any lead over the constant is sampling noise
    lo, hi, used = paired_bootstrap_interval(spec, answers, lead, trivial, np.random.default_rng(1))
    assert used == 1000 and 0 < lo < hi
    lo, hi, used = paired_bootstrap_interval(spec, answers, fluke, trivial, np.random.default_rng(1))
    assert used == 1000 and lo <= 0 < hi
