"""Recording a synthesized environment (its :class:`~.draft.Draft`): ``env.json`` beside its files, and the store
row with its files (hashes), leaderboard, thresholds and verification, in one transaction. A draft is recorded
whatever state a failed step left it in (files half written or unreadable), so a rejected attempt is always
stored with its reason. An environment built from a real dataset keeps where each column came from: the source
dataset and the map of the task's column names to the source's own (``verification.source``, ``env.json``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, Mapping

import pandas as pd

from store import Store

from ..envs.storage import file_rows
from .diversity import fingerprint
from .draft import Draft


def _count_rows(path: Path) -> int | None:
    """Rows of a CSV the generator wrote; None when there is none or it cannot be read."""
    if not path.is_file():
        return None
    try:
        return len(pd.read_csv(path, usecols=[0]))
    except (ValueError, OSError, UnicodeDecodeError):  # pandas' parser errors are ValueErrors
        return None


def source_of(draft: Draft) -> dict[str, Any] | None:
    """The real dataset a grounded draft's rows come from and its column names: task name → the source's
    column(s) (None for an environment whose rows are not a real dataset's)."""
    recipe = (draft.scenario.recipe if draft.scenario is not None else None) or {}
    plan = recipe.get("grounded")
    if not isinstance(plan, dict):
        return None
    return {"dataset": plan.get("key"), "columns": plan.get("names") or {}}


def store_environment(store: Store, draft: Draft, *, seed: Mapping[str, Any], run_id: str, backend: str, status: str,
                      reason: str) -> str:
    """Write env.json, move the build folder to its place (``final_dir``) and turn the reserved row into the
    environment's row with its files and leaderboard, in one transaction."""
    env_dir, final_dir = draft.env_dir, draft.final_dir
    env_dir.mkdir(parents=True, exist_ok=True)
    blueprint, spec, scenario, verdict = draft.blueprint, draft.spec, draft.scenario, draft.verdict
    verified = verdict if status == "verified" else None
    board = verified.leaderboard if verified is not None else []
    thresholds = verified.thresholds if verified is not None else None
    verification = {"report": verdict.report if verdict is not None else {}, "proof": draft.proof,
                    "knobs": draft.program.knobs.model_dump() if draft.program and draft.program.knobs else None}
    source = source_of(draft)
    if source is not None:
        verification["source"] = source
    row = {
        "id": draft.env_id, "seed_id": seed["id"], "run_id": run_id,
        "title": scenario.title if scenario else draft.title or f"{seed['title']} (rejected draft)",
        "status": status,
        "reason": reason or None, "split": "train",
        "modality": blueprint.modality if blueprint else seed["modality"],
        "task_type": blueprint.task_type if blueprint else seed["task_type"],
        "metric": spec.metric if spec else seed["metric"],
        "lower_is_better": int(spec.lower_is_better if spec else seed["lower_is_better"]),
        "id_column": spec.id_column if spec else seed["id_column"],
        "target_columns": spec.target_columns if spec else seed["target_columns"],
        "n_train": _count_rows(env_dir / "public" / "train.csv"), "n_test": _count_rows(env_dir / "public" / "test.csv"),
        "backend": backend, "rng_seed": draft.data_seed, "blueprint": blueprint.model_dump() if blueprint else {},
        "scenario": scenario.for_prompt() if scenario else {}, "thresholds": thresholds,
        "verification": verification, "dir": str(final_dir),
        "fingerprint": fingerprint(scenario) if scenario else None,
    }
    meta = {k: v for k, v in row.items() if k != "verification"}
    meta["leaderboard"] = board
    meta["grade"] = spec.to_dict() if spec else None
    if source is not None:
        meta["source"] = source
    (env_dir / "env.json").write_text(json.dumps(meta, indent=2, default=str, sort_keys=True) + "\n")
    (env_dir / ".owner").unlink(missing_ok=True)
    files = file_rows(env_dir)
    if final_dir.exists():  # left by an older version under an id this run has reserved: not another run's
        shutil.rmtree(final_dir)
    env_dir.rename(final_dir)  # a crash before the row below leaves a pending row + folder: cleared at open
    store.envs.add(row, files=files, leaderboard=board, replace=True)
    return draft.env_id
