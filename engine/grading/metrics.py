"""The metric library: scikit-learn where it has the metric, hand-written only where it has none.

Each metric takes ``(y_true, y_pred)`` as 2-D arrays shaped ``(rows, targets)`` (one column for single-target
tasks; one column per class for probabilistic multiclass metrics) and returns a float.

Degenerate inputs raise ``ValueError`` (a grade turns it into an invalid submission, with the reason) instead of a
number that means nothing: no rows; NaN, inf or a missing label on either side; probabilities outside [0, 1]; log
loss over fewer than two class columns (renormalising one column scores a perfect 0.0 for anything) or answers
that are not one-hot; ROC-AUC over answers of one class; R² over constant answers; a quadratic weighted kappa
with no disagreement to expect (answers and predictions one and the same class). Every entry of :data:`METRICS`
and :data:`FAST_METRICS` goes through the same checks (:func:`_checked`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np


class _SklearnMetrics:
    """``sklearn.metrics``, imported when a metric first needs it: importing the grading package (every ``sandmle``
    command does, through the store's upkeep) does not pay for scikit-learn's import (about a second here). Kept in
    this module: the exported grader carries it byte for byte (engine/exchange/grader_source.py)."""

    def __getattr__(self, attr: str) -> Any:
        import sklearn.metrics  # heavy (about a second): paid on a metric's first use, not on import

        return getattr(sklearn.metrics, attr)


skm = _SklearnMetrics()


@dataclass(frozen=True)
class Metric:
    """One metric of the library. :data:`METRICS` is the one list: seeds, MLE-bench folders, synthesis (roles,
    descriptions, verification) and grading read what they need of a metric from its entry, never from its name."""

    name: str
    fn: Callable[[np.ndarray, np.ndarray], float]
    lower_is_better: bool
    #: what the submission holds: "label" (one class per row), "proba" (one column per class),
    #: "value" (one number per target column), "ranking" (space-separated top-k labels)
    prediction: str
    description: str
    best: float | None = None
    #: how description.md words it (default: ``description``)
    prose: str = ""
    #: scores lie on a fixed scale up to ``best`` (the verifier judges saturation on it, not relative to trivial)
    bounded: bool = False
    #: the targets are numbers (a regression task), not classes
    regression: bool = False
    #: predictions are probabilities and must lie in [0, 1]
    probabilities: bool = False
    #: the labels are ordinal integers, compared as numbers (a label metric)
    ordinal: bool = False
    #: predictions (and targets) must not be negative
    non_negative: bool = False
    #: MLE-bench grader names of this metric besides its own (lower case, hyphens for spaces and underscores)
    aliases: tuple[str, ...] = ()

    @property
    def wording(self) -> str:
        """The metric as description.md explains it."""
        return self.prose or self.description


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
    y = _col(y).astype(int)
    if len(np.unique(y)) < 2:
        raise ValueError("the answers hold a single class: ROC-AUC is undefined")
    return float(skm.roc_auc_score(y, _col(p).astype(float)))


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
    if y.ndim != 2 or y.shape[1] < 2:
        raise ValueError(f"log loss needs one probability column per class, at least two "
                         f"({1 if y.ndim < 2 else y.shape[1]} given): a single renormalised column scores 0.0 for "
                         "anything (binary log loss over one column is multilabel_log_loss)")
    if p.shape != y.shape:
        raise ValueError(f"{p.shape[1] if p.ndim == 2 else 1} prediction columns for {y.shape[1]} classes")
    if not (np.isin(y, (0.0, 1.0)).all() and (y.sum(axis=1) == 1).all()):
        raise ValueError("the answers are not one-hot (one 1 per row over the class columns)")
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
    y = _col(y).astype(float)
    if np.ptp(y) == 0:
        raise ValueError("the answers are constant: R² is undefined (no variance to explain)")
    return float(skm.r2_score(y, _col(p).astype(float)))


def _qwk(y, p):
    y, p = _col(y).astype(float).astype(int), np.rint(_col(p).astype(float)).astype(int)
    if len(np.unique(np.concatenate([y, p]))) < 2:
        raise ValueError("answers and predictions are one and the same class: quadratic weighted kappa is "
                         "undefined")
    return float(skm.cohen_kappa_score(y, p, weights="quadratic"))


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


def _missing(a: np.ndarray) -> bool:
    """A label array holds a missing or non-finite value (None, a float NaN or inf)."""
    a = np.asarray(a)
    if a.dtype.kind in "fc":
        return not bool(np.isfinite(a).all())
    if a.dtype.kind != "O":
        return False  # integers, booleans, strings: nothing missing
    return any(v is None or (isinstance(v, (float, np.floating)) and not np.isfinite(v)) for v in a.ravel())


def _checked(fn: Callable[[np.ndarray, np.ndarray], float], prediction: str, *, numeric: bool,
             probabilities: bool) -> Callable[[np.ndarray, np.ndarray], float]:
    """``fn`` behind the checks every metric shares (the module docstring): no rows, a missing label, NaN or inf,
    probabilities outside [0, 1] raise ``ValueError``; so does a result that is not a finite number."""

    def run(y: np.ndarray, p: np.ndarray) -> float:
        y, p = np.asarray(y), np.asarray(p)
        if y.shape[0] == 0 or p.shape[0] == 0:
            raise ValueError("no rows to score")
        if y.shape[0] != p.shape[0]:
            raise ValueError(f"{p.shape[0]} predictions for {y.shape[0]} answers")
        if numeric:
            for what, a in (("answers", y), ("predictions", p)):
                try:
                    values = a.astype(float)
                except (TypeError, ValueError):
                    raise ValueError(f"the {what} are not all numbers") from None
                if not np.isfinite(values).all():
                    raise ValueError(f"the {what} hold NaN or inf")
            if probabilities and ((p.astype(float) < 0).any() or (p.astype(float) > 1).any()):
                raise ValueError("probabilities must lie in [0, 1]")
        elif _missing(y) or _missing(p):
            raise ValueError("a label is missing (empty or NaN)")
        value = float(fn(y, p))
        if not np.isfinite(value):
            raise ValueError(f"the metric is undefined on these values ({value})")
        return value

    run.__name__ = getattr(fn, "__name__", "metric")
    run.__doc__ = fn.__doc__
    return run


def _guard(m: Metric) -> Metric:
    numeric = m.prediction in ("value", "proba") or m.ordinal
    return dataclasses.replace(m, fn=_checked(m.fn, m.prediction, numeric=numeric, probabilities=m.probabilities))


METRICS: dict[str, Metric] = {
    m.name: _guard(m)
    for m in [
        Metric("accuracy", _accuracy, False, "label", "share of rows whose label is right", 1.0, bounded=True,
               prose="accuracy (share of test rows whose label is right)",
               aliases=("categorization-accuracy", "multi-class-classification-accuracy")),
        Metric("f1_macro", _f1("macro"), False, "label", "F1 averaged over classes", 1.0, bounded=True,
               prose="macro-averaged F1 (F1 of every class, averaged with equal weight)",
               aliases=("f1", "macro-f1")),
        Metric("f1_micro", _f1("micro"), False, "label", "F1 over all decisions", 1.0, bounded=True,
               aliases=("micro-f1",)),
        Metric("f1_weighted", _f1("weighted"), False, "label", "F1 averaged over classes, weighted by support", 1.0,
               bounded=True),
        Metric("roc_auc", _roc_auc, False, "value", "area under the ROC curve of a probability", 1.0, bounded=True,
               prose="area under the ROC curve (ROC-AUC) between the predicted probability and the true label",
               aliases=("auc", "auc-roc", "area-under-roc")),
        Metric("mean_columnwise_roc_auc", _mean_col_auc, False, "value", "ROC-AUC averaged over target columns", 1.0,
               bounded=True, prose="mean column-wise ROC-AUC (the ROC-AUC of each target column, averaged)",
               aliases=("mean-column-wise-roc-auc", "column-wise-roc-auc", "mean-columnwise-auc")),
        Metric("log_loss", _log_loss, True, "proba", "multiclass log loss over one probability column per class", 0.0,
               probabilities=True,
               prose="multiclass log loss over the predicted class probabilities (rows are renormalised and clipped)",
               aliases=("multi-class-log-loss", "logloss")),
        Metric("multilabel_log_loss", _multilabel_log_loss, True, "value", "binary log loss averaged over targets", 0.0,
               probabilities=True, prose="binary log loss averaged over the target columns"),
        Metric("rmse", _rmse, True, "value", "root mean squared error", 0.0, regression=True,
               prose="root mean squared error (RMSE)", aliases=("root-mean-squared-error",)),
        Metric("rmsle", _rmsle, True, "value", "root mean squared log error", 0.0, regression=True, non_negative=True,
               prose="root mean squared logarithmic error (RMSLE)", aliases=("root-mean-squared-log-error",)),
        Metric("mean_columnwise_rmsle", _mean_col_rmsle, True, "value", "RMSLE averaged over target columns", 0.0,
               regression=True, non_negative=True,
               prose="mean column-wise root mean squared logarithmic error (RMSLE of each target, averaged)",
               aliases=("mean-column-wise-rmsle",)),
        Metric("mcrmse", _mcrmse, True, "value", "RMSE averaged over target columns", 0.0, regression=True,
               prose="mean column-wise RMSE"),
        Metric("mae", _mae, True, "value", "mean absolute error", 0.0, regression=True, aliases=("mean-absolute-error",)),
        Metric("r2", _r2, False, "value", "coefficient of determination", 1.0, bounded=True, regression=True,
               prose="coefficient of determination (R²)"),
        Metric("qwk", _qwk, False, "label", "quadratic weighted Cohen's kappa on ordinal labels", 1.0, bounded=True,
               ordinal=True, prose="quadratic weighted kappa between the predicted and the true grades",
               aliases=("quadratic-weighted-kappa",)),
        Metric("map_at_3", _map3, False, "ranking", "mean average precision of the top-3 labels", 1.0, bounded=True,
               aliases=("map@3",)),
    ]
}


def _auc_ranks(y, s) -> float:
    """ROC-AUC by the rank-sum (Mann-Whitney) formula: what sklearn computes, without its per-call overhead."""
    from scipy.stats import rankdata  # heavy: only for rank metrics

    y = np.asarray(y).astype(float).astype(int)
    n1 = int(y.sum())
    n0 = len(y) - n1
    if n1 == 0 or n0 == 0:
        raise ValueError("the answers hold a single class: ROC-AUC is undefined")
    r = rankdata(np.asarray(s, dtype=float))
    return float((r[y == 1].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))


def _mean_col_auc_ranks(y, p) -> float:
    y, p = np.asarray(y), np.asarray(p, dtype=float)
    scores = [_auc_ranks(y[:, j], p[:, j]) for j in range(y.shape[1]) if len(np.unique(y[:, j])) > 1]
    if not scores:
        raise ValueError("every target column has a single class: ROC-AUC is undefined")
    return float(np.mean(scores))


def _f(a) -> np.ndarray:
    return np.asarray(a, dtype=float)


def _rmsle_np(y, p) -> float:
    y, p = _f(y), _f(p)
    if (p < 0).any() or (y < 0).any():
        raise ValueError("RMSLE needs non-negative predictions")
    return float(np.mean(np.sqrt(np.mean((np.log1p(y) - np.log1p(p)) ** 2, axis=0))))


def _multilabel_log_loss_np(y, p) -> float:
    y, p = _f(y), np.clip(_f(p), 1e-15, 1 - 1e-15)
    return float(np.mean(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p), axis=0)))


#: exact re-implementations for loops of hundreds of calls (the verifier's bootstrap, the exploit audit); the
#: tests check each against the library's own function
FAST_METRICS: dict[str, Callable[[np.ndarray, np.ndarray], float]] = {
    "roc_auc": lambda y, p: _auc_ranks(np.asarray(y)[:, 0], np.asarray(p)[:, 0]),
    "mean_columnwise_roc_auc": _mean_col_auc_ranks,
    "accuracy": lambda y, p: float(np.mean(_col(y) == _col(p))),
    "rmse": lambda y, p: float(np.sqrt(np.mean((_f(_col(y)) - _f(_col(p))) ** 2))),
    "rmsle": lambda y, p: _rmsle_np(_col(y), _col(p)),
    "mean_columnwise_rmsle": _rmsle_np,
    "mcrmse": lambda y, p: float(np.mean(np.sqrt(np.mean((_f(y) - _f(p)) ** 2, axis=0)))),
    "mae": lambda y, p: float(np.mean(np.abs(_f(_col(y)) - _f(_col(p))))),
    "multilabel_log_loss": _multilabel_log_loss_np,
}
#: the same checks as the library's functions (a fast function never scores what its metric refuses)
FAST_METRICS = {name: _checked(fn, METRICS[name].prediction, numeric=METRICS[name].prediction in ("value", "proba")
                               or METRICS[name].ordinal, probabilities=METRICS[name].probabilities)
                for name, fn in FAST_METRICS.items()}


def fast_fn(name: str) -> Callable[[np.ndarray, np.ndarray], float]:
    """The metric's function, or its exact fast re-implementation where one exists."""
    return FAST_METRICS.get(name, get_metric(name).fn)


def get_metric(name: str) -> Metric:
    try:
        return METRICS[name]
    except KeyError:
        raise KeyError(f"unknown metric {name!r}; known: {', '.join(sorted(METRICS))}") from None
