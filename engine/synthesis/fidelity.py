"""Fidelity of a micro environment to its seed: what makes a task *that* task must survive synthesis.

The seed's side is read from its card by the procedural Analyst (whatever backend synthesized the environment);
the environment's side is measured from its files. They must agree on modality, task type, metric, the number
of classes (exactly up to :data:`EXACT_CLASSES`; above, more than 20 and at most the seed's), the number of
targets, the kind and rough count of the features (tabular and text tasks: 64 pixel columns stay about 64
numeric columns, not 40 numbers plus categories), whether ``test.csv`` carries the id, and the width of the
submission (one column per class for probabilities, one per target otherwise).

:func:`expected_profile` (seed) and :func:`measure` (environment) give two :class:`Profile` s; :func:`check`
lists what breaks; :func:`fidelity_line` is the one line ``sandmle envs show`` prints. The verifier rejects an
environment whose check is not empty.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Mapping

import pandas as pd

from store import Store

from ..envs.layout import EnvSpec, GradeSpec
from ..grading.metrics import get_metric
from .blueprint import analyze

#: up to this many classes the environment keeps the seed's count exactly
EXACT_CLASSES = 20
#: media files by suffix → the modality group they carry (audio and time series are both 1-D signals)
MEDIA = {".png": "image", ".jpg": "image", ".jpeg": "image", ".tif": "image", ".npy": "signal", ".wav": "signal",
         ".aif": "signal", ".aiff": "signal"}
MODALITY_GROUP = {"tabular": "tabular", "text": "text", "image": "image", "audio": "signal", "timeseries": "signal"}
#: feature kinds whose counts are compared (media tasks carry their signal in files, not columns)
KINDS = ("numeric", "categorical", "text")


@dataclass(frozen=True)
class Profile:
    """The traits fidelity compares, as a seed declares them or as an environment's files show them."""

    modality: str
    task_type: str
    metric: str
    n_classes: int  #: classes; labels for multilabel; 0 for regression
    n_targets: int
    numeric: int
    categorical: int  #: categories, codes and dates
    text: int
    id_in_test: bool
    submission_columns: int  #: columns after the id in sample_submission.csv

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def features(self) -> str:
        parts = [f"{getattr(self, k)} {k}" for k in KINDS if getattr(self, k)]
        return ", ".join(parts) or "none"


def _submission_columns(metric: str, n_classes: int, n_targets: int) -> int:
    return n_classes if get_metric(metric).prediction == "proba" else n_targets


def expected_profile(seed: Mapping[str, Any]) -> Profile:
    """The seed's profile, from its card (schema, hints) read by the procedural Analyst."""
    blueprint = analyze(seed)
    hints = seed.get("hints") or {}
    return Profile(modality=blueprint.modality, task_type=blueprint.task_type, metric=blueprint.metric,
                   n_classes=blueprint.n_classes,
                   n_targets=blueprint.n_targets, numeric=blueprint.n_numeric,
                   categorical=blueprint.n_categorical + int(blueprint.temporal), text=blueprint.free_text,
                   id_in_test=bool(hints.get("id_in_test", True)),
                   submission_columns=_submission_columns(blueprint.metric, blueprint.n_classes, blueprint.n_targets))


def column_kind(values: pd.Series) -> str:
    """numeric, text (free text: ≥ 3 spaces on average), a media suffix (``.png``…) or categorical."""
    if pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values):
        return "numeric"
    text = values.dropna().astype(str)
    suffixes = text.str.extract(r"(\.[A-Za-z0-9]+)$")[0].str.lower()
    if len(text) and suffixes.notna().all() and suffixes.isin(list(MEDIA)).all():
        return suffixes.iloc[0]
    if len(text) and text.str.count(" ").mean() >= 3:
        return "text"
    return "categorical"


