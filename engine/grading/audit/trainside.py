"""The training side of the audit: the same attempts on the training rows, for the features an agent may use (a
feature is a finding only when it gives away more on the test rows than it does there)."""

from __future__ import annotations

import pandas as pd

from ...envs.layout import GradeSpec
from ...errors import InvalidSubmission
from ..metrics import get_metric
from ..score import norm_labels
from .decode import Attempt, label_attempts, numeric_attempts
from .grid import Grid, targets
from .report import Bar
from .view import Candidate

class TrainSide:
    """The same attempts on the training rows (for the features an agent may use): what a column gives away there
    is what a learner can learn; more on the test rows means the test set was written differently."""

    def __init__(self, spec: GradeSpec, train: pd.DataFrame, base: pd.DataFrame):
        self.ok = False
        kind = get_metric(spec.metric).prediction
        cols = spec.prediction_columns
        ids = [f"r{i}" for i in range(len(train))]
        if kind == "proba" and len(spec.target_columns) == 1 and spec.target_columns[0] in train.columns:
            labels = norm_labels(train[spec.target_columns[0]].fillna(""))
            answers = pd.DataFrame({c: (labels == str(n)).astype(float) for c, n in
                                    zip(cols, norm_labels(pd.Series(cols)))})
        elif all(c in train.columns for c in cols) and not train[cols].isna().any().any():
            answers = train[cols].reset_index(drop=True).copy()
        else:
            return
        spec_tr = GradeSpec(**{**spec.to_dict(), "id_column": "_row"})
        answers.insert(0, "_row", ids)
        first = base.iloc[[0] * len(train)].reset_index(drop=True)
        first = first.drop(columns=[spec.id_column]).assign(_row=ids)[["_row", *cols]]
        try:
            self.grid = Grid(spec_tr, answers, first)
        except (InvalidSubmission, ValueError, KeyError):
            return
        self.ids = pd.Index(ids)
        self.targets = {t.name: t for t in targets(spec_tr, answers, train, self.grid)}
        self.trivial = self.grid.score(self.grid.P0)
        self.ok = self.trivial is not None

    def score(self, att: Attempt) -> float | None:
        """The attempt's decoder on the training rows, scored against the training labels."""
        cand, target = att.candidate, self.targets.get(att.target)
        if cand.train_values is None or target is None:
            return None
        mirror = Candidate(cand.source, cand.column, cand.train_values.set_axis(self.ids), legit=True)
        family = att.decoder.removesuffix(", reversed")
        make = numeric_attempts if target.kind == "numeric" else label_attempts
        same = [a for a in make(mirror, target) if a.decoder.removesuffix(", reversed") == family]
        scores = [s for a in same if (s := self.grid.score(self.grid.apply(target, a.values))) is not None]
        if not scores:
            return None
        return min(scores) if self.grid.spec.lower_is_better else max(scores)


def _legit_leak(att: Attempt, score: float, bar: Bar, train_side: TrainSide | None) -> bool:
    """A feature the agent may use is a finding only when it gives away on the test rows what it does not on the
    training rows (less than half its lead over the constant there): the test set was written differently. (A
    feature that is as good on both is an easy task, which the verifier's saturation check judges.)"""
    if train_side is None or not train_side.ok or train_side.trivial is None:
        return False
    s_tr = train_side.score(att)
    if s_tr is None:
        return False
    lead_tr = (train_side.trivial - s_tr) if bar.lower_is_better else (s_tr - train_side.trivial)
    return lead_tr < 0.5 * bar.gap(score)
