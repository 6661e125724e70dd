"""The environment layout and its typed spec — the contract between synthesis, grading and the agents.

On disk (``<data dir>/envs/<env id>/``, MLE-bench-like)::

    public/            description.md, train.csv, test.csv (no labels), sample_submission.csv, media files
    private/           answers.csv (id column + the same prediction columns as the submission),
                       grade.json (the grading spec below)
    generator.py       the program that produced the data (re-runnable: same RNG seed → same file hashes)
    env.json           blueprint, scenario, rng seed, leaderboard, thresholds (a copy of the store row)

An environment is built in a private folder ``envs/.build-<id>-<random>/`` (with an ``.owner`` file: the
building process) and renamed to ``envs/<id>/`` once stored, so a crash or a second process never leaves or
touches a half-made ``envs/<id>/``.

``grade.json``::

    {"metric": "log_loss", "lower_is_better": true, "id_column": "id",
     "target_columns": ["author"],            # what the task predicts (train.csv columns)
     "prediction_columns": ["EAP", "HPL", "MWS"],  # submission columns after the id = answers.csv columns
     "classes": ["EAP", "HPL", "MWS"] | null, "task_type": "multiclass",
     "public_files": ["description.md", "train.csv", "test.csv", "sample_submission.csv", "test/*.png"]}

``public_files`` declares what ``public/`` may hold (absent: the standard files and the media the rows point to);
the exploit audit (:mod:`engine.grading.audit`) reports anything else and tries every file for the answers.

A submission is graded by aligning it on the id column with ``answers.csv`` and applying the metric to the
``prediction_columns`` of both. ``private/`` never enters a sandbox that policy code runs in.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from store import Store, owners

from ..errors import SandmleError

#: the store split of real competitions: evaluation only, never selected by training or by ``all``
REAL_SPLIT = "real"


@dataclass
class GradeSpec:
    metric: str
    lower_is_better: bool
    id_column: str
    target_columns: list[str]
    prediction_columns: list[str]
    classes: list[Any] | None = None
    task_type: str = ""
    #: the files ``public/`` may hold, as patterns relative to it (``test/*.png``); None: the standard files and
    #: the media the rows point to. Anything else there is reported by the exploit audit.
    public_files: list[str] | None = None

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        if out["public_files"] is None:  # older grade.json files (and generator CONFIGs) stay byte for byte
            out.pop("public_files")
        return out

    @classmethod
    def load(cls, path: Path) -> "GradeSpec":
        try:
            data = json.loads(Path(path).read_text())
        except FileNotFoundError:
            raise SandmleError(f"{path}: missing grading spec") from None
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})


@dataclass
class EnvSpec:
    id: str
    dir: Path
    grade: GradeSpec
    modality: str = "tabular"
    title: str = ""
    seed_id: str | None = None
    thresholds: dict[str, float] | None = None
    leaderboard: list[float] = field(default_factory=list)
    #: the store split it belongs to: ``real`` for real competitions (evaluation only, never trained on)
    split: str = "imported"

    @property
    def public(self) -> Path:
        return self.dir / "public"

    @property
    def private(self) -> Path:
        return self.dir / "private"

    @property
    def answers(self) -> Path:
        return self.private / "answers.csv"

    @classmethod
    def from_dir(cls, path: str | Path, env_id: str | None = None) -> "EnvSpec":
        path = Path(path)
        grade = GradeSpec.load(path / "private" / "grade.json")
        meta: dict[str, Any] = {}
        if (path / "env.json").is_file():
            meta = json.loads((path / "env.json").read_text())
        return cls(
            id=env_id or meta.get("id") or path.name, dir=path, grade=grade,
            modality=meta.get("modality", "tabular"), title=meta.get("title", path.name),
            seed_id=meta.get("seed_id"), thresholds=meta.get("thresholds"),
            leaderboard=[float(e["score"]) for e in meta.get("leaderboard", [])],
            split=meta.get("split", "imported"),
        )

    @classmethod
    def from_store(cls, store: Store, env_id: str) -> "EnvSpec":
        row = store.envs.get(env_id)
        if not row["dir"]:
            raise SandmleError(f"environment {env_id} has no files on disk")
        spec = cls.from_dir(row["dir"], env_id=row["id"])
        spec.thresholds = row.get("thresholds") or spec.thresholds
        spec.leaderboard = [e["score"] for e in store.envs.leaderboard(env_id)] or spec.leaderboard
        spec.seed_id = row.get("seed_id")
        spec.modality = row.get("modality", spec.modality)
        spec.title = row.get("title", spec.title)
        spec.split = row.get("split") or spec.split
        return spec


def envs_root(store: Store) -> Path:
    path = store.data_dir / "envs"
    path.mkdir(parents=True, exist_ok=True)
    return path


#: the name prefix of an environment folder being built
BUILD_PREFIX = ".build-"
#: the exploit audit's cache of outside folders' reference runs, beside the folders it audited
AUDIT_CACHE = ".audit"


def new_build_dir(root: Path, env_id: str) -> Path:
    """A private folder under ``root`` to build environment ``env_id`` in, owned by this process."""
    folder = Path(tempfile.mkdtemp(prefix=f"{BUILD_PREFIX}{env_id}-", dir=root))
    (folder / ".owner").write_text(owners.tag())
    return folder
