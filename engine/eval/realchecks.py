"""What a task of the real held-out suite must pass before it is stored (issue #40: every real task discriminates).

While a task is written (:mod:`.realtask`):

- **No column determines a categorical target.** A feature column whose values each come with one class only on
  the training rows (conditional entropy H(target | column) = 0) turns the task into a lookup: olive's ``area``
  (9 levels) nests inside the target ``region``, so every model that reads it gets gold. Such a column is left out
  and named in the description (:func:`determining_columns`). It counts only when it is a *lookup key*: at least
  :data:`LOOKUP_SHARE` of the training rows share their value with another training row. A column unique per row
  (an identifier, a continuous measurement) has H = 0 trivially, yet a value seen once says nothing about a test
  row; such columns are not determining (identifiers are left out anyway, as leaks). Columns are judged one at a
  time, not in pairs.
- **No test row has a twin in train.** A test row whose features equal a training row's can be answered by reading
  that row. The split is repaired before it is final (:func:`separate_duplicates`): every group of identical
  feature rows that straddles the split goes to train, and test is refilled with whole groups held in train whose
  classes fit what it lost, so each class keeps its intended number of test rows.

Once its board is built (:mod:`.realsuite`), the verifier's refusals (:mod:`engine.synthesis.verifier`) apply to a
real task too (:func:`board_problems`): gold, silver and bronze are three different scores, the board has at least
:data:`~engine.synthesis.population.MIN_ENTRIES` distinct entries, and the best constant submission
(:func:`best_constant`: the audit's constant base -- the training mean, the commonest label, uniform probabilities
-- and the verifier's own constants -- the median, the training prior -- plus the log-scale mean where the metric
is on a log scale) reaches no medal.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..envs.layout import EnvSpec, GradeSpec
from ..errors import InvalidSubmission
from ..grading.audit.grid import constant_base
from ..grading.metrics import get_metric
from ..grading.score import read_frame, score_many
from ..grading.thresholds import Thresholds
from ..synthesis.population import MIN_ENTRIES

#: a column is a lookup key when at least this share of the training rows share their value with another row
LOOKUP_SHARE = 0.5


# ---------------------------------------------------------------------------------------------- columns
def conditional_entropy(x: pd.Series, y: pd.Series) -> float:
    """H(y | x) in bits over the rows given (a missing ``x`` is a level of its own)."""
    joint = pd.crosstab(_levels(x), y.astype(str).to_numpy()).to_numpy(dtype=float)
    p = joint / joint.sum()
    px = p.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, p * np.log2(p / px), 0.0)
    return float(max(0.0, -terms.sum()))


def _levels(x: pd.Series) -> np.ndarray:
    return x.astype(str).to_numpy()


def lookup_share(x: pd.Series) -> float:
    """The share of rows whose value of ``x`` occurs in another row too (0 for a column unique per row)."""
    levels = pd.Series(_levels(x))
    return float((levels.map(levels.value_counts()) >= 2).mean()) if len(levels) else 0.0


def determining_columns(features: pd.DataFrame, y: pd.Series) -> dict[str, str]:
    """Column → why it is left out, for every column of ``features`` (the training rows) that determines the
    class ``y`` of those rows and is a lookup key (see the module docstring)."""
    out: dict[str, str] = {}
    y = pd.Series(np.asarray(y), index=features.index)
    for col in features.columns:
        x = features[col]
        if lookup_share(x) < LOOKUP_SHARE or conditional_entropy(x, y) > 1e-12:
            continue
        levels = int(pd.Series(_levels(x)).nunique())
        out[str(col)] = (f"it determines the target: on the training rows each of its {levels} values comes with "
                         "one class only, H(target | column) = 0, so reading it answers every row")
    return out


# ---------------------------------------------------------------------------------------------- duplicates
def feature_keys(features: pd.DataFrame) -> np.ndarray:
    """One hash per row of ``features`` (equal rows, missing values included, get equal hashes)."""
    return pd.util.hash_pandas_object(features.reset_index(drop=True), index=False).to_numpy()


def separate_duplicates(features: pd.DataFrame, labels: pd.Series | None, train_pos: np.ndarray,
                        test_pos: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, int]:
    """(train positions, test positions, how many test rows had a twin in train) with no test row whose features
    equal a training row's: groups of identical rows that straddle the split go to train, and whole groups held in
    train refill test, class by class (``labels``: the classes; None for regression, one class), up to the test
    count each class had. Unchanged (the same arrays) when no test row had a twin."""
    keys = feature_keys(features)
    test = np.zeros(len(keys), dtype=bool)
    test[np.asarray(test_pos, dtype=int)] = True
    crossing = test & np.isin(keys, keys[~test])
    twins = int(crossing.sum())
    if not twins:
        return train_pos, test_pos, 0
    cls = np.asarray(labels.astype(str)) if labels is not None else np.full(len(keys), "")
    wanted = Counter(cls[test])
    test[np.isin(keys, keys[crossing])] = False
    deficit = Counter(wanted)
    deficit.subtract(Counter(cls[test]))
    groups: dict[Any, list[int]] = {}
    for pos in np.flatnonzero(~test):
        groups.setdefault(keys[pos], []).append(int(pos))
    for k in rng.permutation(np.array(list(groups), dtype=object)):
        if not any(v > 0 for v in deficit.values()):
            break
        need = Counter(cls[groups[k]])
        if all(deficit[c] >= n for c, n in need.items()):
            test[groups[k]] = True
            deficit.subtract(need)
    return rng.permutation(np.flatnonzero(~test)), rng.permutation(np.flatnonzero(test)), twins


def twins_across(train: pd.DataFrame, test: pd.DataFrame) -> int:
    """How many rows of ``test`` have a feature twin in ``train`` (the same columns, compared whole)."""
    cols = [c for c in test.columns if c in train.columns]
    return int(np.isin(feature_keys(test[cols]), feature_keys(train[cols])).sum())


# ---------------------------------------------------------------------------------------------- the board
def constant_submissions(spec: GradeSpec, answers: pd.DataFrame, train: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Every constant submission worth trying, by name: the audit's constant base and the verifier's constants."""
    metric = get_metric(spec.metric)
    base = constant_base(spec, answers, train)
    if metric.prediction == "proba":
        labels = train[spec.target_columns[0]].astype(str) if spec.target_columns[0] in train.columns else None
        out = {"uniform probabilities": base}
        if labels is not None:
            prior = labels.value_counts(normalize=True)
            cols = spec.prediction_columns
            p = np.array([float(prior.get(str(c), 0.0)) for c in cols]) + 1e-6
            out["the training prior"] = base.assign(**dict(zip(cols, p / p.sum())))
        return out
    if metric.prediction == "label":
        return {"the commonest label": base}
    if not metric.regression:
        return {"the training rate": base}
    out = {"the training mean": base}
    cols = [c for c in spec.prediction_columns if c in train.columns]
    values = {c: pd.to_numeric(train[c], errors="coerce").dropna() for c in cols}
    out["the training median"] = base.assign(**{c: float(v.median()) for c, v in values.items()})
    if metric.non_negative:
        out["the training mean on a log scale"] = base.assign(
            **{c: float(np.expm1(np.log1p(v.clip(lower=0)).mean())) for c, v in values.items()})
    return out


