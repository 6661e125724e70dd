"""The ``score`` tool: a validation split carved from the TRAINING rows, graded outside the sandbox.

Built from two inputs only: the environment's ``public/`` folder (what the agent already sees) and its grading
spec (metric, id and prediction column names — no answers). It never receives the path of ``private/``, so it
cannot read the hidden test answers; ``tests/test_agents_score.py`` proves it with an audit hook.

Layout written into the workspace (``val/``), mirroring the public files::

    val/train.csv               training rows minus the held-out ones (all columns)
    val/test.csv                the held-out rows with test.csv's columns (no targets)
    val/sample_submission.csv   the held-out ids with the sample submission's columns
    val/description.md, <media> relative links to the public files (same relative paths work)

The agent writes ``val/submission.csv`` (predictions for ``val/test.csv``) and calls ``score``.

An environment graded by its own evaluator (an imported task of the paper whose metric is none of ours) is scored
by that evaluator on the validation split, never on the hidden test answers: its grading workspace (a copy of
``public/``, not the agent's) gets the split's ``train.csv``, ``test.csv`` and ``sample_submission.csv`` in place of
the real ones and the held-out rows' labels as ``answer.csv`` (the columns the evaluator reads, taken from the
training rows; where the training rows lack one, the score tool is unavailable and says why).
"""

from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..envs.layout import GradeSpec
from ..errors import InvalidSubmission
from ..grading.evaluator import evaluator_scores
from ..grading.score import metric_of, score_submission
from ..sandbox import SandboxBackend

VAL_DIR = "val"
VAL_SUBMISSION = "val/submission.csv"
_CSV_NAMES = ("train.csv", "test.csv", "sample_submission.csv")


@dataclass
class ValidationSplit:
    files: dict[str, bytes]  #: relative path in the workspace → content
    links: dict[str, str]  #: relative link path → relative target
    answers: pd.DataFrame | None  #: held-out labels in the submission's format (None: no score tool)
    n_train: int
    n_val: int
    reason: str | None = None  #: why the score tool is unavailable


def _seed_of(text: str) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)


def _answers_for(spec: GradeSpec, held: pd.DataFrame, pred_cols: list[str]) -> pd.DataFrame | None:
    """The held-out rows' labels in the submission's column format, or None when they cannot be derived."""
    idc = spec.id_column
    by_lower = {str(c).lower(): c for c in held.columns}
    wanted = [c for c in spec.answer_columns or [] if c != idc] if spec.external else pred_cols
    if all(c.lower() in by_lower for c in wanted):  # the targets themselves (``Label`` is ``label``)
        out = held[[idc, *(by_lower[c.lower()] for c in wanted)]]
        return out.set_axis([idc, *wanted], axis=1).reset_index(drop=True)
    if spec.external and sorted(wanted) != sorted(pred_cols):
        return None  # the evaluator reads a column of the answers the training rows do not hold
    targets = [c for c in spec.target_columns if c in held.columns]
    if len(targets) == 1 and metric_of(spec).prediction in ("proba", "value") and len(pred_cols) > 1:
        labels = held[targets[0]].astype(str).str.replace(r"\.0$", "", regex=True)
        out = pd.DataFrame({idc: held[idc].to_numpy()})
        for c in pred_cols:
            out[c] = (labels.to_numpy() == str(c)).astype(int)
        return out
    return None


