"""MLE-bench competition folders (``config.yaml`` + ``description.md``, optional ``leaderboard.csv`` and
``prepared/public`` / ``prepared/private``) mapped onto our seed format, and (when prepared) onto an environment."""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import yaml

from ..envs.layout import EnvSpec, GradeSpec
from ..errors import SandmleError, SeedError
from ..grading.metrics import METRICS
from .seed import ID_RE, Seed

#: MLE-bench grader names (and common spellings) → our metric names
GRADER_METRICS = {
    "accuracy": "accuracy",
    "auc": "roc_auc", "auc-roc": "roc_auc", "roc-auc": "roc_auc", "roc_auc": "roc_auc", "area-under-roc": "roc_auc",
    "mean-column-wise-roc-auc": "mean_columnwise_roc_auc", "column-wise-roc-auc": "mean_columnwise_roc_auc",
    "mean-columnwise-auc": "mean_columnwise_roc_auc",
    "multi-class-log-loss": "log_loss", "log-loss": "log_loss", "logloss": "log_loss", "log_loss": "log_loss",
    "rmse": "rmse", "root-mean-squared-error": "rmse", "rmsle": "rmsle", "root-mean-squared-log-error": "rmsle",
    "mean-column-wise-rmsle": "mean_columnwise_rmsle", "mae": "mae", "mean-absolute-error": "mae", "r2": "r2",
    "qwk": "qwk", "quadratic-weighted-kappa": "qwk", "f1": "f1_macro", "macro-f1": "f1_macro", "f1-macro": "f1_macro",
    "micro-f1": "f1_micro", "map@3": "map_at_3", "map-at-3": "map_at_3", "mcrmse": "mcrmse",
}
MEDIA = {".png": "image", ".jpg": "image", ".jpeg": "image", ".tif": "image", ".wav": "audio", ".aif": "audio",
         ".aiff": "audio", ".npy": "timeseries"}


def is_mlebench_folder(path: Path) -> bool:
    return (path / "config.yaml").is_file()


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
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


def _csv_header_and_rows(path: Path, limit: int = 200) -> tuple[list[str], list[list[str]]]:
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.reader(f)
        header = next(reader, [])
        rows = [r for _, r in zip(range(limit), reader)]
    return header, rows


def _count_rows(path: Path) -> int:
    with open(path, "rb") as f:
        return max(sum(1 for _ in f) - 1, 0)


def _infer_modality(public: Path, train_header: list[str], train_rows: list[list[str]], targets: list[str]) -> str:
    for p in public.rglob("*"):
        if p.suffix.lower() in MEDIA:
            return MEDIA[p.suffix.lower()]
    for j, name in enumerate(train_header):
        if name in targets:
            continue
        values = [r[j] for r in train_rows if j < len(r)]
        if values and sum(len(v) for v in values) / len(values) > 40 and sum(" " in v for v in values) > len(values) / 2:
            return "text"
    return "tabular"


def _infer_task_type(metric: str, targets: list[str], answers_path: Path | None) -> str:
    if metric == "mean_columnwise_roc_auc" or metric == "multilabel_log_loss":
        return "multilabel"
    if metric == "qwk":
        return "ordinal"
    if metric in ("rmse", "rmsle", "mae", "r2", "mcrmse", "mean_columnwise_rmsle"):
        return "multi_target_regression" if len(targets) > 1 else "regression"
    if metric == "roc_auc":
        return "binary"
    return "multiclass"


