"""The proof of a grading spec on the generated data: a perfect submission scores the metric's best, the sample
submission and a random one score worse."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..envs.layout import GradeSpec
from ..errors import InvalidSubmission
from ..grading.metrics import get_metric
from ..grading.score import score_submission
from .grader import better


def random_submission(spec: GradeSpec, answers: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    sub = pd.DataFrame({spec.id_column: answers[spec.id_column]})
    n = len(answers)
    pred_kind = get_metric(spec.metric).prediction
    if pred_kind == "proba":  # one probability column per class, rows summing to 1
        p = rng.dirichlet(np.ones(len(spec.prediction_columns)), size=n)
        for j, c in enumerate(spec.prediction_columns):
            sub[c] = p[:, j]
    elif pred_kind == "label":
        for c in spec.prediction_columns:
            sub[c] = rng.choice(np.asarray(spec.classes, dtype=object), size=n)
    elif spec.task_type in ("regression", "multi_target_regression"):
        for c in spec.prediction_columns:
            v = pd.to_numeric(answers[c]).to_numpy(dtype=float)
            sub[c] = rng.permutation(v)
    else:
        for c in spec.prediction_columns:
            sub[c] = rng.random(n)
    return sub


def prove(spec: GradeSpec, answers: pd.DataFrame, sample: pd.DataFrame, rng: np.random.Generator) -> dict[str, Any]:
    """Score the perfect, the sample and a random submission; list what is wrong (empty = the grader works)."""
    problems: list[str] = []
    out: dict[str, Any] = {}
    m = get_metric(spec.metric)
    for name, sub in (("perfect", answers.copy()), ("sample", sample), ("random", random_submission(spec, answers, rng))):
        try:
            out[name] = score_submission(spec, answers, sub)
        except InvalidSubmission as exc:
            problems.append(f"the {name} submission is rejected: {exc}")
    if "perfect" in out and m.best is not None and abs(out["perfect"] - m.best) > 1e-6:
        problems.append(f"a perfect submission scores {out['perfect']:.4g}, not the metric's best {m.best}")
    for name in ("sample", "random"):
        if name in out and "perfect" in out and not better(spec, out["perfect"], out[name]):
            problems.append(f"the {name} submission ({out[name]:.4g}) is not worse than a perfect one")
    out["problems"] = problems
    return out