def carve(public: Path, spec: GradeSpec, *, key: str = "", fraction: float = 0.2,
          seed: int | None = None) -> ValidationSplit:
    """Hold out ``fraction`` of the training rows (deterministic per ``key``, e.g. the env id, unless ``seed``)."""
    public = Path(public)
    idc = spec.id_column
    train = pd.read_csv(public / "train.csv", dtype={idc: str})
    test_cols = list(pd.read_csv(public / "test.csv", nrows=0, dtype={idc: str}).columns)
    sample_path = public / "sample_submission.csv"
    sample = pd.read_csv(sample_path, nrows=5, dtype={idc: str}) if sample_path.is_file() else None
    pred_cols = list(spec.prediction_columns)
    if idc not in train.columns:
        train.insert(0, idc, [f"val{i:05d}" for i in range(len(train))])
    n = len(train)
    n_val = int(round(n * fraction))
    n_val = max(1, min(n_val, n - 2)) if n >= 3 else 0
    rng = np.random.default_rng(_seed_of(f"{key}:{n}") if seed is None else seed)
    order = rng.permutation(n)
    held = train.iloc[np.sort(order[:n_val])]
    rest = train.iloc[np.sort(order[n_val:])]
    files: dict[str, bytes] = {}

    def put(name: str, df: pd.DataFrame) -> None:
        buf = io.StringIO()
        df.to_csv(buf, index=False)
        files[f"{VAL_DIR}/{name}"] = buf.getvalue().encode()

    put("train.csv", rest)
    put("test.csv", held[[c for c in test_cols if c in held.columns]])
    sub = pd.DataFrame({idc: held[idc].to_numpy()})
    for c in pred_cols:
        sub[c] = sample[c].iloc[0] if sample is not None and c in sample.columns and len(sample) else 0
    put("sample_submission.csv", sub)
    links = {f"{VAL_DIR}/{p.name}": f"../{p.name}" for p in sorted(public.iterdir())
             if p.name not in _CSV_NAMES and p.name != VAL_DIR}
    answers = _answers_for(spec, held, pred_cols) if n_val else None
    reason = None
    if n_val == 0:
        reason = "too few training rows to hold any out"
    elif answers is None and spec.external:
        missing = [c for c in spec.answer_columns or [] if c.lower() not in {str(k).lower() for k in train.columns}]
        reason = (f"the environment's own evaluator reads answer column(s) {missing} that the training rows do not "
                  "hold, so no validation answers can be made (it is never run on the hidden test answers)")
    elif answers is None:
        reason = "the training rows do not hold the submission's columns"
    return ValidationSplit(files=files, links=links, answers=answers, n_train=len(rest), n_val=n_val, reason=reason)


def _validation_files(split: ValidationSplit) -> dict[str, bytes]:
    """The split's files as an evaluator finds a task's: train.csv, test.csv, sample_submission.csv at the top."""
    return {rel.removeprefix(f"{VAL_DIR}/"): data for rel, data in split.files.items()}


def score_validation(spec: GradeSpec, split: ValidationSplit, submission_csv: bytes | None, *,
                     public: Path | None = None, sandbox: SandboxBackend | None = None) -> str:
    """The score tool's observation: the validation score, or why the submission cannot be scored. (An environment
    graded by its own evaluator: it runs on the split in ``sandbox``, over a copy of ``public``.)"""
    metric = metric_of(spec)
    direction = "lower is better" if spec.lower_is_better else "higher is better"
    if split.answers is None:
        return f"score tool unavailable: {split.reason}"
    if submission_csv is None:
        return (f"no {VAL_SUBMISSION} yet: write predictions for {VAL_DIR}/test.csv "
                f"({split.n_val} held-out training rows) to {VAL_SUBMISSION}, then call score")
    try:
        sub = pd.read_csv(io.BytesIO(submission_csv), dtype={spec.id_column: str})
    except Exception as exc:  # noqa: BLE001 - any parse failure is the agent's to fix
        return f"invalid {VAL_SUBMISSION}: not a readable CSV ({str(exc).splitlines()[0]})"
    answers = split.answers.astype({spec.id_column: str})
    try:
        if spec.external:
            got = evaluator_scores(spec, answers, {"val": sub}, files=_validation_files(split), public=public,
                                   sandbox=sandbox)["val"]
            if isinstance(got, InvalidSubmission):
                raise got
            value = got
        else:
            value = score_submission(spec, answers, sub)
    except InvalidSubmission as exc:
        return f"invalid {VAL_SUBMISSION}: {exc}"
    return f"validation {metric.name} = {value:.6g} ({direction}; {split.n_val} held-out training rows)"


def parse_score(observation: str) -> float | None:
    """The number in a score observation (None when it reported a problem)."""
    if not observation.startswith("validation "):
        return None
    try:
        return float(observation.split("=", 1)[1].split("(", 1)[0].strip())
    except (IndexError, ValueError):
        return None