@dataclass(frozen=True)
class Constant:
    """The best constant submission of an environment: its name and score."""

    strategy: str
    score: float


def best_constant(env: EnvSpec) -> Constant | None:
    """The best-scoring of :func:`constant_submissions` on ``env``'s hidden answers (None: none is valid)."""
    spec = env.grade
    answers = read_frame(env.answers, spec.id_column)
    train = read_frame(env.public / "train.csv", spec.id_column)
    scores = score_many(spec, answers, constant_submissions(spec, answers, train))
    valid = [(n, float(s)) for n, s in scores.items() if not isinstance(s, InvalidSubmission)]
    if not valid:
        return None
    name, score = min(valid, key=lambda kv: kv[1]) if spec.lower_is_better else max(valid, key=lambda kv: kv[1])
    return Constant(name, score)


@dataclass
class BoardCheck:
    """What the suite checks on a built task: its board and its public files."""

    entries: int
    tiers_distinct: bool
    constant: Constant | None
    constant_medal: str | None
    determining_left: list[str] = field(default_factory=list)
    twins_left: int = 0

    def problems(self, th: Thresholds) -> list[str]:
        """Why the task must not be stored (empty: it may)."""
        out = []
        if self.entries < MIN_ENTRIES:
            out.append(f"its board has {self.entries} distinct entries (needs {MIN_ENTRIES})")
        if not self.tiers_distinct:
            out.append(f"gold {th.gold:.4g}, silver {th.silver:.4g} and bronze {th.bronze:.4g} are not three "
                       "different scores")
        if self.constant is None:
            out.append("no constant submission could be scored")
        elif self.constant_medal:
            out.append(f"a constant submission ({self.constant.strategy}: {self.constant.score:.4g}) reaches "
                       f"{self.constant_medal} (bronze {th.bronze:.4g})")
        if self.determining_left:
            out.append("feature columns determine the target: " + ", ".join(self.determining_left))
        if self.twins_left:
            out.append(f"{self.twins_left} test rows have a feature twin in train")
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"entries": self.entries, "tiers_distinct": self.tiers_distinct,
                "constant": asdict(self.constant) if self.constant else None, "constant_medal": self.constant_medal,
                "determining_left": self.determining_left, "twins_left": self.twins_left}


def board_check(env: EnvSpec) -> tuple[BoardCheck, Thresholds]:
    """Check a task with its board (``env.leaderboard`` and ``env.thresholds`` set) and its public files."""
    th = Thresholds.from_dict(env.thresholds or {}, env.grade.lower_is_better)
    const = best_constant(env)
    spec = env.grade
    train = read_frame(env.public / "train.csv", spec.id_column)
    test = read_frame(env.public / "test.csv", spec.id_column)
    feats = [c for c in test.columns if c != spec.id_column and c in train.columns]
    left: list[str] = []
    if not get_metric(spec.metric).regression:
        left = sorted(determining_columns(train[feats], train[spec.target_columns[0]]))
    check = BoardCheck(entries=len(env.leaderboard), tiers_distinct=th.distinct(), constant=const,
                       constant_medal=th.medal(const.score) if const else None, determining_left=left,
                       twins_left=twins_across(train[feats], test[feats]))
    return check, th
