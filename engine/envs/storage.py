"""Environments on disk and in the store: the files of an environment with their hashes, export as an MLE-bench
competition folder, delete, regenerate from its generator and compare hashes. (A synthesized environment is
recorded by :mod:`engine.synthesis.record`.)"""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

from store import Store, sha256_file
from store.envs import EnvironmentRow

from ..errors import SandmleError
from .tree import require_plain_tree


def file_rows(env_dir: Path) -> list[dict[str, Any]]:
    """Every file of an environment with its role, sha256 and size (paths relative to the env dir)."""
    rows = []
    for p in sorted(env_dir.rglob("*")):
        if not p.is_file():
            continue
        rel = p.relative_to(env_dir).as_posix()
        role = ("public" if rel.startswith("public/") else "private" if rel.startswith("private/")
                else "generator" if rel == "generator.py" else "other")
        rows.append({"path": rel, "role": role, "sha256": sha256_file(p), "size": p.stat().st_size})
    return rows


def env_dir_of(store: Store, env_id: str) -> Path:
    folder = store.envs.get(env_id)["dir"]
    if not folder or not Path(folder).is_dir():
        raise SandmleError(f"environment {env_id} has no files on disk ({folder})")
    return Path(folder)


def export_env(store: Store, env_id: str, dest: str | Path) -> Path:
    """An MLE-bench-style competition folder: config.yaml, description.md, prepared/public, prepared/private,
    leaderboard.csv (plus generator.py and env.json)."""
    row = store.envs.get(env_id)
    src = env_dir_of(store, env_id)
    dest = Path(dest)
    if dest.exists() and any(dest.iterdir()):
        raise SandmleError(f"{dest}: exists and is not empty", hint="give a new folder")
    require_plain_tree(src, f"environment {env_id}")  # before anything is written
    (dest / "prepared").mkdir(parents=True, exist_ok=True)
    shutil.copytree(src / "public", dest / "prepared" / "public")
    shutil.copytree(src / "private", dest / "prepared" / "private")
    shutil.copy2(src / "public" / "description.md", dest / "description.md")
    for name in ("generator.py", "env.json"):
        if (src / name).is_file():
            shutil.copy2(src / name, dest / name)
    config = {
        "id": env_id, "name": row["title"], "competition_type": "simple", "awards_medals": True,
        "prizes": None, "description": "description.md",
        "dataset": {"answers": "prepared/private/answers.csv", "sample_submission": "prepared/public/sample_submission.csv"},
        "grader": {"name": row["metric"], "grade_fn": "engine.grading.grade:grade"},
        "preparer": "generator.py", "lower_is_better": bool(row["lower_is_better"]),
        "sandmle": {"seed_id": row["seed_id"], "status": row["status"], "rng_seed": row["rng_seed"],
                    "thresholds": row["thresholds"]},
    }
    (dest / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    with open(dest / "leaderboard.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["teamName", "score", "rng_seed", "source"])
        for e in store.envs.leaderboard(env_id):
            w.writerow([e["name"], e["score"], e["rng_seed"], e["source"]])
    return dest


def delete_env(store: Store, env_id: str) -> EnvironmentRow:
    """Delete the row (files, leaderboard cascade) and the folder under the data dir."""
    row = store.envs.delete(env_id)
    folder = row.get("dir")
    if folder and Path(folder).is_dir() and Path(folder).resolve().is_relative_to((store.data_dir / "envs").resolve()):
        shutil.rmtree(folder)
    return row


#: files synthesis writes beside the generator's output (the description and the grading spec)
PIPELINE_FILES = ("public/description.md", "private/grade.json")


def regenerate(env_dir: str | Path, out: str | Path | None = None, rng_seed: int | None = None) -> dict[str, str]:
    """Re-run an environment's generator.py (a plain subprocess; the code is ours, stored with the env) into
    ``out`` and return {relative path: sha256} of the data it wrote (not :data:`PIPELINE_FILES`)."""
    env_dir = Path(env_dir)
    meta = json.loads((env_dir / "env.json").read_text())
    seed = rng_seed if rng_seed is not None else meta["rng_seed"]
    out = Path(out) if out else Path(tempfile.mkdtemp(prefix="regen-"))
    proc = subprocess.run([sys.executable, str(env_dir / "generator.py"), "--out", str(out), "--seed", str(seed)],
                          capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise SandmleError(f"generator.py failed: {proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else proc.returncode}")
    return {p.relative_to(out).as_posix(): sha256_file(p) for p in sorted(out.rglob("*"))
            if p.is_file() and p.relative_to(out).as_posix() not in PIPELINE_FILES}


