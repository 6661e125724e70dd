"""The grid the audit scores attempts on: the hidden answers and a constant base submission as the metric's
matrices (:class:`Grid`), and the targets an attempt tries to recover (:func:`targets`)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...envs.layout import GradeSpec
from ...errors import InvalidSubmission
from ..metrics import fast_fn, get_metric
from ..score import answers_matrix, norm_labels, prediction_matrix, score_submission
from .decode import Target

#: the name of the target "the class of each row" (answers with one probability column per class)
LABEL_VIEW = "the class of each row"
#: how sure a one-hot submission built from labels is of each label
CONFIDENCE = 0.9
#: probabilities read off a file are kept this far from 0 and 1 (a log loss is not ruined by one wrong row)
CLIP = 0.025


class Grid:
    """The answers and a base submission as the metric's matrices: an attempt replaces the columns it predicts
    and is scored with the metric's fast function; a finding is confirmed by the grader itself."""

    def __init__(self, spec: GradeSpec, answers: pd.DataFrame, base: pd.DataFrame):
        self.spec, self.answers = spec, answers
        self.Y = answers_matrix(spec, answers)
        self.P0 = prediction_matrix(spec, base, check_labels=False)
        self.fn = fast_fn(spec.metric)
        self.metric = get_metric(spec.metric)
        self.kind = self.metric.prediction

    def score(self, P: np.ndarray) -> float | None:
        try:
            value = float(self.fn(self.Y, P))
        except (ValueError, TypeError, ZeroDivisionError):
            return None
        return value if np.isfinite(value) else None

    def apply(self, target: Target, values: np.ndarray, P: np.ndarray | None = None) -> np.ndarray:
        P = (self.P0 if P is None else P).copy()
        cols = self.spec.prediction_columns
        if target.name == LABEL_VIEW:
            k = len(cols)
            onehot = (np.asarray(values, dtype=object)[:, None] == np.asarray(target.classes, dtype=object)[None, :])
            return np.where(onehot, CONFIDENCE, (1 - CONFIDENCE) / max(k - 1, 1)).astype(float)
        j = cols.index(target.name)
        if target.kind == "label":
            if self.metric.ordinal:
                P = P.astype(float)
                P[:, j] = pd.to_numeric(pd.Series(values), errors="coerce").fillna(float(P[0, j])).to_numpy()
            elif self.kind == "ranking":
                rest = [c for c in (target.classes or [])]
                P[:, j] = [" ".join([v] + [c for c in rest if c != v][:2]) for v in values]
            else:
                P[:, j] = values
            return P
        v = np.asarray(values, dtype=float)
        if self.metric.probabilities or self.kind == "proba":
            v = np.clip(v, CLIP, 1 - CLIP)
        elif self.metric.non_negative:
            v = np.maximum(v, 0.0)
        P = P.astype(float)
        P[:, j] = v
        return P

    def frame(self, P: np.ndarray) -> pd.DataFrame:
        """The submission a matrix stands for (what the grader reads)."""
        out = pd.DataFrame({self.spec.id_column: self.answers[self.spec.id_column].to_numpy()})
        for j, c in enumerate(self.spec.prediction_columns):
            out[c] = P[:, j]
        return out

    def confirm(self, P: np.ndarray) -> float | None:
        try:
            return score_submission(self.spec, self.answers, self.frame(P))
        except InvalidSubmission:
            return None


def constant_base(spec: GradeSpec, answers: pd.DataFrame, train: pd.DataFrame) -> pd.DataFrame:
    """The constant submission every attempt starts from (and is compared with): the training rows' mean or
    commonest label, uniform probabilities — never the sample submission, which is itself audited."""
    out = pd.DataFrame({spec.id_column: answers[spec.id_column].to_numpy()})
    kind = get_metric(spec.metric).prediction
    for c in spec.prediction_columns:
        if kind == "proba":
            out[c] = 1.0 / len(spec.prediction_columns)
        elif c in train.columns and kind in ("label", "ranking"):
            out[c] = train[c].mode().iloc[0]
        elif c in train.columns:
            out[c] = float(pd.to_numeric(train[c], errors="coerce").mean())
        else:
            out[c] = answers[c].mode().iloc[0]
    return out


def _label_target(spec: GradeSpec, name: str, truth: np.ndarray, train_labels: pd.Series | None,
                  fill: np.ndarray, classes: list[str] | None) -> Target:
    if classes is None:
        pool = list(truth) + (list(norm_labels(train_labels.dropna())) if train_labels is not None else [])
        classes = sorted(set(pool))
    prior = np.ones(len(classes))
    if train_labels is not None and len(train_labels.dropna()):
        counts = pd.Series(norm_labels(train_labels.dropna())).value_counts()
        prior = np.array([float(counts.get(c, 0)) for c in classes]) + 1e-9
    return Target(name, "label", truth, classes, prior, fill)


def targets(spec: GradeSpec, answers: pd.DataFrame, train: pd.DataFrame, grid: Grid) -> list[Target]:
    """What the audit tries to recover: each prediction column, and the class of each row for one probability
    column per class."""
    kind = get_metric(spec.metric).prediction
    classes = [str(c) for c in norm_labels(pd.Series(list(spec.classes)))] if spec.classes else None
    out = []
    for j, c in enumerate(spec.prediction_columns):
        tr = train[c] if c in train.columns else None
        if kind in ("label", "ranking"):
            truth = norm_labels(answers[c])
            fill = np.asarray(norm_labels(pd.Series(grid.P0[:, j])), dtype=object) if kind == "label" else \
                np.full(len(truth), truth[0], dtype=object)
            out.append(_label_target(spec, c, truth, tr, fill, classes))
        else:
            truth = pd.to_numeric(answers[c], errors="coerce").to_numpy(dtype=float)
            prior = np.sort(pd.to_numeric(tr, errors="coerce").dropna().to_numpy(dtype=float)) if tr is not None \
                else None
            out.append(Target(c, "numeric", truth, None, prior, grid.P0[:, j].astype(float)))
    if kind == "proba" and len(spec.target_columns) == 1:
        cols = spec.prediction_columns
        truth = np.asarray(cols, dtype=object)[answers[cols].to_numpy(dtype=float).argmax(axis=1)]
        tr = train[spec.target_columns[0]] if spec.target_columns[0] in train.columns else None
        names = [str(c) for c in norm_labels(pd.Series(cols))]
        truth = np.asarray(norm_labels(pd.Series(truth)), dtype=object)
        major = pd.Series(norm_labels(tr.dropna())).mode().iloc[0] if tr is not None and len(tr.dropna()) else names[0]
        out.append(_label_target(spec, LABEL_VIEW, truth, tr, np.full(len(truth), major, dtype=object), names))
    return out


def _text_labels(spec: GradeSpec, tgts: list[Target]) -> set[str] | None:
    """The tokens a run of labels in free text would be made of (None: numbers)."""
    labels = {c for t in tgts if t.kind == "label" for c in (t.classes or [])}
    return labels or None
