"""The metric library: scikit-learn where it has the metric, hand-written only where it has none.

Each metric takes ``(y_true, y_pred)`` as 2-D arrays shaped ``(rows, targets)`` (one column for single-target
tasks; one column per class for probabilistic multiclass metrics) and returns a float.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
from sklearn import metrics as skm


@dataclass(frozen=True)
class Metric:
    name: str
    fn: Callable[[np.ndarray, np.ndarray], float]
    lower_is_better: bool
    #: what the submission holds: "label" (one class per row), "proba" (one column per class),
    #: "value" (one number per target column), "ranking" (space-separated top-k labels)
    prediction: str
    description: str
    best: float | None = None


def _col(a: np.ndarray) -> np.ndarray:
    a = np.asarray(a)
    return a[:, 0] if a.ndim == 2 else a


def _accuracy(y, p):
    return float(skm.accuracy_score(_col(y), _col(p)))


def _f1(average):
    def fn(y, p):
        return float(skm.f1_score(_col(y), _col(p), average=average, zero_division=0))
    return fn


def _roc_auc(y, p):
    return float(skm.roc_auc_score(_col(y).astype(int), _col(p).astype(float)))


def _mean_col_auc(y, p):
    y, p = np.asarray(y), np.asarray(p, dtype=float)
    scores = [skm.roc_auc_score(y[:, j].astype(int), p[:, j]) for j in range(y.shape[1]) if len(np.unique(y[:, j])) > 1]
    if not scores:
        raise ValueError("every target column has a single class: ROC-AUC is undefined")
    return float(np.mean(scores))


def _log_loss(y, p):
    """Multiclass log loss. ``y`` holds one-hot columns (rows × classes); ``p`` probabilities, rows renormalised
    and clipped as Kaggle does."""
    y, p = np.asarray(y, dtype=float), np.clip(np.asarray(p, dtype=float), 1e-15, 1 - 1e-15)
    p = p / p.sum(axis=1, keepdims=True)
    return float(-np.mean(np.sum(y * np.log(p), axis=1)))


def _multilabel_log_loss(y, p):
    y, p = np.asarray(y, dtype=float), np.clip(np.asarray(p, dtype=float), 1e-15, 1 - 1e-15)
    return float(np.mean([skm.log_loss(y[:, j], p[:, j], labels=[0, 1]) for j in range(y.shape[1])]))


def _rmse(y, p):
    return float(np.sqrt(skm.mean_squared_error(_col(y).astype(float), _col(p).astype(float))))


def _rmsle(y, p):
    y, p = _col(y).astype(float), _col(p).astype(float)
    if (p < 0).any() or (y < 0).any():
        raise ValueError("RMSLE needs non-negative predictions")
    return float(np.sqrt(skm.mean_squared_log_error(y, p)))


def _mean_col_rmsle(y, p):
    y, p = np.asarray(y, dtype=float), np.asarray(p, dtype=float)
    if (p < 0).any() or (y < 0).any():
        raise ValueError("RMSLE needs non-negative predictions")
    return float(np.mean([np.sqrt(skm.mean_squared_log_error(y[:, j], p[:, j])) for j in range(y.shape[1])]))


def _mcrmse(y, p):
    y, p = np.asarray(y, dtype=float), np.asarray(p, dtype=float)
    return float(np.mean([np.sqrt(skm.mean_squared_error(y[:, j], p[:, j])) for j in range(y.shape[1])]))


def _mae(y, p):
    return float(skm.mean_absolute_error(_col(y).astype(float), _col(p).astype(float)))


def _r2(y, p):
    return float(skm.r2_score(_col(y).astype(float), _col(p).astype(float)))


def _qwk(y, p):
    return float(skm.cohen_kappa_score(_col(y).astype(int), np.rint(_col(p).astype(float)).astype(int), weights="quadratic"))


def map_at_k(actual: list, predicted: list[list], k: int = 3) -> float:
    """Mean average precision at k with one relevant label per row (scikit-learn has none)."""
    total = 0.0
    for truth, preds in zip(actual, predicted):
        for rank, label in enumerate(preds[:k], start=1):
            if label == truth:
                total += 1.0 / rank
                break
    return total / max(len(actual), 1)


def _map3(y, p):
    truth = [str(v) for v in _col(y)]
    preds = [str(v).split() for v in _col(p)]
    return float(map_at_k(truth, preds, 3))


METRICS: dict[str, Metric] = {
    m.name: m
    for m in [
        Metric("accuracy", _accuracy, False, "label", "share of rows whose label is right", 1.0),
        Metric("f1_macro", _f1("macro"), False, "label", "F1 averaged over classes", 1.0),
        Metric("f1_micro", _f1("micro"), False, "label", "F1 over all decisions", 1.0),
        Metric("f1_weighted", _f1("weighted"), False, "label", "F1 averaged over classes, weighted by support", 1.0),
        Metric("roc_auc", _roc_auc, False, "value", "area under the ROC curve of a probability", 1.0),
        Metric("mean_columnwise_roc_auc", _mean_col_auc, False, "value", "ROC-AUC averaged over target columns", 1.0),
        Metric("log_loss", _log_loss, True, "proba", "multiclass log loss over one probability column per class", 0.0),
        Metric("multilabel_log_loss", _multilabel_log_loss, True, "value", "binary log loss averaged over targets", 0.0),
        Metric("rmse", _rmse, True, "value", "root mean squared error", 0.0),
        Metric("rmsle", _rmsle, True, "value", "root mean squared log error", 0.0),
        Metric("mean_columnwise_rmsle", _mean_col_rmsle, True, "value", "RMSLE averaged over target columns", 0.0),
        Metric("mcrmse", _mcrmse, True, "value", "RMSE averaged over target columns", 0.0),
        Metric("mae", _mae, True, "value", "mean absolute error", 0.0),
        Metric("r2", _r2, False, "value", "coefficient of determination", 1.0),
        Metric("qwk", _qwk, False, "label", "quadratic weighted Cohen's kappa on ordinal labels", 1.0),
        Metric("map_at_3", _map3, False, "ranking", "mean average precision of the top-3 labels", 1.0),
    ]
}


def get_metric(name: str) -> Metric:
    try:
        return METRICS[name]
    except KeyError:
        raise KeyError(f"unknown metric {name!r}; known: {', '.join(sorted(METRICS))}") from None
