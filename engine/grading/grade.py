"""Grade reports with MLE-bench's fields: one submission file, graded outside any agent's sandbox (an environment
graded by its own evaluator has that program run in a grading workspace of its own: :mod:`.evaluator`).

``grade(env, submission_path)`` never raises for a bad submission: the reason goes into ``error`` and
``valid_submission`` is false. It raises only for a broken environment (no answers, no grading spec) and when the
grading itself failed (:class:`~engine.errors.GradingFault`, or the grading sandbox's :class:`SandboxError`):
faults of the grader, which must never read as the submission's.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..envs.layout import EnvSpec
from ..errors import GradingError, GradingFault, InvalidSubmission
from .score import read_frame, score_submission
from .thresholds import Thresholds, board_rank, rank_name, thresholds


@dataclass
class GradeReport:
    competition_id: str
    score: float | None
    valid_submission: bool
    submission_exists: bool
    gold_medal: bool = False
    silver_medal: bool = False
    bronze_medal: bool = False
    any_medal: bool = False
    above_median: bool = False
    gold_threshold: float | None = None
    silver_threshold: float | None = None
    bronze_threshold: float | None = None
    median_threshold: float | None = None
    is_lower_better: bool = False
    error: str | None = None
    #: 1 − (position − 1)/N against the environment's leaderboard (None without a board or a valid score):
    #: HumanRank on a real leaderboard, the rank among reference solutions on a population board (``rank_name``)
    rank: float | None = None
    #: the kind of board (:data:`engine.grading.thresholds.BOARDS`) and its size
    board: str | None = None
    board_entries: int | None = None
    submission_path: str | None = None
    created_at: str = field(default_factory=lambda: _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "GradeReport":
        if "rank" not in data and "human_rank" in data:  # reports stored before boards were named
            data = {**data, "rank": data["human_rank"]}
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})

    @property
    def rank_name(self) -> str:
        """What :attr:`rank` is: HumanRank on a real leaderboard, else the rank among N reference solutions."""
        return rank_name(self.board, self.board_entries)

    @property
    def medal(self) -> str | None:
        for name in ("gold", "silver", "bronze"):
            if getattr(self, f"{name}_medal"):
                return name
        return None


def env_thresholds(env: EnvSpec) -> Thresholds | None:
    """The environment's medal thresholds: stored ones when present, else computed from its leaderboard."""
    lib = env.grade.lower_is_better
    if env.thresholds and all(k in env.thresholds for k in ("gold", "silver", "bronze", "median")):
        return Thresholds.from_dict({"board": env.board, **env.thresholds}, lib)
    if env.leaderboard:
        return thresholds(env.leaderboard, lib, env.board)
    return None


#: a submission over ``SAMPLE_FACTOR`` x the sample submission + ``FLOOR_BYTES`` is refused before it is read
SAMPLE_FACTOR = 20
FLOOR_BYTES = 16 * 2**20


def submission_limit(public: Path) -> int:
    """The largest submission read or copied for an environment whose public files are in ``public``."""
    sample = Path(public) / "sample_submission.csv"
    return SAMPLE_FACTOR * (sample.stat().st_size if sample.is_file() else 0) + FLOOR_BYTES


def too_large(size: int, limit: int) -> str:
    return f"submission too large ({size / 2**20:.1f} MB, limit {limit / 2**20:.1f} MB)"


def _blank(env: EnvSpec, submission_path: str | Path | None) -> GradeReport:
    th = env_thresholds(env)
    return GradeReport(
        competition_id=env.id, score=None, valid_submission=False, submission_exists=False,
        is_lower_better=env.grade.lower_is_better,
        gold_threshold=th.gold if th else None, silver_threshold=th.silver if th else None,
        bronze_threshold=th.bronze if th else None, median_threshold=th.median if th else None,
        submission_path=str(submission_path) if submission_path else None,
        board=env.board if env.leaderboard or th else None, board_entries=len(env.leaderboard) or None,
    )


def oversize_report(env: EnvSpec, size: int, submission_path: str | Path | None = None) -> GradeReport:
    """The report of a submission left unread because it is over :func:`submission_limit`."""
    report = _blank(env, submission_path)
    report.submission_exists = True
    report.error = too_large(size, submission_limit(env.public))
    return report


def grade(env: EnvSpec, submission_path: str | Path | None) -> GradeReport:
    """Score ``submission_path`` against the environment's hidden answers and place it on the board."""
    spec = env.grade
    th = env_thresholds(env)
    report = _blank(env, submission_path)
    if submission_path is None:
        report.error = "no submission.csv was produced"
        return report
    if not Path(submission_path).is_file():
        report.error = f"{submission_path}: no such file"
        return report
    size = Path(submission_path).stat().st_size
    if size > submission_limit(env.public):
        return oversize_report(env, size, submission_path)
    report.submission_exists = True
    if not env.answers.is_file():
        raise GradingError(f"environment {env.id}: missing {env.answers}")
    answers = read_frame(env.answers, spec.id_column)
    try:
        submission = read_frame(submission_path, spec.id_column)
        score = score_submission(spec, answers, submission)
    except GradingFault:
        raise  # the grader's fault: no grade at all, not an invalid submission
    except InvalidSubmission as exc:
        report.error = str(exc)
        return report
    report.score = score
    report.valid_submission = True
    if th is not None:
        medal = th.medal(score)
        report.gold_medal, report.silver_medal, report.bronze_medal = (medal == "gold", medal == "silver",
                                                                        medal == "bronze")
        report.any_medal = medal is not None
        report.above_median = th.above_median(score)
    if env.leaderboard:
        report.rank = board_rank(score, env.leaderboard, spec.lower_is_better)
    return report
