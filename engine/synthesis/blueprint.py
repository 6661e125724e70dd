"""The Analyst's product, a :class:`~engine.synthesis.contracts.Blueprint` (the technical DNA of a seed that every
synthesized environment must keep), its check against the seed, and the procedural Analyst that extracts it."""

from __future__ import annotations

import re
from typing import Any, Mapping

from ..errors import SynthesisError
from ..grading.metrics import METRICS
from .contracts import Blueprint

MODALITIES = ("tabular", "text", "image", "timeseries", "audio")

__all__ = ["Blueprint", "analyze", "check_blueprint"]


def check_blueprint(blueprint: Blueprint, seed: Mapping[str, Any]) -> list[str]:
    """Where a blueprint (valid under its schema) departs from its seed (empty list = acceptable)."""
    problems = [f"blueprint {key} {getattr(blueprint, key)!r} must equal the seed's {seed[key]!r}"
                for key in ("modality", "task_type", "metric") if getattr(blueprint, key) != seed[key]]
    if blueprint.task_type in ("binary", "multiclass", "ordinal", "multilabel") and blueprint.n_classes < 2:
        problems.append("n_classes must be an integer >= 2 for a classification task")
    return problems


def analyze(seed: Mapping[str, Any]) -> Blueprint:
    """The procedural Analyst: read the seed's card, schema and hints into a blueprint."""
    hints = seed.get("hints") or {}
    cols = seed["columns"]
    features = [c for c in cols if c["role"] == "feature"]
    targets = [c for c in cols if c["name"] in seed["target_columns"]]
    task = seed["task_type"]
    notes = hints.get("notes", "")
    low = notes.lower()
    n_classes = 0
    if task in ("binary",):
        n_classes = 2
    elif task in ("multiclass", "ordinal"):
        values = targets[0].get("values") if targets else None
        n_classes = int(hints.get("n_classes") or (len(values) if values else 3))
    elif task == "multilabel":
        n_classes = len(seed["target_columns"])
    free_text = [c for c in features if c["dtype"] == "text"]
    n_numeric = len([c for c in features if c["dtype"] in ("int", "float")])
    # schemas that list representative columns of a bigger group say so in their notes ("192 numeric features")
    m = re.search(r"(\d+) numeric features", notes)
    if m:
        n_numeric = max(n_numeric, int(m.group(1)))
    traits = []
    blueprint = Blueprint(
        seed_id=seed["id"], modality=seed["modality"] if seed["modality"] in MODALITIES else "timeseries",
        task_type=task, metric=seed["metric"], lower_is_better=bool(seed["lower_is_better"]),
        n_classes=n_classes, n_targets=len(seed["target_columns"]),
        class_balance=hints.get("class_balance"), missing_rate=float(hints.get("missing_rate", 0.0)),
        n_numeric=n_numeric, n_categorical=len([c for c in features if c["dtype"] in ("category", "bool")]),
        high_cardinality=bool(hints.get("high_cardinality")),
        code_feature=any("string code" in (c.get("description") or "").lower() for c in features),
        free_text=len(free_text), temporal=bool(hints.get("temporal", False)),
        groups=bool(hints.get("groups")), shift=bool(hints.get("shift", False)) or "drift" in low,
        label_noise=float(hints.get("label_noise", 0.0)), image_size=int(hints.get("image_size", 0)),
        sequence_length=int(hints.get("sequence_length", 0)),
        nonnegative_target=_non_negative(seed["metric"]) or "non-negative" in low,
        original_train_size=int(seed["train_size"]), original_test_size=int(seed["test_size"]), notes=notes,
    )
    if free_text:
        blueprint.text_style = "quality" if task == "ordinal" else ("style" if "stylometry" in seed.get("tags", []) or
                                                              "punctuation" in low else "topic")
    if blueprint.modality == "image" and not blueprint.image_size:
        blueprint.image_size = 32
    if blueprint.modality in ("audio", "timeseries") and not blueprint.sequence_length:
        blueprint.sequence_length = 256 if blueprint.modality == "timeseries" else 2000
    for key in ("class_balance", "missing_rate", "high_cardinality", "code_feature", "free_text", "temporal",
                "groups", "shift", "label_noise"):
        if getattr(blueprint, key):
            traits.append(key)
    if task == "multilabel":
        traits.append("multi_label")
    if blueprint.n_targets > 1:
        traits.append("multi_target")
    blueprint.traits = traits
    if blueprint.modality not in MODALITIES:
        raise SynthesisError(f"seed {seed['id']}: modality {seed['modality']!r} has no generator")
    return blueprint


def _non_negative(metric: str) -> bool:
    """The seed's metric needs non-negative targets (RMSLE)."""
    known = METRICS.get(metric)
    return known is not None and known.non_negative
