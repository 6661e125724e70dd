"""score_submission: alignment on ids, every invalid case raises InvalidSubmission with a precise message."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from engine.envs.layout import GradeSpec
from engine.errors import InvalidSubmission
from engine.grading.score import score_submission

LABELS = GradeSpec("accuracy", False, "id", ["y"], ["y"], classes=["a", "b", "c"], task_type="multiclass")
PROBA = GradeSpec("log_loss", True, "id", ["y"], ["a", "b"], classes=["a", "b"], task_type="multiclass")
AUC = GradeSpec("roc_auc", False, "id", ["y"], ["y"], classes=[0, 1], task_type="binary")


def _answers():
    return pd.DataFrame({"id": ["r1", "r2", "r3", "r4"], "y": ["a", "b", "c", "a"]})


def test_perfect_and_shuffled_rows_score_the_same():
    ans = _answers()
    assert score_submission(LABELS, ans, ans.copy()) == 1.0
    assert score_submission(LABELS, ans, ans.iloc[::-1].reset_index(drop=True)) == 1.0
    wrong = ans.assign(y=["b", "b", "c", "a"])
    assert score_submission(LABELS, ans, wrong) == 0.75


@pytest.mark.parametrize("mutate, message", [
    (lambda s: s.iloc[:3], "expected 4 rows, got 3"),
    (lambda s: s.rename(columns={"y": "label"}), "missing prediction column"),
    (lambda s: s.assign(extra=1), "unexpected column"),
    (lambda s: s.assign(id=["r1", "r2", "r3", "r9"]), "not in the test set"),
    (lambda s: s.assign(id=["r1", "r1", "r3", "r4"]), "appears more than once"),
    (lambda s: s.assign(y=["a", None, "c", "a"]), "missing values"),
    (lambda s: s.assign(y=["a", "zzz", "c", "a"]), "not one of the classes"),
    (lambda s: s.drop(columns=["id"]), "missing id column"),
])
def test_invalid_label_submissions(mutate, message):
    ans = _answers()
    with pytest.raises(InvalidSubmission, match=message):
        score_submission(LABELS, ans, mutate(ans.copy()))


def test_probabilities_and_inf():
    ans = pd.DataFrame({"id": ["1", "2"], "a": [1, 0], "b": [0, 1]})
    sub = pd.DataFrame({"id": ["2", "1"], "a": [0.2, 0.8], "b": [0.8, 0.2]})
    assert score_submission(PROBA, ans, sub) == pytest.approx(-np.log(0.8))
    with pytest.raises(InvalidSubmission, match="non-finite"):
        score_submission(PROBA, ans, sub.assign(a=[np.inf, 0.1]))
    with pytest.raises(InvalidSubmission, match=r"\[0, 1\]"):
        score_submission(PROBA, ans, sub.assign(a=[-0.5, 0.1]))
    with pytest.raises(InvalidSubmission, match="must be numeric"):
        score_submission(PROBA, ans, sub.assign(a=["x", "y"]))


def test_integer_ids_and_labels_compare_as_text():
    ans = pd.DataFrame({"id": [1, 2, 3, 4], "y": [0, 1, 0, 1]})
    sub = pd.DataFrame({"id": ["4", "3", "2", "1"], "y": [0.9, 0.1, 0.8, 0.2]})
    assert score_submission(AUC, ans, sub) == 1.0
    acc = GradeSpec("accuracy", False, "id", ["y"], ["y"], classes=[0, 1])
    assert score_submission(acc, ans, ans.assign(y=[0.0, 1.0, 0.0, 1.0])) == 1.0


def test_metric_errors_become_invalid():
    spec = GradeSpec("rmsle", True, "id", ["y"], ["y"])
    ans = pd.DataFrame({"id": ["1", "2"], "y": [1.0, 2.0]})
    with pytest.raises(InvalidSubmission, match="non-negative"):
        score_submission(spec, ans, ans.assign(y=[-1.0, 2.0]))


def test_bootstrap_fast_auc_equals_sklearn():
    from engine.grading.metrics import get_metric
    from engine.grading.metrics import FAST_METRICS

    r = np.random.default_rng(0)
    y = r.integers(0, 2, (300, 6))
    p = np.round(r.random((300, 6)), 1)  # ties included
    for name in ("roc_auc", "mean_columnwise_roc_auc", "multilabel_log_loss"):
        assert FAST_METRICS[name](y, p) == pytest.approx(get_metric(name).fn(y, p), abs=1e-12)
    values = r.gamma(2.0, 3.0, (300, 3))
    guess = np.abs(values + r.normal(0, 1, (300, 3)))
    for name in ("rmse", "rmsle", "mean_columnwise_rmsle", "mcrmse", "mae"):
        assert FAST_METRICS[name](values, guess) == pytest.approx(get_metric(name).fn(values, guess), abs=1e-12)
    labels = r.integers(0, 4, (300, 1)).astype(str)
    assert FAST_METRICS["accuracy"](labels, labels[::-1]) == get_metric("accuracy").fn(labels, labels[::-1])
