"""The decoders: ways an agent turns a candidate column into predictions without learning anything — its values
as they are, its values as labels, its ranks mapped onto the training targets (a monotone transform of the label
undone), its ranks binned into the classes, its values relabelled (renamed classes; the mapping estimated on one
half of the test rows and applied to the other, so a column of unique values cannot fit the answers by itself).

:func:`screen` scores every candidate × decoder cheaply against one :class:`Target` (rank correlation for numbers,
accuracy for labels, vectorized, with what each candidate needs computed once); the best few are then scored with
the metric by :mod:`.run`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..score import norm_labels
from .view import Candidate

#: a column with at most this many distinct values (or the number of classes, if larger) may be relabelled
RELABEL_MAX = 20


@dataclass
class Target:
    """What one part of the answers is, seen from the submission: a prediction column (numbers or labels) or, for
    one probability column per class, the class of each row."""

    name: str
    kind: str  #: numeric | label
    truth: np.ndarray  #: per test row: floats, or labels as text
    #: label: the class names as text (the grader's order); numeric: None
    classes: list[str] | None
    #: label: the classes' shares in train.csv (same order); numeric: the training targets, sorted (or None)
    prior: np.ndarray | None
    #: the fill for rows a candidate does not cover (label: the commonest class; numeric: the sample's value)
    fill: np.ndarray

    def __post_init__(self) -> None:
        self.binary01 = self.kind == "numeric" and bool(np.isin(self.truth, (0.0, 1.0)).all())
        #: numeric: the truth's centred ranks; label: each row's class index (-1: not a known class)
        if self.kind == "numeric":
            self.centred = _centred(_ranks(self.truth))
        else:
            index = {c: i for i, c in enumerate(self.classes or [])}
            self.codes = np.array([index.get(v, -1) for v in self.truth], dtype=int)


@dataclass
class Attempt:
    candidate: Candidate
    decoder: str
    target: str
    #: the predicted values for the target, one per test row (missing rows filled)
    values: np.ndarray
    stat: float

    @property
    def where(self) -> str:
        return f"{self.candidate.source} column {self.candidate.column!r}"


# ---------------------------------------------------------------------------------------------- per candidate
def _ranks(x: np.ndarray) -> np.ndarray:
    """Average ranks in [0, 1] of the finite values (NaN stays NaN)."""
    from scipy.stats import rankdata  # heavy: only where ranks are needed

    x = np.asarray(x, dtype=float)
    ok = np.isfinite(x)
    out = np.full(len(x), np.nan)
    out[ok] = (rankdata(x[ok]) - 0.5) / max(int(ok.sum()), 1)
    return out


def _centred(r: np.ndarray) -> np.ndarray:
    c = r - np.nanmean(r) if np.isfinite(r).any() else r
    return np.nan_to_num(c, nan=0.0)


def _cached(cand: Candidate, key: str, make: Any) -> Any:
    if key not in cand.cache:
        cand.cache[key] = make(cand)
    return cand.cache[key]


def _numeric(cand: Candidate) -> np.ndarray | None:
    """The values as floats when (nearly) all present ones are numbers and they are not all equal."""
    values = cand.values
    if pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
        num = values.to_numpy(dtype=float)
    else:
        num = pd.to_numeric(values.astype(object).where(values.notna()).astype(str).str.strip(),
                            errors="coerce").to_numpy(dtype=float)
        present = int(values.notna().sum())
        if present < 3 or np.isfinite(num).sum() < 0.9 * present:
            return None
    ok = np.isfinite(num)
    if ok.sum() < 3 or num[ok].min() == num[ok].max():
        return None
    return np.where(ok, num, np.nan)


def _codes(cand: Candidate) -> tuple[np.ndarray, int, np.ndarray]:
    """(a code per row, -1 where missing; the number of distinct values; the values as labels, None where missing)."""
    present = cand.values.notna().to_numpy()
    text = np.full(len(present), None, dtype=object)
    if present.any():
        text[present] = norm_labels(cand.values[present].astype(str).str.strip())
    codes, uniques = pd.factorize(pd.Series(text, dtype=object), use_na_sentinel=True)
    return codes.astype(int), len(uniques), text


def _distinct(cand: Candidate) -> int:
    num = _cached(cand, "num", _numeric)
    if num is not None:
        return int(len(np.unique(num[np.isfinite(num)])))
    return int(cand.values.dropna().astype(str).nunique())


def _relabel_ok(cand: Candidate, n_classes: int) -> bool:
    if _cached(cand, "distinct", _distinct) > max(RELABEL_MAX, n_classes):
        return False
    codes, distinct, _ = _cached(cand, "codes", _codes)
    return 2 <= distinct <= max(RELABEL_MAX, n_classes) and (codes >= 0).sum() >= 3 * distinct


# ---------------------------------------------------------------------------------------------- cross-fitting
def _halves(n: int) -> np.ndarray:
    return np.arange(n) % 2


def _crossfit_mean(codes: np.ndarray, distinct: int, truth: np.ndarray, fill: np.ndarray) -> np.ndarray:
    """Each row's value: the mean truth of the other half's rows with its code (its fill where there are none)."""
    half, out = _halves(len(codes)), fill.astype(float).copy()
    for fold in (0, 1):
        fit = (half != fold) & (codes >= 0)
        sums = np.bincount(codes[fit], weights=truth[fit], minlength=distinct)
        counts = np.bincount(codes[fit], minlength=distinct)
        rows = (half == fold) & (codes >= 0)
        seen = counts[codes[rows]] > 0
        idx = np.where(rows)[0][seen]
        out[idx] = sums[codes[idx]] / counts[codes[idx]]
    return out


def _crossfit_class(codes: np.ndarray, distinct: int, classes: np.ndarray, k: int) -> np.ndarray:
    """Each row's class index: the commonest class of the other half's rows with its code (-1 where none)."""
    half, out = _halves(len(codes)), np.full(len(codes), -1, dtype=int)
    for fold in (0, 1):
        fit = (half != fold) & (codes >= 0) & (classes >= 0)
        table = np.zeros((distinct, k), dtype=int)
        np.add.at(table, (codes[fit], classes[fit]), 1)
        rows = np.where((half == fold) & (codes >= 0))[0]
        seen = table[codes[rows]].sum(axis=1) > 0
        out[rows[seen]] = table[codes[rows[seen]]].argmax(axis=1)
    return out


# ---------------------------------------------------------------------------------------------- decoders
def numeric_attempts(cand: Candidate, target: Target) -> list[Attempt]:
    """Numbers for a numeric target: the values, their ranks onto the training targets, the values relabelled."""
    out = []
    fill = target.fill.astype(float)
    num = _cached(cand, "num", _numeric)
    if num is not None:
        r = _cached(cand, "rank", lambda c: _ranks(num))
        centred = _cached(cand, "centred", lambda c: _centred(r))
        rho = _corr(centred, target.centred)
        stat = abs(rho) * float(np.mean(~np.isnan(num)))
        out.append(Attempt(cand, "its values", target.name, np.where(np.isnan(num), fill, num), stat))
        q = r if rho >= 0 else 1 - r
        if target.binary01 or target.prior is None or not len(target.prior):
            mapped, how = q, "its ranks as probabilities"
        else:
            mapped = np.quantile(target.prior, np.clip(np.nan_to_num(q, nan=0.5), 0, 1))
            how = "its ranks mapped onto the training targets"
        out.append(Attempt(cand, how + ("" if rho >= 0 else ", reversed"), target.name,
                           np.where(np.isnan(q), fill, mapped), stat))
    if _relabel_ok(cand, 0):
        codes, distinct, _ = cand.cache["codes"]
        pred = _crossfit_mean(codes, distinct, target.truth.astype(float), fill)
        stat = abs(_corr(_centred(_ranks(pred)), target.centred))
        out.append(Attempt(cand, "its values relabelled", target.name, pred, stat))
    return out


def _corr(a: np.ndarray, b: np.ndarray) -> float:
    den = float(np.sqrt((a * a).sum() * (b * b).sum()))
    return float((a * b).sum() / den) if den > 0 else 0.0


def label_attempts(cand: Candidate, target: Target) -> list[Attempt]:
    """Labels for a label target: the values as labels, relabelled, or their ranks binned into the classes."""
    classes = np.asarray(target.classes or [], dtype=object)
    fill = target.fill
    out: list[Attempt] = []
    if not len(classes) or cand.values.notna().sum() < 3:
        return out
    num = _cached(cand, "num", _numeric)
    if num is None or _cached(cand, "distinct", _distinct) <= max(RELABEL_MAX, len(classes)):
        codes, distinct, text = _cached(cand, "codes", _codes)
        known = np.isin(text, classes)
        if known[codes >= 0].mean() >= 0.5:
            pred = np.where(known, text, fill)
            out.append(Attempt(cand, "its values as labels", target.name, pred, float(np.mean(pred == target.truth))))
        if _relabel_ok(cand, len(classes)):
            idx = _crossfit_class(codes, distinct, target.codes, len(classes))
            pred = np.where(idx >= 0, classes[np.maximum(idx, 0)], fill)
            out.append(Attempt(cand, "its values relabelled", target.name, pred,
                               float(np.mean(pred == target.truth))))
    if num is not None and target.prior is not None and len(classes) >= 2:
        order = _cached(cand, "order", lambda c: np.argsort(np.where(np.isnan(num), np.inf, num), kind="stable"))
        for reverse in (False, True):
            pred = _binned(num, order, classes, target.prior, reverse, fill)
            out.append(Attempt(cand, "its ranks binned into the classes" + (", reversed" if reverse else ""),
                               target.name, pred, float(np.mean(pred == target.truth))))
    return out


def _binned(num: np.ndarray, order: np.ndarray, classes: np.ndarray, prior: np.ndarray, reverse: bool,
            fill: np.ndarray) -> np.ndarray:
    """Rows sorted by the values, cut into the classes (in the grader's order) by their training shares."""
    n_ok = int(np.isfinite(num).sum())
    rows = order[:n_ok][::-1] if reverse else order[:n_ok]
    cuts = np.round(np.cumsum(prior) / prior.sum() * n_ok).astype(int)
    labels = np.repeat(classes, np.diff(np.concatenate([[0], cuts])))
    pred = fill.copy()
    pred[rows] = labels[:n_ok] if len(labels) >= n_ok else np.concatenate(
        [labels, np.repeat(classes[-1:], n_ok - len(labels))])
    return pred


class Pool:
    """The candidates, with what screening needs computed once for every target: the centred ranks of the
    numeric ones as one matrix (a target's rank correlation with all of them is one product)."""

    def __init__(self, cands: list[Candidate]):
        self.cands = cands
        self.numeric = [i for i, c in enumerate(cands) if _cached(c, "num", _numeric) is not None]
        cols = [_cached(cands[i], "centred", lambda c: _centred(_cached(c, "rank", lambda d: _ranks(d.cache["num"]))))
                for i in self.numeric]
        self.C = np.column_stack(cols) if cols else np.zeros((0, 0))
        self.norms = np.sqrt((self.C * self.C).sum(axis=0)) if cols else np.zeros(0)
        self.coverage = np.array([float(np.mean(np.isfinite(cands[i].cache["num"]))) for i in self.numeric])

    def _numeric_stats(self, target: Target) -> dict[int, float]:
        stats: dict[int, float] = {}
        if self.numeric:
            t = target.centred
            den = self.norms * float(np.sqrt((t * t).sum()))
            rho = np.divide(self.C.T @ t, den, out=np.zeros(len(self.numeric)), where=den > 0)
            stats = {i: float(abs(r) * cov) for i, r, cov in zip(self.numeric, rho, self.coverage)}
        for i, cand in enumerate(self.cands):
            if _relabel_ok(cand, 0):
                relabelled = [a.stat for a in numeric_attempts(cand, target) if a.decoder == "its values relabelled"]
                stats[i] = max([stats.get(i, 0.0), *relabelled])
        return stats

    def screen(self, target: Target, keep: int = 4, keep_legit: int = 2) -> list[Attempt]:
        """Every attempt on ``target`` of the most promising candidates by the cheap statistic: the ``keep`` best
        columns an agent has no business reading as answers, and the ``keep_legit`` best features."""
        if target.kind == "numeric":
            stats = self._numeric_stats(target)
        else:
            stats = {i: max(a.stat for a in atts) for i, c in enumerate(self.cands)
                     if (atts := label_attempts(c, target))}
        order = sorted(stats, key=lambda i: -stats[i])
        extra = [i for i in order if not self.cands[i].legit][:keep]
        legit = [i for i in order if self.cands[i].legit][:keep_legit]
        make = numeric_attempts if target.kind == "numeric" else label_attempts
        return [a for i in extra + legit for a in make(self.cands[i], target)]