def measure(env_dir: str | Path, spec: GradeSpec) -> Profile:
    """The profile an environment's files show (``public/`` and its grading spec; no answers needed)."""
    public = Path(env_dir) / "public"
    train = pd.read_csv(public / "train.csv")
    test = pd.read_csv(public / "test.csv")
    sample = pd.read_csv(public / "sample_submission.csv", nrows=5)
    kinds = [column_kind(test[c]) for c in test.columns if c != spec.id_column]
    media = [MEDIA[k] for k in kinds if k in MEDIA]
    modality = media[0] if media else ("text" if "text" in kinds else "tabular")
    targets = [t for t in spec.target_columns if t in train.columns]
    if spec.task_type in ("regression", "multi_target_regression"):
        n_classes = 0
    elif spec.task_type == "multilabel":
        n_classes = len(spec.target_columns)
    elif get_metric(spec.metric).prediction == "proba":
        n_classes = len(spec.prediction_columns)
    else:
        n_classes = len({str(v) for t in targets for v in train[t].dropna()})
    return Profile(modality=modality, task_type=spec.task_type, metric=spec.metric, n_classes=n_classes,
                   n_targets=len(spec.target_columns), numeric=kinds.count("numeric"),
                   categorical=kinds.count("categorical"), text=kinds.count("text"),
                   id_in_test=spec.id_column in test.columns, submission_columns=len(sample.columns) - 1)


def class_band(n: int) -> tuple[int, int]:
    """Class counts that keep a seed of ``n`` classes: exactly ``n`` up to 20; above, still more than 20 and at
    most ``n`` (50-200 training rows hold about 22 classes with 9 rows each, not leaf-classification's 99)."""
    if n <= EXACT_CLASSES:
        return n, n
    return EXACT_CLASSES + 1, n


def count_band(n: int) -> tuple[int, int]:
    """A rough feature count: within 10 % (at least ±2) of the seed's."""
    slack = max(2, round(0.1 * n))
    return max(0, n - slack), n + slack


def check(expected: Profile, measured: Profile) -> list[str]:
    """What the environment breaks of its seed's profile (empty: faithful)."""
    problems = []
    if MODALITY_GROUP.get(expected.modality) != measured.modality:
        problems.append(f"modality {measured.modality} (seed {expected.modality})")
    for key in ("task_type", "metric", "n_targets"):
        if getattr(expected, key) != getattr(measured, key):
            problems.append(f"{key.replace('_', ' ')} {getattr(measured, key)} (seed {getattr(expected, key)})")
    width = _submission_columns(expected.metric, measured.n_classes, expected.n_targets)
    if measured.submission_columns != width:
        problems.append(f"{measured.submission_columns} submission columns after the id (needs {width})")
    lo, hi = class_band(expected.n_classes)
    if not lo <= measured.n_classes <= hi:
        want = str(lo) if lo == hi else f"{lo}-{hi}"
        problems.append(f"{measured.n_classes} classes (seed {expected.n_classes}: needs {want})")
    if expected.modality in ("tabular", "text"):
        for kind in KINDS:
            lo, hi = count_band(getattr(expected, kind))
            if not lo <= getattr(measured, kind) <= hi:
                problems.append(f"{getattr(measured, kind)} {kind} features (seed {getattr(expected, kind)}: "
                                f"needs {lo}-{hi})")
    if expected.id_in_test != measured.id_in_test:
        where = "in test.csv" if expected.id_in_test else "only in sample_submission.csv"
        problems.append(f"the id must be {where}, as in the seed")
    return problems


def stored_fidelity(store: Store, env_id: str) -> tuple[Profile, Profile] | None:
    """(seed profile, measured profile) of a stored environment synthesized from a stored seed, else None."""
    row = store.envs.get(env_id)
    seed_id, folder = row["seed_id"], row["dir"]
    seed = store.seeds.find(seed_id) if seed_id else None
    if seed is None or not folder or not (Path(folder) / "public" / "train.csv").is_file():
        return None
    return expected_profile(seed), measure(folder, EnvSpec.from_store(store, env_id).grade)


def fidelity_line(expected: Profile, measured: Profile) -> str:
    """``fidelity ok: …`` or ``fidelity BROKEN: …`` — the environment against its seed in one line."""
    problems = check(expected, measured)
    classes = f" · classes {measured.n_classes} (seed {expected.n_classes})" if expected.n_classes else ""
    features = (f" · features {measured.features()} (seed {expected.features()})"
                if expected.modality in ("tabular", "text") else "")
    head = f"{measured.modality} {measured.task_type} {measured.metric}{classes}{features}"
    if problems:
        return f"fidelity BROKEN: {'; '.join(problems)}"
    return f"fidelity ok: {head}"
