"""A real competition as an environment: an MLE-bench competition folder graded like any environment.

The environment lives under ``<data dir>/envs-imported/mlebench-<id>/``: ``public/`` holds the files of
``prepared/public`` (hard links) plus ``description.md``, ``private/`` the answers and the grading spec. It belongs
to the split ``real`` (evaluation only: never selected by training or by ``all``). Its metric is the grader's, or
an explicit ``--metric``, or the one a ``seeds import --metric`` recorded for the folder; its known classes are
the training labels plus the answers' (a submitted label outside them is invalid).

Every competition passes the exploit audit (:mod:`engine.grading.audit`) against its own leaderboard's bronze
threshold before it is used (one without a leaderboard gets a population board when it is evaluated:
:mod:`engine.eval.boards`): one whose public files give the answers away is refused, naming the file and the
column (its public files are what it declares; the report is cached under ``envs-imported/.audit/``).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from store import Store

from ..envs.layout import AUDIT_CACHE, REAL_SPLIT, EnvSpec, GradeSpec
from ..envs.tree import require_plain_tree
from ..errors import ExploitFound, SandmleError
from ..grading.audit import audit_env, declare_all, require_clean
from ..grading.metrics import get_metric
from .mlebench import csv_head, distinct_values, find_prepared, load_mlebench_folder, read_yaml


def _stored_metric(store: Store | None, comp_id: str, folder: Path) -> str | None:
    """The metric a ``seeds import --metric`` recorded for this competition folder."""
    row = store.seeds.find(comp_id) if store is not None else None
    if row and row.get("source_format") == "mlebench" and row.get("source_path") == str(folder):
        return row["metric"]
    return None


def _answers_file(private: Path, configured: str) -> Path:
    answers = private / Path(configured).name
    if answers.is_file():
        return answers
    candidates = sorted(private.glob("*.csv"))
    if len(candidates) != 1:
        raise SandmleError(f"{private}: cannot find the answers file {answers.name}")
    return candidates[0]


def env_from_mlebench(folder: str | Path, cache_root: str | Path, *, metric: str | None = None,
                      store: Store | None = None, meta: Path | None = None) -> EnvSpec:
    """One competition folder as a gradable environment (see the module docstring). ``metric`` overrides the
    grader; without it, the metric a previous ``seeds import --metric`` stored for the folder applies."""
    folder = Path(folder).resolve()
    meta = Path(meta).resolve() if meta is not None else folder
    # before anything is read, copied or declared: a link in public/ would become agent-visible (and exported)
    for tree in dict.fromkeys((folder, meta)):
        require_plain_tree(tree, "an MLE-bench competition folder")
    cfg = read_yaml(meta / "config.yaml")
    stored = _stored_metric(store, str(cfg.get("id")), folder)
    seed = load_mlebench_folder(folder, metric, stored_metric=stored, meta=meta)
    public, private = find_prepared(folder)
    if public is None or private is None:
        raise SandmleError(f"{folder}: not prepared (needs prepared/public and prepared/private)",
                           hint=f"run `mlebench prepare -c {seed.id}`")
    answers = _answers_file(private, str((cfg.get("dataset") or {}).get("answers", "test.csv")))
    header, _ = csv_head(public / "sample_submission.csv", 1)
    predictions = header[1:]
    target = next((c for c in seed.columns if c["role"] == "target"), {})
    classes = target.get("values")
    if classes and get_metric(seed.metric).prediction == "label":
        # a label is valid when the training data or the answers hold it; anything else is invalid
        answer_columns = csv_head(answers, 0)[0]
        found = {v for c in predictions if c in answer_columns for v in distinct_values(answers, c) or []}
        classes = list(classes) + sorted(found - set(classes))
    spec = GradeSpec(metric=seed.metric, lower_is_better=seed.lower_is_better, id_column=seed.id_column,
                     target_columns=list(seed.target_columns), prediction_columns=predictions, classes=classes,
                     task_type=seed.task_type, public_files=sorted({*declare_all(public), "description.md"}))
    env_id = f"mlebench-{seed.id}"
    dest = Path(cache_root) / env_id
    if dest.exists():
        shutil.rmtree(dest)
    (dest / "private").mkdir(parents=True)
    # real files (hard links where the file system allows): a sandbox copies public/ without following links
    shutil.copytree(public, dest / "public", copy_function=_link_or_copy)
    if not (dest / "public" / "description.md").exists():
        (dest / "public" / "description.md").write_text(seed.description, encoding="utf-8")
    shutil.copyfile(answers, dest / "private" / "answers.csv")
    (dest / "private" / "grade.json").write_text(json.dumps(spec.to_dict(), indent=2))
    (dest / "env.json").write_text(json.dumps({
        "id": env_id, "title": seed.title, "modality": seed.modality, "seed_id": None, "split": REAL_SPLIT,
        "leaderboard": [{"name": f"kaggle-{i}", "score": s, "source": "human"} for i, s in enumerate(seed.leaderboard or [])],
        # a real leaderboard of people: the rank on it is HumanRank (without one: a population board, engine.eval.boards)
        "board": "human" if seed.leaderboard else None,
        "source": str(folder)}, indent=2))
    env = EnvSpec.from_dir(dest)
    try:
        require_clean(env, audit_env(env, cache=Path(cache_root) / AUDIT_CACHE), "competition")
    except ExploitFound:
        shutil.rmtree(dest, ignore_errors=True)
        raise
    return env


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)
