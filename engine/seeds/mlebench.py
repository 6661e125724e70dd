"""MLE-bench competition folders (``config.yaml`` + ``description.md``, optional ``leaderboard.csv`` and
``prepared/public`` / ``prepared/private``) mapped onto our seed format.

The task is read from evidence, never guessed from column positions:

- the id is the first column of ``sample_submission.csv``; ``test.csv`` may lack it (Kaggle's digit-recognizer
  keeps ``ImageId`` only in the sample submission, in row order) — recorded as the hint ``id_in_test = false``;
- the targets are the sample submission's other columns, found in the training table by name (``Label`` is
  ``label``); a one-hot probability submission (one column per class, as leaf-classification's) names no training
  column, so its target is the training column whose values are those class names;
- every classification seed records its classes (the target column's ``values`` and ``hints.n_classes``), read
  from the whole training column; every column records its kind (int, float, category, text, path).

Files that are not UTF-8 CSV (binary junk, another encoding) are one-line :class:`SeedError` s naming the file.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path
from typing import Any, Generator

import yaml

from ..errors import SeedError
from ..grading.metrics import METRICS, get_metric
from .seed import ID_RE, Seed

#: MLE-bench grader names (and common spellings; spaces and underscores count as hyphens) → our metric names
GRADER_METRICS = {alias: m.name for m in METRICS.values() for alias in (m.name.replace("_", "-"), *m.aliases)}
MEDIA = {".png": "image", ".jpg": "image", ".jpeg": "image", ".tif": "image", ".wav": "audio", ".aif": "audio",
         ".aiff": "audio", ".npy": "timeseries"}
#: a label column with more distinct values than this is not a set of classes
MAX_CLASSES = 1000
_NUMBER = re.compile(r"-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")


def is_mlebench_folder(path: Path) -> bool:
    return (path / "config.yaml").is_file()


def grader_metric(name: str) -> str | None:
    """Our metric for an MLE-bench grader name (None when unknown)."""
    key = re.sub(r"[\s_]+", "-", name.strip().lower())
    return GRADER_METRICS.get(key) or (key.replace("-", "_") if key.replace("-", "_") in METRICS else None)


def read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise SeedError(f"{path}: not UTF-8 text (binary data or another encoding)") from None


def read_yaml(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(read_text(path))
    except yaml.YAMLError as exc:
        raise SeedError(f"{path}: invalid YAML: {str(exc).splitlines()[0]}") from None
    if not isinstance(data, dict):
        raise SeedError(f"{path}: expected a mapping at the top level")
    return data


def find_prepared(folder: Path) -> tuple[Path | None, Path | None]:
    """(public, private) folders of a prepared competition, where present."""
    for base in (folder / "prepared", folder):
        public, private = base / "public", base / "private"
        if public.is_dir():
            return public, (private if private.is_dir() else None)
    return None, None


def _rows(path: Path) -> Generator[list[str], None, None]:
    """The rows of a CSV file as lists of strings; one-line errors for binary or non-UTF-8 files."""
    try:
        with open(path, newline="", encoding="utf-8") as f:
            yield from csv.reader(f)
    except UnicodeDecodeError:
        raise SeedError(f"{path}: not a UTF-8 CSV file (binary data or another encoding)") from None
    except csv.Error as exc:
        raise SeedError(f"{path}: not a readable CSV file ({exc})") from None


def csv_head(path: Path, limit: int = 200) -> tuple[list[str], list[list[str]]]:
    """The header and the first ``limit`` rows of a CSV file."""
    rows = _rows(path)
    header = next(rows, [])
    head = [r for _, r in zip(range(limit), rows)]
    rows.close()
    return header, head


def distinct_values(path: Path, column: str, cap: int = MAX_CLASSES) -> list[str] | None:
    """The distinct non-empty values of one column over the whole file (streamed), sorted; None past ``cap``."""
    rows = _rows(path)
    header = next(rows, [])
    j = header.index(column)
    seen: set[str] = set()
    for r in rows:
        if j < len(r) and r[j] != "":
            seen.add(r[j])
            if len(seen) > cap:
                rows.close()
                return None
    return sorted(seen, key=lambda v: (not _NUMBER.fullmatch(v), float(v) if _NUMBER.fullmatch(v) else 0.0, v))


def _count_rows(path: Path) -> int:
    with open(path, "rb") as f:
        return max(sum(1 for _ in f) - 1, 0)


def training_table(public: Path) -> Path | None:
    """``train.csv``, else the one other labelled table (e.g. dog-breed-identification's ``labels.csv``)."""
    if (public / "train.csv").is_file():
        return public / "train.csv"
    others = sorted(p for p in public.glob("*.csv") if not p.name.startswith(("test", "sample_submission")))
    return others[0] if len(others) == 1 else None


def column_dtype(values: list[str]) -> str:
    """int, float, path (media files), text (long strings with spaces) or category."""
    values = [v for v in values if v != ""]
    if values and all(_NUMBER.fullmatch(v) for v in values):
        return "int" if all(re.fullmatch(r"-?\d+", v) for v in values) else "float"
    if values and all(Path(v).suffix.lower() in MEDIA for v in values):
        return "path"
    if values and sum(len(v) for v in values) / len(values) > 40 and sum(" " in v for v in values) > len(values) / 2:
        return "text"
    return "category"


def find_targets(sample: Path, predictions: list[str], train: Path | None, train_header: list[str],
                 test_header: list[str]) -> tuple[list[str], list[str] | None]:
    """(target columns of the training table, class names of a one-hot probability submission or None)."""
    if train is None:
        return list(predictions), None
    by_lower = {c.lower(): c for c in train_header}
    direct = [by_lower.get(p.lower()) for p in predictions]
    if all(direct):
        return [str(c) for c in direct], None
    if len(predictions) < 2:
        raise SeedError(f"{sample}: the prediction column {predictions[0]!r} is not a column of {train.name}",
                        hint=f"{train.name} has {', '.join(train_header[:12])}")
    # one probability column per class: the target is the training column whose values are the class names
    wanted = set(predictions)
    candidates = [c for c in train_header if c not in test_header and c not in predictions] or train_header
    best, best_overlap = None, 0
    for c in candidates:
        values = distinct_values(train, c, cap=len(wanted))
        if values and set(values) <= wanted and len(values) > best_overlap:
            best, best_overlap = c, len(values)
    if best is None:
        raise SeedError(f"{sample}: one probability column per class ({', '.join(predictions[:5])}, …), but no "
                        f"column of {train.name} holds those class names")
    return [best], list(predictions)


def _task_type(metric: str, n_predictions: int, n_targets: int, n_classes: int | None) -> str:
    if get_metric(metric).regression:
        return "multi_target_regression" if n_targets > 1 else "regression"
    if get_metric(metric).ordinal:
        return "ordinal"
    if get_metric(metric).prediction == "value":  # probabilities: one per label, or one for a binary task
        return "multilabel" if n_predictions > 1 else "binary"
    return "binary" if n_classes == 2 else "multiclass"


def resolve_metric(cfg: dict[str, Any], cfg_path: Path, metric: str | None, stored: str | None) -> str:
    """The metric of a competition: an explicit one, else the one its stored seed was imported with
    (``seeds import --metric``), else its grader's."""
    if metric is None:
        grader = cfg["grader"] if isinstance(cfg.get("grader"), dict) else {}
        name = str(grader.get("name", "")).strip()
        metric = stored or grader_metric(name)
        if metric is None:
            raise SeedError(f"{cfg_path}: key 'grader.name' = {name!r} does not map to a known metric",
                            hint="pass --metric NAME: seeds import, grade, rollout and eval take it")
    if metric not in METRICS:
        raise SeedError(f"{cfg_path}: metric {metric!r} is not a known metric",
                        hint=f"known: {', '.join(sorted(METRICS))}")
    return metric


def read_leaderboard(path: Path) -> list[float] | None:
    if not path.is_file():
        return None
    rows = _rows(path)
    header = next(rows, [])
    if "score" not in header:
        raise SeedError(f"{path}: needs a 'score' column")
    j = header.index("score")
    scores = []
    for i, r in enumerate(rows, start=2):
        if j < len(r) and r[j] not in ("", "nan", "NaN"):
            try:
                scores.append(float(r[j]))
            except ValueError:
                raise SeedError(f"{path}: line {i}: score {r[j]!r} is not a number") from None
    return scores


def load_mlebench_folder(folder: str | Path, metric: str | None = None, *, stored_metric: str | None = None,
                         meta: Path | None = None) -> Seed:
    """The seed of one competition folder (``metric`` overrides the grader; ``stored_metric`` is the metric a
    previous ``seeds import --metric`` recorded for it; ``meta`` is where config.yaml, description.md and
    leaderboard.csv live when not in the folder itself: MLE-bench's registry keeps them apart from the data)."""
    folder = Path(folder)
    meta = Path(meta) if meta is not None else folder
    cfg_path = meta / "config.yaml"
    cfg = read_yaml(cfg_path)
    for key in ("id", "name"):
        if not isinstance(cfg.get(key), str):
            raise SeedError(f"{cfg_path}: missing required key {key!r}")
    comp_id = cfg["id"]
    if not ID_RE.match(comp_id):
        raise SeedError(f"{cfg_path}: key 'id' = {comp_id!r} must match [a-z0-9][a-z0-9-]*")
    metric = resolve_metric(cfg, cfg_path, metric, stored_metric)
    public, private = find_prepared(folder)
    desc_path = meta / "description.md"
    if not desc_path.is_file() and public is not None:
        desc_path = public / "description.md"
    if not desc_path.is_file():
        raise SeedError(f"{meta / 'description.md'}: missing (an MLE-bench folder needs description.md)")
    description = read_text(desc_path)

    sample = public / "sample_submission.csv" if public else None
    if sample is None or not sample.is_file():
        candidates = sorted(folder.rglob("sample_submission*.csv"))
        sample = candidates[0] if candidates else None
    if sample is None:
        raise SeedError(f"{folder}: no sample_submission.csv found (needed to learn the id and target columns)")
    sub_header, _ = csv_head(sample, 1)
    if len(sub_header) < 2:
        raise SeedError(f"{sample}: needs an id column and at least one prediction column")
    id_column, predictions = sub_header[0], sub_header[1:]
    train = training_table(public) if public else None
    train_header, train_rows = csv_head(train) if train else ([], [])
    test = public / "test.csv" if public else None
    test_header, _ = csv_head(test, 1) if test and test.is_file() else ([], [])
    targets, class_values = find_targets(sample, predictions, train, train_header, test_header)
    if metric == "log_loss" and class_values is None:
        metric = "multilabel_log_loss"  # one probability column per target: binary log loss (dogs-vs-cats)
    regression = get_metric(metric).regression
    if class_values is None and train is not None and not regression and len(targets) == 1:
        class_values = distinct_values(train, targets[0])
    n_classes = len(targets) if len(targets) > 1 and not regression else (len(class_values) if class_values else None)
    task_type = _task_type(metric, len(predictions), len(targets), n_classes)

    columns: list[dict[str, Any]] = [{"name": id_column, "dtype": "text", "role": "id"}]
    media = None
    for j, name in enumerate(train_header):
        if name == id_column or name in targets:
            continue
        dtype = column_dtype([r[j] for r in train_rows if j < len(r)])
        media = media or (MEDIA[Path(train_rows[0][j]).suffix.lower()] if dtype == "path" else None)
        columns.append({"name": name, "dtype": dtype, "role": "media" if dtype == "path" else "feature"})
    for t in targets:
        dtype = "float" if regression else ("category" if class_values else "text")
        col: dict[str, Any] = {"name": t, "dtype": dtype, "role": "target"}
        if class_values:
            col["values"] = class_values
        columns.append(col)
    modality = media or ("text" if any(c["dtype"] == "text" and c["role"] == "feature" for c in columns) else "tabular")
    if media is None and public is not None:
        modality = next((MEDIA[p.suffix.lower()] for p in public.rglob("*") if p.suffix.lower() in MEDIA), modality)

    hints: dict[str, Any] = {}
    if n_classes:
        hints["n_classes"] = n_classes
    if test_header and id_column not in test_header:
        hints["id_in_test"] = False
    train_size = _count_rows(train) if train else 1
    test_size = _count_rows(test) if test and test.is_file() else _count_rows(sample)
    return Seed(
        id=comp_id, title=cfg["name"], modality=modality, task_type=task_type, metric=metric,
        lower_is_better=METRICS[metric].lower_is_better, id_column=id_column, target_columns=targets,
        columns=columns, train_size=max(train_size, 1), test_size=max(test_size, 1), description=description,
        origin=f"mlebench:{comp_id}", tags=["mlebench-import"], hints=hints, source_path=str(folder.resolve()),
        source_format="mlebench", leaderboard=read_leaderboard(meta / "leaderboard.csv"),
    )
