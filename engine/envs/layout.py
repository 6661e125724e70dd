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

An environment imported with a grader of its own (the SandMLE paper's ``evaluator.py``, whose metric is none of
ours) says ``"metric": "evaluator", "grader": "evaluator"`` and keeps the program as ``private/evaluator.py``; its
``proxy_metric`` (a metric of ours with the same prediction shape) serves only where a metric must be computed
thousands of times (the verifier's bootstrap, the exploit audit's screening), never as a grade;
``answer_columns`` are the columns of ``answers.csv`` the evaluator reads (see :mod:`engine.grading.evaluator`).

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
from typing import Any, ClassVar, Mapping, Sequence

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
    #: who grades: None, the metric; ``"evaluator"``, the environment's own ``private/evaluator.py`` (``metric``
    #: is then ``"evaluator"`` too), run under the sandbox at every grade
    grader: str | None = None
    #: with a grader of its own: a metric of ours with the same prediction shape, for screening only
    proxy_metric: str | None = None
    #: with a grader of its own: the columns of answers.csv (what a validation answers file must hold)
    answer_columns: list[str] | None = None
    #: not stored: the evaluator's source (read with the spec, so a grade never opens private/ later) and the
    #: environment folder whose public files its grading workspace copies
    evaluator_code: str | None = field(default=None, repr=False, compare=False)
    home: Path | None = field(default=None, repr=False, compare=False)

    #: the one grader of its own there is, its file in private/, and what ``metric`` says for it
    EVALUATOR: ClassVar[str] = "evaluator"
    EVALUATOR_FILE: ClassVar[str] = "evaluator.py"

    @property
    def external(self) -> bool:
        """Graded by the environment's own evaluator, not by a metric of ours."""
        return self.grader == self.EVALUATOR

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out.pop("evaluator_code")
        out.pop("home")
        for key in ("public_files", "grader", "proxy_metric", "answer_columns"):
            if out[key] is None:  # older grade.json files (and generator CONFIGs) stay byte for byte
                out.pop(key)
        return out

    @classmethod
    def load(cls, path: Path) -> "GradeSpec":
        path = Path(path)
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            raise SandmleError(f"{path}: missing grading spec") from None
        spec = cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})
        spec.home = path.parent.parent
        if spec.external:
            code = path.parent / cls.EVALUATOR_FILE
            if not code.is_file():
                raise SandmleError(f"{path}: graded by its own evaluator, but {code} is missing")
            spec.evaluator_code = code.read_text(encoding="utf-8", errors="replace")
        return spec


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
    #: the kind of board ``leaderboard`` is (:data:`engine.grading.thresholds.BOARDS`); None: unknown
    board: str | None = None
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
            board=board_of(meta.get("thresholds"), meta.get("leaderboard", [])) or meta.get("board"),
            split=meta.get("split", "imported"),
        )

    @classmethod
    def from_store(cls, store: Store, env_id: str) -> "EnvSpec":
        row = store.envs.get(env_id)
        if not row["dir"]:
            raise SandmleError(f"environment {env_id} has no files on disk")
        spec = cls.from_dir(row["dir"], env_id=row["id"])
        spec.thresholds = row.get("thresholds") or spec.thresholds
        board = store.envs.leaderboard(env_id)
        spec.leaderboard = [e["score"] for e in board] or spec.leaderboard
        spec.board = board_of(row.get("thresholds"), board) or spec.board
        spec.seed_id = row.get("seed_id")
        spec.modality = row.get("modality", spec.modality)
        spec.title = row.get("title", spec.title)
        spec.split = row.get("split") or spec.split
        return spec


def board_of(thresholds: Mapping[str, Any] | None, entries: Sequence[Mapping[str, Any]]) -> str | None:
    """The kind of an environment's board: what its thresholds say, else what its entries are (the verifier's
    reference scripts and their blends: the 9-entry ``ladder`` board stored before population boards)."""
    if thresholds and thresholds.get("board"):
        return str(thresholds["board"])
    sources = {e.get("source") for e in entries}
    if sources & {"reference", "variant"}:
        return "ladder"
    if "population" in sources:
        return "population"
    if "human" in sources:
        return "human"
    return None


#: the population board's version, recorded in the thresholds of every population board (``"version"``; built by
#: :mod:`engine.synthesis.population`): a board stored by an older one (``population-1`` counted copies of one
#: solution as several entries) is found by ``doctor --deep`` and rebuilt by ``sandmle envs reboard``
BOARD_VERSION = "population-2"
#: the version of a population board whose thresholds record none (stored before versions were recorded)
FIRST_VERSION = "population-1"


def board_outdated(thresholds: Mapping[str, Any] | None) -> str:
    """Why a stored population (or paper) board predates :data:`BOARD_VERSION` -- its version, and what that one
    counted -- else "" (a board of another kind is not this function's to judge)."""
    th = thresholds or {}
    if th.get("board") not in ("population", "paper"):
        return ""
    version = th.get("version") or FIRST_VERSION
    if version == BOARD_VERSION:
        return ""
    return (f"its population board is {version}: copies of one solution (feature sets that build the same matrix, "
            f"a model choice beside its own candidates) count as entries, so its {th.get('entries') or '?'} "
            f"entries and its medals are not counted over distinct solutions")


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
