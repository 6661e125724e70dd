"""What a generator program actually produced: the grading spec inferred from its files, a summary of the data
(the Describer and the Reviewer read it), the checks against the seed's blueprint, and a plain description
written from the data alone.

The spec is read the way an agent reads a task: the id is the column that ``test.csv`` and
``sample_submission.csv`` share; the prediction columns are the sample submission's other columns; the targets are
the ``train.csv`` columns that ``test.csv`` lacks; the metric is given (the seed's, or the user's choice).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any
from pathlib import Path

import pandas as pd

from ..envs.layout import GradeSpec
from ..grading.audit import declared_files
from ..grading.metrics import METRICS, get_metric
from .contracts import Blueprint

MEDIA_SUFFIXES = (".png", ".npy")


class SpecError(ValueError):
    """The files do not define a gradable task; ``problems`` say why."""

    def __init__(self, problems: list[str]):
        super().__init__("; ".join(problems))
        self.problems = problems


@dataclass
class ColumnSummary:
    name: str
    kind: str  #: id | numeric | category | text | datetime | media
    dtype: str
    where: str  #: "train, test" or "train only"
    missing_share: float
    n_unique: int
    examples: list[str]


@dataclass
class DataSummary:
    n_train: int
    n_test: int
    id_column: str
    target_columns: list[str]
    submission_header: list[str]
    columns: list[ColumnSummary]
    label_counts: dict[str, dict[str, int]] = field(default_factory=dict)
    media_folders: list[str] = field(default_factory=list)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1)

    @classmethod
    def from_json(cls, text: str) -> "DataSummary":
        data = json.loads(text)
        return cls(**{**data, "columns": [ColumnSummary(**c) for c in data["columns"]]})


def _kind(values: pd.Series) -> str:
    if pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values):
        return "numeric"
    text = values.dropna().astype(str)
    if len(text) and text.str.endswith(MEDIA_SUFFIXES).all():
        return "media"
    if len(text) and text.str.count(" ").mean() >= 3:
        return "text"
    if len(text) and pd.to_datetime(text.head(20), errors="coerce", format="mixed").notna().all():
        return "datetime"
    return "category"


def _read(public: Path) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    frames = []
    for name in ("train.csv", "test.csv", "sample_submission.csv"):
        try:
            frames.append(pd.read_csv(public / name, dtype=str if name == "sample_submission.csv" else None))
        except (OSError, ValueError) as exc:
            raise SpecError([f"public/{name} is not a readable CSV: {str(exc).splitlines()[0]}"]) from None
    return frames[0], frames[1], frames[2]


def _labels(values: pd.Series) -> list[int] | list[str]:
    """The distinct labels: integers when every label is integral, else text."""
    values = values.dropna()
    num = pd.to_numeric(values, errors="coerce")
    if num.notna().all() and (num == num.round()).all():
        return sorted({int(v) for v in num})
    return sorted({str(v) for v in values})


def infer_spec(env_dir: Path, metric: str, task_type: str, classes: list | None = None) -> GradeSpec:
    """The grading spec the files define (``classes``: the scenario's class order, checked against the data)."""
    train, test, sample = _read(env_dir / "public")
    shared = [c for c in sample.columns if c in test.columns]
    idc = shared[0] if shared else sample.columns[0]
    if not shared and sample[idc].tolist() != [str(i) for i in range(1, len(test) + 1)]:
        raise SpecError(["sample_submission.csv shares no column with test.csv, and its first column is not the row "
                         "number of test.csv (1, 2, …): the id must be in both files, or only in the submission as "
                         "the row number"])
    pred = [c for c in sample.columns if c != idc]
    targets = [c for c in train.columns if c not in test.columns and c != idc]
    if not targets:
        raise SpecError(["train.csv has no column that test.csv lacks, so there is no target"])
    if not pred:
        raise SpecError([f"sample_submission.csv holds only the id column {idc!r}: no prediction column"])
    m = get_metric(metric)
    labels = sorted({str(v) for t in targets for v in train[t].dropna()})
    if m.prediction == "proba":
        if len(targets) != 1:
            raise SpecError([f"{metric} scores one class column per class of one target; train.csv has targets "
                             f"{targets}"])
        if set(labels) - set(pred):
            raise SpecError([f"{metric} needs one sample_submission.csv column per class of {targets[0]!r}; the "
                             f"columns are {pred} but train.csv holds the classes {labels}"])
        found: list[Any] | None = list(pred)
    else:
        if sorted(pred) != sorted(targets):
            raise SpecError([f"the sample submission's prediction columns {pred} must be the targets {targets} "
                             "(the train.csv columns test.csv lacks)"])
        found = None if task_type in ("regression", "multi_target_regression") else \
            _labels(pd.concat([train[t] for t in targets]))
    if classes is not None and found is not None and sorted(map(str, classes)) != sorted(map(str, found)):
        raise SpecError([f"the scenario promises the classes {list(classes)} but the data holds {found}"])
    order = list(classes) if classes is not None and found is not None else found
    # what public/ may hold: the standard files and the folders of the media the rows point to (anything else the
    # program wrote is reported by the exploit audit)
    return GradeSpec(metric=metric, lower_is_better=m.lower_is_better, id_column=idc, target_columns=targets,
                     prediction_columns=pred, classes=order, task_type=task_type,
                     public_files=declared_files(env_dir))


def summarize(env_dir: Path, spec: GradeSpec) -> DataSummary:
    train, test, sample = _read(env_dir / "public")
    columns = []
    for c in train.columns.union(test.columns, sort=False):
        values = train[c] if c in train.columns else test[c]
        columns.append(ColumnSummary(
            name=c, kind="id" if c == spec.id_column else _kind(values), dtype=str(values.dtype),
            where="train, test" if c in train.columns and c in test.columns else
            "train only" if c in train.columns else "test only",
            missing_share=float(values.isna().mean()), n_unique=int(values.nunique()),
            examples=[str(v)[:60] for v in values.dropna().head(3)]))
    counts = {} if spec.task_type in ("regression", "multi_target_regression") else \
        {t: {str(k): int(v) for k, v in train[t].value_counts().sort_index().items()} for t in spec.target_columns}
    media = sorted(p.name for p in (env_dir / "public").iterdir() if p.is_dir())
    return DataSummary(n_train=len(train), n_test=len(test), id_column=spec.id_column,
                       target_columns=spec.target_columns, submission_header=list(sample.columns), columns=columns,
                       label_counts=counts, media_folders=media)


def metric_problems(metric: str, blueprint: Blueprint) -> list[str]:
    """Whether ``metric`` is in the library and scores what the blueprint's metric scores (prediction kind and
    direction)."""
    if metric not in METRICS:
        return [f"metric {metric!r} is not in the metric library ({', '.join(sorted(METRICS))})"]
    wanted, chosen = get_metric(blueprint.metric), get_metric(metric)
    if (wanted.prediction, wanted.lower_is_better) != (chosen.prediction, chosen.lower_is_better):
        return [f"metric {metric!r} does not fit the blueprint's {blueprint.metric!r} (prediction kind and direction)"]
    return []


def blueprint_problems(spec: GradeSpec, data: DataSummary, blueprint: Blueprint) -> list[str]:
    """Where the realized task departs from the seed's blueprint (task type, targets, modality, metric)."""
    problems = metric_problems(spec.metric, blueprint)
    n_targets = len(spec.target_columns)
    n_labels = [len(c) for c in data.label_counts.values()]
    task = blueprint.task_type
    if task in ("multilabel", "multi_target_regression") and n_targets < 2:
        problems.append(f"a {task} task needs at least 2 target columns; train.csv has {n_targets}")
    if task not in ("multilabel", "multi_target_regression") and n_targets != 1:
        problems.append(f"a {task} task has one target column; train.csv has {spec.target_columns}")
    if task == "binary" and n_labels != [2]:
        problems.append(f"a binary target must hold 2 classes in train.csv; found {n_labels}")
    if task in ("multiclass", "ordinal") and (not n_labels or n_labels[0] < 3):
        problems.append(f"a {task} target needs at least 3 classes in train.csv; found {n_labels}")
    if task == "multilabel" and any(n > 2 for n in n_labels):
        problems.append("every multilabel target must be 0/1")
    kinds = {c.kind for c in data.columns if c.name != spec.id_column and c.name not in spec.target_columns}
    modality_kind = {"text": "text", "image": "media", "audio": "media", "timeseries": "media"}.get(blueprint.modality)
    if modality_kind and modality_kind not in kinds:
        problems.append(f"the seed is a {blueprint.modality} task but no column of test.csv holds "
                        + ("free text" if modality_kind == "text" else "media file paths (.png / .npy)"))
    if not 50 <= data.n_train <= 200:
        problems.append(f"train.csv has {data.n_train} rows; micro environments need 50-200")
    return problems


def describe_from_data(data: DataSummary, spec: GradeSpec, title: str, overview: str) -> str:
    """A plain, complete description from the data alone: every column, both sizes, the metric, the header."""
    metric = get_metric(spec.metric)
    header = ",".join(data.submission_header)
    lines = [f"# {title}", "", "## Overview", "", overview, "", "## Data", "",
             f"- `train.csv` — {data.n_train} rows with the target column(s) "
             + ", ".join(f"`{t}`" for t in spec.target_columns) + ".",
             f"- `test.csv` — {data.n_test} rows without the target.",
             "- `sample_submission.csv` — a valid submission in the expected format."]
    if data.media_folders:
        lines.append("- " + " and ".join(f"`{m}/`" for m in data.media_folders) + " — the media files the "
                     "path columns point to.")
    lines += ["", "### Columns", "", "| column | in | kind | missing | distinct |", "|---|---|---|---|---|"]
    lines += [f"| `{c.name}` | {c.where} | {c.kind} | {c.missing_share:.0%} | {c.n_unique} |" for c in data.columns]
    if not any(c.name == spec.id_column for c in data.columns):
        lines += ["", f"`{spec.id_column}` is only in the submission: it numbers the rows of `test.csv` from 1, in "
                      "order."]
    lines += ["", "## Evaluation", "", f"Submissions are scored with **{spec.metric}**: "
              f"{metric.wording}; "
              f"{'lower' if metric.lower_is_better else 'higher'} is better.", "", "## Submission format", "",
              f"A CSV file with one row per `{spec.id_column}` of `test.csv` and this header:", "", "```", header,
              "```", ""]
    return "\n".join(lines)
