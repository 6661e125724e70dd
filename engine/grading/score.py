"""Score a submission frame against an answers frame: validate, align on the id column, apply the metric.

This is the one scoring routine of the project: synthesis uses it to verify environments (reference ladder,
grader fuzzing) and ``engine.grading.grade`` builds grade reports on top of it. An environment graded by its own
evaluator (``spec.external``) is scored by that program under the sandbox (:mod:`.evaluator`); :func:`score_many`
scores many submissions in one run of it. Every reason a submission cannot
be scored raises :class:`engine.errors.InvalidSubmission` with a message precise enough for an agent to fix it.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd

from ..envs.layout import GradeSpec
from ..errors import InvalidSubmission
from .evaluator import evaluator_scores
from .metrics import Metric, get_metric

def read_frame(path: str | Path, id_column: str) -> pd.DataFrame:
    """Read a CSV with the id column as text (ids never lose leading zeros or become floats)."""
    path = Path(path)
    try:
        return pd.read_csv(path, dtype={id_column: str}, keep_default_na=True)
    except FileNotFoundError:
        raise InvalidSubmission(f"{path.name}: file not found") from None
    except pd.errors.EmptyDataError:
        raise InvalidSubmission(f"{path.name}: the file is empty") from None
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as exc:
        raise InvalidSubmission(f"{path.name}: not a readable CSV ({str(exc).splitlines()[0]})") from None


def norm_labels(values: pd.Series) -> np.ndarray:
    """Labels as text, with integral numbers written without a decimal part (3.0 → '3')."""
    num = pd.to_numeric(values, errors="coerce")
    if num.notna().all() and np.isfinite(num.to_numpy(dtype=float)).all():
        arr = num.to_numpy(dtype=float)
        if np.all(arr == np.round(arr)):
            return np.array([str(int(v)) for v in arr], dtype=object)
        return np.array([repr(float(v)) for v in arr], dtype=object)
    return values.astype(str).to_numpy(dtype=object)


def _numeric(sub: pd.DataFrame, col: str) -> np.ndarray:
    raw = sub[col]
    num = pd.to_numeric(raw, errors="coerce")
    bad = num.isna() & raw.notna()
    if bad.any():
        example = raw[bad].iloc[0]
        raise InvalidSubmission(f"column {col!r} must be numeric; found {example!r} ({int(bad.sum())} non-numeric rows)")
    arr = num.to_numpy(dtype=float)
    if not np.isfinite(arr).all():
        raise InvalidSubmission(f"column {col!r} has {int((~np.isfinite(arr)).sum())} non-finite values (inf)")
    return arr


def validate(spec: GradeSpec, answers: pd.DataFrame, submission: pd.DataFrame) -> pd.DataFrame:
    """Check a submission's shape, ids and values; return it reordered to the answers' id order."""
    idc = spec.id_column
    if not isinstance(submission, pd.DataFrame):
        raise InvalidSubmission("the submission is not a table")
    cols = [str(c) for c in submission.columns]
    if len(set(cols)) != len(cols):
        raise InvalidSubmission(f"duplicate column names: {sorted({c for c in cols if cols.count(c) > 1})}")
    if idc not in cols:
        raise InvalidSubmission(f"missing id column {idc!r}; expected columns {[idc] + spec.prediction_columns}")
    missing = [c for c in spec.prediction_columns if c not in cols]
    if missing:
        raise InvalidSubmission(f"missing prediction column(s) {missing}; expected columns "
                                f"{[idc] + spec.prediction_columns}, got {cols}")
    extra = [c for c in cols if c != idc and c not in spec.prediction_columns]
    if extra:
        raise InvalidSubmission(f"unexpected column(s) {extra}; expected exactly {[idc] + spec.prediction_columns}")
    if len(submission) != len(answers):
        raise InvalidSubmission(f"expected {len(answers)} rows, got {len(submission)}")
    sub_ids = submission[idc].astype(str)
    if submission[idc].isna().any():
        raise InvalidSubmission(f"id column {idc!r} has {int(submission[idc].isna().sum())} missing ids")
    dupes = sub_ids[sub_ids.duplicated()]
    if len(dupes):
        raise InvalidSubmission(f"id {dupes.iloc[0]!r} appears more than once ({len(dupes)} duplicated ids)")
    ans_ids = answers[idc].astype(str)
    unknown = sorted(set(sub_ids) - set(ans_ids))
    if unknown:
        raise InvalidSubmission(f"{len(unknown)} id(s) not in the test set, e.g. {unknown[0]!r}")
    absent = sorted(set(ans_ids) - set(sub_ids))
    if absent:
        raise InvalidSubmission(f"{len(absent)} test id(s) missing, e.g. {absent[0]!r}")
    for c in spec.prediction_columns:
        n_missing = int(submission[c].isna().sum())
        if n_missing:
            raise InvalidSubmission(f"column {c!r} has {n_missing} missing values (NaN)")
    sub = submission.assign(**{idc: sub_ids}).set_index(idc).loc[ans_ids.to_numpy()].reset_index()
    return sub


def prediction_matrix(spec: GradeSpec, sub: pd.DataFrame, *, check_labels: bool = True) -> np.ndarray:
    """The submission's prediction columns as the 2-D array the metric expects, values checked."""
    metric = get_metric(spec.metric)
    cols = spec.prediction_columns
    if metric.prediction == "label" and not metric.ordinal:
        out = np.column_stack([norm_labels(sub[c]) for c in cols])
        if check_labels and spec.classes:
            known = set(norm_labels(pd.Series(list(spec.classes))))
            for j, c in enumerate(cols):
                bad = [v for v in out[:, j] if v not in known]
                if bad:
                    raise InvalidSubmission(f"column {c!r} holds {bad[0]!r}, not one of the classes "
                                            f"{sorted(known)}")
        return out
    if metric.prediction == "ranking":
        return np.column_stack([sub[c].astype(str).to_numpy(dtype=object) for c in cols])
    out = np.column_stack([_numeric(sub, c) for c in cols])
    if metric.probabilities and ((out < 0).any() or (out > 1).any()):
        raise InvalidSubmission(f"probabilities must lie in [0, 1]; found values from {out.min():.4g} to {out.max():.4g}")
    if metric.ordinal and spec.classes:
        rounded = np.rint(out).astype(int)
        known = {int(float(c)) for c in spec.classes}
        bad = [v for v in rounded.ravel() if v not in known]
        if bad:
            raise InvalidSubmission(f"label {bad[0]} is not one of the classes {sorted(known)}")
    return out


