"""The Grader: the grading spec of a scenario (metric from the shared library, prediction columns, classes). Its
proof on the generated data is :mod:`.proof`."""

from __future__ import annotations

from typing import Any

from ..envs.layout import GradeSpec
from ..grading.metrics import get_metric
from .blueprint import Blueprint


def grade_spec(blueprint: Blueprint, scenario: dict[str, Any], metric: str | None = None) -> GradeSpec:
    metric = metric or blueprint.metric
    m = get_metric(metric)
    targets = list(scenario["target_columns"])
    classes = scenario.get("classes")
    pred = [str(c) for c in classes or []] if m.prediction == "proba" else targets  # a column per class
    return GradeSpec(metric=metric, lower_is_better=m.lower_is_better, id_column=scenario["id_column"],
                     target_columns=targets, prediction_columns=pred,
                     classes=list(classes) if classes is not None else None, task_type=blueprint.task_type)


def better(spec: GradeSpec, a: float, b: float) -> bool:
    return a < b if spec.lower_is_better else a > b
