"""Bootstrap resamples of a metric, vectorised: the verifier's learnability lower bound.

B resamples of the n test rows are drawn as one ``(B, n)`` index matrix and turned into row counts ``W`` (how often
each row is drawn in each resample); every metric of :mod:`.metrics` is then scored on all B resamples at once as
weighted sums in numpy -- means of per-row terms (``W @ r / n``), confusion matrices (label metrics, the quadratic
weighted kappa), and weighted Mann-Whitney sums (ROC-AUC, ties counted half). Each resample's score equals what
:func:`~.metrics.fast_fn` gives on ``Y[idx], P[idx]`` (``tests/test_bootstrap.py`` checks every metric); a
resample the metric is undefined on (one class for ROC-AUC, constant answers for R²) is NaN, and left out.

Rows are processed in blocks of resamples so that a block holds at most :data:`BLOCK` counts (a full-size
competition's 100,000 test rows and 1,000 resamples do not need 800 MB at once).
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import pandas as pd

from .metrics import _col, fast_fn, get_metric

#: resamples of the test rows behind the learnability lower bound (a 2.5 % quantile of 1,000 rests on 25 of them)
N_BOOT = 1000
#: counts held at once: resamples are scored in blocks of ``BLOCK // n``
BLOCK = 2_000_000

Batch = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]


def counts(idx: np.ndarray, n: int) -> np.ndarray:
    """Row counts of each resample: ``(B, n)`` indices → ``(B, n)`` how often row j is drawn in resample b."""
    B = idx.shape[0]
    return np.bincount((np.arange(B)[:, None] * n + idx).ravel(), minlength=B * n).reshape(B, n).astype(float)


def _f(a: np.ndarray) -> np.ndarray:
    return np.asarray(a, dtype=float)


def _mean(W: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Each resample's mean of per-row terms ``r`` (n,) or (n, k) → (B,) or (B, k)."""
    return (W @ r) / W.shape[1]


def _rmsle_terms(y: np.ndarray, p: np.ndarray) -> np.ndarray:
    y, p = _f(y), _f(p)
    if (p < 0).any() or (y < 0).any():
        raise ValueError("RMSLE needs non-negative predictions")
    return (np.log1p(y) - np.log1p(p)) ** 2


def _log_loss_terms(y: np.ndarray, p: np.ndarray) -> np.ndarray:
    y, p = _f(y), np.clip(_f(p), 1e-15, 1 - 1e-15)
    p = p / p.sum(axis=1, keepdims=True)
    return -np.sum(y * np.log(p), axis=1)


def _multilabel_terms(y: np.ndarray, p: np.ndarray) -> np.ndarray:
    y, p = _f(y), np.clip(_f(p), 1e-15, 1 - 1e-15)
    return -(y * np.log(p) + (1 - y) * np.log(1 - p))


def _map3_terms(y: np.ndarray, p: np.ndarray) -> np.ndarray:
    out = np.zeros(len(y))
    for i, (truth, preds) in enumerate(zip(_col(y), _col(p))):
        for rank, label in enumerate(str(preds).split()[:3], start=1):
            if label == str(truth):
                out[i] = 1.0 / rank
                break
    return out


def _r2(y: np.ndarray, p: np.ndarray, W: np.ndarray) -> np.ndarray:
    y, p = _f(_col(y)), _f(_col(p))
    c = y - y.mean()  # centred first: the weighted sums of squares lose nothing to a large offset
    n = W.shape[1]
    ss_res = W @ (y - p) ** 2
    ss_tot = W @ c ** 2 - (W @ c) ** 2 / n
    with np.errstate(divide="ignore", invalid="ignore"):
        out = 1 - ss_res / ss_tot
    # a resample of one repeated answer has no variance to explain (its ss_tot is rounding noise)
    first = c[np.argmax(W > 0, axis=1)]
    spread = ((W > 0) * (c[None, :] != first[:, None])).any(axis=1)
    return np.where(spread, out, np.nan)


def _confusion(codes_y: np.ndarray, codes_p: np.ndarray, k: int, W: np.ndarray) -> np.ndarray:
    """(B, k, k) weighted confusion matrices (rows: answers, columns: predictions)."""
    cell = np.zeros((len(codes_y), k * k))
    cell[np.arange(len(codes_y)), codes_y * k + codes_p] = 1.0
    return (W @ cell).reshape(W.shape[0], k, k)