def answers_matrix(spec: GradeSpec, answers: pd.DataFrame) -> np.ndarray:
    metric = get_metric(spec.metric)
    cols = spec.prediction_columns
    if metric.prediction == "label" and not metric.ordinal:
        return np.column_stack([norm_labels(answers[c]) for c in cols])
    if metric.prediction == "ranking":
        return np.column_stack([answers[c].astype(str).to_numpy(dtype=object) for c in cols])
    return np.column_stack([pd.to_numeric(answers[c]).to_numpy(dtype=float) for c in cols])


def score_submission(spec: GradeSpec, answers_df: pd.DataFrame, submission_df: pd.DataFrame) -> float:
    """Validate ``submission_df`` against ``answers_df`` and return the metric's score.

    Raises :class:`InvalidSubmission` for any submission that cannot be scored (wrong columns, row count, ids,
    NaN/inf, non-numeric values, unknown labels, probabilities outside [0, 1], a metric that rejects the values).
    """
    if spec.external:
        value = evaluator_scores(spec, answers_df, {"submission": submission_df})["submission"]
        if isinstance(value, InvalidSubmission):
            raise value
        return value
    for c in [spec.id_column, *spec.prediction_columns]:
        if c not in answers_df.columns:
            raise InvalidSubmission(f"the answers lack column {c!r} (a broken grading spec)")
    sub = validate(spec, answers_df, submission_df)
    y_true = answers_matrix(spec, answers_df)
    y_pred = prediction_matrix(spec, sub)
    try:
        value = float(get_metric(spec.metric).fn(y_true, y_pred))
    except (ValueError, TypeError) as exc:
        raise InvalidSubmission(f"metric {spec.metric} cannot score this submission: {exc}") from None
    if not np.isfinite(value):
        raise InvalidSubmission(f"metric {spec.metric} gave a non-finite score ({value})")
    return value


def score_many(spec: GradeSpec, answers_df: pd.DataFrame,
               submissions: dict[str, pd.DataFrame]) -> dict[str, float | InvalidSubmission]:
    """:func:`score_submission` of each submission, or the :class:`InvalidSubmission` saying why it has no score
    (an environment's own evaluator grades them all in one sandbox run)."""
    if spec.external:
        return evaluator_scores(spec, answers_df, submissions)
    out: dict[str, float | InvalidSubmission] = {}
    for name, df in submissions.items():
        try:
            out[name] = score_submission(spec, answers_df, df)
        except InvalidSubmission as exc:
            out[name] = exc
    return out


def screening_spec(spec: GradeSpec) -> GradeSpec:
    """The spec to compute a metric with at speed (thousands of times: bootstrap resamples, the exploit audit's
    attempts): ``spec`` itself, or for an environment graded by its own evaluator its proxy metric of ours, with the
    same columns and prediction shape -- for screening and resampling only, never a grade."""
    if not spec.external:
        return spec
    if not spec.proxy_metric:
        raise InvalidSubmission("graded by its own evaluator, with no proxy metric to screen with (a broken spec)")
    proxy = get_metric(spec.proxy_metric)
    return dataclasses.replace(spec, metric=proxy.name, lower_is_better=proxy.lower_is_better, grader=None,
                               proxy_metric=None, answer_columns=None, evaluator_code=None)


def _no_function(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    raise ValueError("the environment's own evaluator is a program, not a function of two arrays: score_submission "
                     "runs it")


def metric_of(spec: GradeSpec) -> Metric:
    """The metric entry of ``spec``; for an environment graded by its own evaluator, one that says so: its direction,
    its proxy's prediction shape, no known best and no fixed scale."""
    if not spec.external:
        return get_metric(spec.metric)
    proxy = get_metric(screening_spec(spec).metric)
    return Metric(spec.metric, _no_function, spec.lower_is_better, proxy.prediction,
                  "the environment's own evaluator (evaluator.py)", None,
                  prose="the task's own evaluator (its metric is described above)", regression=proxy.regression,
                  probabilities=proxy.probabilities, ordinal=proxy.ordinal, non_negative=proxy.non_negative)