def load_mlebench_folder(folder: str | Path, metric: str | None = None) -> Seed:
    folder = Path(folder)
    cfg_path = folder / "config.yaml"
    cfg = _read_yaml(cfg_path)
    for key in ("id", "name"):
        if not isinstance(cfg.get(key), str):
            raise SeedError(f"{cfg_path}: missing required key {key!r}")
    comp_id = cfg["id"]
    if not ID_RE.match(comp_id):
        raise SeedError(f"{cfg_path}: key 'id' = {comp_id!r} must match [a-z0-9][a-z0-9-]*")
    grader = cfg.get("grader") or {}
    if metric is None:
        name = str(grader.get("name", "")).strip().lower() if isinstance(grader, dict) else ""
        metric = GRADER_METRICS.get(name)
        if metric is None:
            raise SeedError(
                f"{cfg_path}: key 'grader.name' = {name!r} does not map to a known metric",
                hint="pass --metric NAME to `sandmle seeds import`",
            )
    if metric not in METRICS:
        raise SeedError(f"{cfg_path}: metric {metric!r} is not a known metric",
                        hint=f"known: {', '.join(sorted(METRICS))}")
    desc_path = folder / "description.md"
    if not desc_path.is_file():
        raise SeedError(f"{desc_path}: missing (an MLE-bench folder needs description.md)")
    description = desc_path.read_text(encoding="utf-8")

    public, private = find_prepared(folder)
    sample = public / "sample_submission.csv" if public else None
    if sample is None or not sample.is_file():
        candidates = list(folder.rglob("sample_submission*.csv"))
        sample = candidates[0] if candidates else None
    if sample is None:
        raise SeedError(f"{folder}: no sample_submission.csv found (needed to learn the id and target columns)")
    sub_header, _ = _csv_header_and_rows(sample, 1)
    if len(sub_header) < 2:
        raise SeedError(f"{sample}: needs an id column and at least one prediction column")
    id_column = sub_header[0]
    train = (public / "train.csv") if public else None
    train_header, train_rows = _csv_header_and_rows(train) if train and train.is_file() else ([], [])
    if metric == "log_loss" and len(sub_header) > 2:
        # one probability column per class; the label column is in train.csv
        label = [c for c in train_header if c not in sub_header and c != id_column]
        targets = label[-1:] or ["label"]
        class_values = sub_header[1:]
    else:
        targets = sub_header[1:]
        class_values = None
    modality = _infer_modality(public, train_header, train_rows, targets) if public else "tabular"
    columns: list[dict[str, Any]] = [{"name": id_column, "dtype": "text", "role": "id"}]
    for j, name in enumerate(train_header):
        if name == id_column or name in targets:
            continue
        values = [r[j] for r in train_rows if j < len(r) and r[j] != ""]
        dtype = "float" if values and all(re.fullmatch(r"-?[\d.eE+-]+", v) for v in values) else "text"
        columns.append({"name": name, "dtype": dtype, "role": "feature"})
    for t in targets:
        col: dict[str, Any] = {"name": t, "dtype": "category" if class_values else "float", "role": "target"}
        if class_values:
            col["values"] = class_values
        columns.append(col)
    answers = None
    if isinstance(cfg.get("dataset"), dict) and private is not None:
        answers = private / Path(str(cfg["dataset"].get("answers", "test.csv"))).name
    train_size = _count_rows(train) if train and train.is_file() else 1
    test_path = public / "test.csv" if public else None
    test_size = _count_rows(test_path) if test_path and test_path.is_file() else _count_rows(sample)

    leaderboard = None
    lb_path = folder / "leaderboard.csv"
    if lb_path.is_file():
        header, rows = _csv_header_and_rows(lb_path, limit=1_000_000)
        if "score" not in header:
            raise SeedError(f"{lb_path}: needs a 'score' column")
        j = header.index("score")
        leaderboard = []
        for i, r in enumerate(rows, start=2):
            if j < len(r) and r[j] not in ("", "nan", "NaN"):
                try:
                    leaderboard.append(float(r[j]))
                except ValueError:
                    raise SeedError(f"{lb_path}: line {i}: score {r[j]!r} is not a number") from None
    hints: dict[str, Any] = {}
    if class_values:
        hints["n_classes"] = len(class_values)
    return Seed(
        id=comp_id, title=cfg["name"], modality=modality,
        task_type=_infer_task_type(metric, targets, answers), metric=metric,
        lower_is_better=METRICS[metric].lower_is_better, id_column=id_column, target_columns=targets,
        columns=columns, train_size=max(train_size, 1), test_size=max(test_size, 1), description=description,
        origin=f"mlebench:{comp_id}", tags=["mlebench-import"], hints=hints, source_path=str(folder),
        source_format="mlebench", leaderboard=leaderboard,
    )


def env_from_mlebench(folder: str | Path, cache_root: str | Path) -> EnvSpec:
    """An MLE-bench competition folder as an environment: ``public/`` holds the files of ``prepared/public``
    (hard-linked) plus ``description.md``, the answers file is copied to ``private/answers.csv`` with a grading spec; the leaderboard comes from leaderboard.csv."""
    folder = Path(folder).resolve()
    seed = load_mlebench_folder(folder)
    public, private = find_prepared(folder)
    if public is None or private is None:
        raise SandmleError(f"{folder}: an MLE-bench folder needs prepared/public and prepared/private to be graded")
    cfg = _read_yaml(folder / "config.yaml")
    answers_name = Path(str((cfg.get("dataset") or {}).get("answers", "test.csv"))).name
    answers = private / answers_name
    if not answers.is_file():
        candidates = sorted(private.glob("*.csv"))
        if len(candidates) != 1:
            raise SandmleError(f"{folder}: cannot find the answers file {answers}")
        answers = candidates[0]
    sample_cols = (public / "sample_submission.csv").read_text(encoding="utf-8").splitlines()[0].split(",")
    pred_cols = [c.strip() for c in sample_cols[1:]]
    classes = None
    for col in seed.columns:
        if col.get("role") == "target" and col.get("values"):
            classes = list(col["values"])
    spec = GradeSpec(metric=seed.metric, lower_is_better=seed.lower_is_better, id_column=seed.id_column,
                     target_columns=list(seed.target_columns), prediction_columns=pred_cols, classes=classes,
                     task_type=seed.task_type)
    dest = Path(cache_root) / f"mlebench-{seed.id}"
    if dest.exists():
        shutil.rmtree(dest)
    (dest / "private").mkdir(parents=True)
    # real files (hard links where the file system allows): a sandbox copies public/ without following links
    shutil.copytree(public, dest / "public", copy_function=_link_or_copy)
    if not (dest / "public" / "description.md").exists():
        shutil.copyfile(folder / "description.md", dest / "public" / "description.md")
    shutil.copyfile(answers, dest / "private" / "answers.csv")
    (dest / "private" / "grade.json").write_text(json.dumps(spec.to_dict(), indent=2))
    (dest / "env.json").write_text(json.dumps({
        "id": f"mlebench-{seed.id}", "title": seed.title, "modality": seed.modality, "seed_id": None,
        "leaderboard": [{"name": f"kaggle-{i}", "score": s} for i, s in enumerate(seed.leaderboard or [])],
        "source": str(folder)}, indent=2))
    return EnvSpec.from_dir(dest)


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)