def _label_codes(y: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    codes, uniques = pd.factorize(np.concatenate([_col(y), _col(p)]))
    n = len(_col(y))
    return codes[:n], codes[n:], len(uniques)


def _f1(average: str) -> Batch:
    def fn(y: np.ndarray, p: np.ndarray, W: np.ndarray) -> np.ndarray:
        cy, cp, k = _label_codes(y, p)
        C = _confusion(cy, cp, k, W)
        tp = np.einsum("bii->bi", C)
        support, predicted = C.sum(axis=2), C.sum(axis=1)
        if average == "micro":
            return tp.sum(axis=1) / W.sum(axis=1)
        present = (support + predicted) > 0  # the labels of this resample (sklearn's unique_labels)
        with np.errstate(divide="ignore", invalid="ignore"):
            f1 = np.where(present, 2 * tp / (support + predicted), 0.0)
        if average == "macro":
            return f1.sum(axis=1) / present.sum(axis=1)
        return (f1 * support).sum(axis=1) / support.sum(axis=1)
    return fn


def _accuracy(y: np.ndarray, p: np.ndarray, W: np.ndarray) -> np.ndarray:
    return _mean(W, (_col(y) == _col(p)).astype(float))


def _qwk(y: np.ndarray, p: np.ndarray, W: np.ndarray) -> np.ndarray:
    yi, pi = _f(_col(y)).astype(int), np.rint(_f(_col(p))).astype(int)
    labels, inverse = np.unique(np.concatenate([yi, pi]), return_inverse=True)
    n, k = len(yi), len(labels)
    C = _confusion(inverse[:n], inverse[n:], k, W)
    rows, cols = C.sum(axis=2), C.sum(axis=1)
    present = (rows + cols) > 0
    pos = np.cumsum(present, axis=1) - 1  # each label's place among this resample's labels (sklearn's weights)
    weights = (pos[:, :, None] - pos[:, None, :]) ** 2.0
    expected = rows[:, :, None] * cols[:, None, :] / W.sum(axis=1)[:, None, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        out = 1 - (weights * C).sum(axis=(1, 2)) / (weights * expected).sum(axis=(1, 2))
    return np.where(present.sum(axis=1) >= 2, out, np.nan)


def _auc(y: np.ndarray, s: np.ndarray, W: np.ndarray) -> np.ndarray:
    """ROC-AUC of each resample: the weighted share of (positive, negative) pairs ranked right, ties half."""
    y, s = _f(y).astype(int), _f(s)
    order = np.argsort(s, kind="mergesort")
    s_sorted = s[order]
    starts = np.flatnonzero(np.r_[True, s_sorted[1:] != s_sorted[:-1]])
    Ws = W[:, order]
    pos = np.add.reduceat(Ws * (y[order] == 1), starts, axis=1)
    neg = np.add.reduceat(Ws * (y[order] != 1), starts, axis=1)
    below = np.cumsum(neg, axis=1) - neg
    n_pos, n_neg = pos.sum(axis=1), neg.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = (pos * (below + 0.5 * neg)).sum(axis=1) / (n_pos * n_neg)
    return np.where((n_pos > 0) & (n_neg > 0), out, np.nan)


def _mean_col_auc(y: np.ndarray, p: np.ndarray, W: np.ndarray) -> np.ndarray:
    y, p = np.asarray(y), _f(p)
    per = np.column_stack([_auc(y[:, j], p[:, j], W) for j in range(y.shape[1])])
    out = np.full(W.shape[0], np.nan)
    ok = np.isfinite(per).any(axis=1)
    out[ok] = np.nanmean(per[ok], axis=1)
    return out


def _cols_sqrt_mean(terms: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Batch:
    """The mean over target columns of the root of each column's mean term (RMSE, RMSLE and their columnwise
    means)."""
    return lambda y, p, W: np.sqrt(_mean(W, terms(np.asarray(y).reshape(len(y), -1),
                                                  np.asarray(p).reshape(len(p), -1)))).mean(axis=1)


#: every metric of the library, scored on a block of resamples given by their row counts
BATCH: dict[str, Batch] = {
    "accuracy": _accuracy,
    "f1_macro": _f1("macro"),
    "f1_micro": _f1("micro"),
    "f1_weighted": _f1("weighted"),
    "roc_auc": lambda y, p, W: _auc(np.asarray(y)[:, 0], np.asarray(p)[:, 0], W),
    "mean_columnwise_roc_auc": _mean_col_auc,
    "log_loss": lambda y, p, W: _mean(W, _log_loss_terms(y, p)),
    "multilabel_log_loss": lambda y, p, W: _mean(W, _multilabel_terms(y, p)).mean(axis=1),
    "rmse": _cols_sqrt_mean(lambda y, p: (_f(y[:, :1]) - _f(p[:, :1])) ** 2),
    "rmsle": _cols_sqrt_mean(lambda y, p: _rmsle_terms(y[:, :1], p[:, :1])),
    "mean_columnwise_rmsle": _cols_sqrt_mean(_rmsle_terms),
    "mcrmse": _cols_sqrt_mean(lambda y, p: (_f(y) - _f(p)) ** 2),
    "mae": lambda y, p, W: _mean(W, np.abs(_f(_col(y)) - _f(_col(p)))),
    "r2": _r2,
    "qwk": _qwk,
    "map_at_3": lambda y, p, W: _mean(W, _map3_terms(y, p)),
}


def resample_scores(metric: str, Y: np.ndarray, P: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """The metric on each resample ``Y[idx[b]], P[idx[b]]`` (``idx``: (B, n) row indices); NaN where it is
    undefined. Raises ``ValueError`` where the metric refuses the whole test set."""
    fast_fn(metric)(Y, P)  # the metric's own checks, once, on all rows (NaN, inf, one column of log loss...)
    batch = BATCH[get_metric(metric).name]
    n = len(Y)
    step = max(1, BLOCK // max(n, 1))
    out = [batch(Y, P, counts(idx[i:i + step], n)) for i in range(0, len(idx), step)]
    scores = np.concatenate(out) if out else np.zeros(0)
    return np.where(np.isfinite(scores), scores, np.nan)


def paired_gap_interval(metric: str, lower_is_better: bool, Y: np.ndarray, best: np.ndarray, trivial: np.ndarray,
                        rng: np.random.Generator, n_boot: int = N_BOOT,
                        q: float = 0.025) -> tuple[float, float, int]:
    """The (q, 1 − q) quantiles of (best − constant) over ``n_boot`` paired resamples of the test rows (the same
    rows for both), in the metric's better direction, and how many resamples the metric was defined on;
    (0, 0, 0) where it is defined on none."""
    idx = rng.integers(0, len(Y), (n_boot, len(Y)))
    try:
        gaps = resample_scores(metric, Y, best, idx) - resample_scores(metric, Y, trivial, idx)
    except ValueError:
        return 0.0, 0.0, 0
    gaps = (-gaps if lower_is_better else gaps)[np.isfinite(gaps)]
    if not len(gaps):
        return 0.0, 0.0, 0
    return float(np.quantile(gaps, q)), float(np.quantile(gaps, 1 - q)), int(len(gaps))
