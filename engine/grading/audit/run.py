"""The exploit audit: can an agent win this environment by reading a file instead of learning?

:func:`audit` (an environment folder + its grading spec → an :class:`AuditReport`) tries, on everything the agent
can read (:mod:`.sources`), every way of reading answers off it (:mod:`.decode`); each promising attempt becomes a
submission scored on the hidden answers. An attempt that reaches the gold threshold or beats the strong reference
(:class:`Bar`) is a finding naming the file and the column; so is a public file the grading spec does not declare.
A feature of ``test.csv`` that ``train.csv`` also has is the agent's to use: it is a finding only when it gives the
answers away on the test rows and not on the training rows (a monotone transform of the label planted in the test
set).

An environment graded by its own evaluator (a program, too slow for thousands of attempts) is screened with its
proxy metric (:func:`engine.grading.score.screening_spec`): an attempt half way from the constant to the strong
reference's proxy score goes on to its evaluator, which decides -- one sandbox run for every attempt screened in --
against the gold threshold and the strong reference in the evaluator's own scores.
"""

from __future__ import annotations

import fnmatch
import hashlib
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Callable

import numpy as np
import pandas as pd

from ...envs.layout import GradeSpec
from ...errors import InvalidSubmission
from ..metrics import fast_fn, get_metric
from ..score import (answers_matrix, norm_labels, prediction_matrix, read_frame, score_many, score_submission,
                     screening_spec)
from .decode import Attempt, Pool, Target, label_attempts, numeric_attempts
from .sources import MAX_BYTES, Candidate, Public, candidates, media_columns, norm_keys

#: the files every environment's public/ holds
STANDARD_FILES = ("description.md", "train.csv", "test.csv", "sample_submission.csv")
#: the name of the target "the class of each row" (answers with one probability column per class)
LABEL_VIEW = "the class of each row"
#: without a gold threshold or a strong reference: a finding when an attempt closes this share of that gap
FALLBACK_SHARE = 0.8
#: how sure a one-hot submission built from labels is of each label
CONFIDENCE = 0.9
#: the rows of a training table larger than the sources' size limit that are read (priors, the training side)
TRAIN_ROWS = 200_000
#: probabilities read off a file are kept this far from 0 and 1 (a log loss is not ruined by one wrong row)
CLIP = 0.025
#: the attempts of one file and column confirmed by the grader at most (best first)
PER_KEY = 3
#: graded by its own evaluator: an attempt this far towards the proxy's bar goes on to the evaluator
SCREEN_SHARE = 0.5


@dataclass
class Finding:
    kind: str  #: leak | undeclared | error (the audit could not run: fails closed)
    file: str  #: relative to the environment folder: ``public/crm_export.json``
    column: str | None = None
    how: str = ""
    score: float | None = None
    bar: str = ""

    def line(self) -> str:
        if self.kind == "undeclared":
            return f"undeclared public file {self.file} ({self.how})"
        if self.kind == "error":
            return f"the audit could not run ({self.how}): not verified"
        return (f"{self.file} column {self.column!r} ({self.how}) scores {self.score:.4g} on the hidden answers "
                f"({self.bar}): the answers can be read instead of learned")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Bar:
    """When an attempt scores like a strong solution: at the gold threshold, or better than the strong reference;
    without either, when it closes :data:`FALLBACK_SHARE` of the gap from the constant to the metric's best."""

    trivial: float
    lower_is_better: bool
    gold: float | None = None
    strong: float | None = None
    best: float | None = None

    def gap(self, score: float) -> float:
        return (self.trivial - score) if self.lower_is_better else (score - self.trivial)

    def closes(self, score: float) -> float:
        """The share of the gap from the constant to the metric's best that ``score`` closes."""
        if self.best is None or self.best == self.trivial:
            return 0.0
        return self.gap(score) / abs(self.best - self.trivial)

    def share(self, score: float) -> float:
        """How far ``score`` goes from the constant towards the nearest bar (1: it reaches it)."""
        bars = [b for b in (self.gold, self.strong) if b is not None]
        if not bars and self.best is not None:
            bars = [self.trivial + FALLBACK_SHARE * (self.best - self.trivial)]
        lead = max([self.gap(b) for b in bars] + [0.0]) if bars else 0.0
        nearest = min((self.gap(b) for b in bars if self.gap(b) > 0), default=lead)
        return self.gap(score) / nearest if nearest > 0 else 0.0

    def reached(self, score: float) -> bool:
        if self.gap(score) <= 0:
            return False
        if self.gold is not None and (score <= self.gold if self.lower_is_better else score >= self.gold):
            return True
        if self.strong is not None and (score < self.strong if self.lower_is_better else score > self.strong):
            return True
        return self.gold is None and self.strong is None and self.closes(score) >= FALLBACK_SHARE

    def describe(self) -> str:
        parts = [f"gold {self.gold:.4g}" if self.gold is not None else "",
                 f"strong reference {self.strong:.4g}" if self.strong is not None else ""]
        text = ", ".join(p for p in parts if p)
        return text or f"{FALLBACK_SHARE:.0%} of the way from the constant {self.trivial:.4g} to {self.best}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class AuditReport:
    findings: list[Finding] = field(default_factory=list)
    attempts: int = 0
    candidates: int = 0
    #: the best attempts (where, how, score), for the record
    best: list[dict[str, Any]] = field(default_factory=list)
    #: the closest a file or pattern (not a feature) came: its share of the way from the constant to the bar
    closest: float | None = None
    bar: dict[str, Any] = field(default_factory=dict)
    declared: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    wall_s: float = 0.0
    #: the public files audited → their hash (not stored: a store path compares them to see what changed since)
    files: dict[str, str] = field(default_factory=dict, repr=False)

    @property
    def ok(self) -> bool:
        return not self.findings

    @property
    def leaks(self) -> list[Finding]:
        return [f for f in self.findings if f.kind == "leak"]

    def summary(self) -> str:
        """One line: what was tried, what was found, how close the nearest file came to the bar."""
        tried = f"{self.candidates} candidate columns, {self.attempts} attempts"
        if self.findings:
            return f"exploit audit: {len(self.findings)} finding(s) in {tried}: {self.reason()}"
        near = f"; the closest came {self.closest:.0%} of the way to the bar" if self.closest is not None else ""
        return f"exploit audit: nothing found in {tried}{near}"

    def reason(self) -> str:
        """The first finding (a leak before an undeclared file), as the one-line reason of a rejection."""
        first = (self.leaks or self.findings)[0]
        extra = len(self.findings) - 1
        return first.line() + (f" (+{extra} more finding{'s' if extra > 1 else ''})" if extra else "")

    def to_dict(self) -> dict[str, Any]:
        out = {**asdict(self), "findings": [f.to_dict() for f in self.findings]}
        out.pop("files")
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "AuditReport":
        fields = {k: v for k, v in data.items() if k in cls.__dataclass_fields__ and k != "findings"}
        return cls(**fields, findings=[Finding(**f) for f in data.get("findings", [])])


# ---------------------------------------------------------------------------------------------- declared files
def declared_files(env_dir: str | Path, spec: GradeSpec | None = None) -> list[str]:
    """The public files an environment may hold, as patterns relative to ``public/``: the grading spec's
    ``public_files`` when it declares them, else the standard files and the folders of the media its rows point
    to (``test/*.png``)."""
    if spec is not None and spec.public_files is not None:
        return list(spec.public_files)
    public = Path(env_dir) / "public"
    patterns = list(STANDARD_FILES)
    for name in ("train.csv", "test.csv"):
        if not (public / name).is_file():
            continue
        frame = pd.read_csv(public / name, nrows=200)
        for c in media_columns(frame, public):
            for p in sorted({PurePosixPath(v) for v in frame[c].dropna().astype(str)}):
                pattern = f"{p.parent.as_posix()}/*{p.suffix}" if p.parent.as_posix() != "." else f"*{p.suffix}"
                if pattern not in patterns:
                    patterns.append(pattern)
    return patterns


def declare_all(public: str | Path) -> list[str]:
    """Patterns declaring every file now in ``public`` (an imported competition declares what it ships): top-level
    files by name, folders as ``folder/**``."""
    public = Path(public)
    return sorted(p.name if p.is_file() else f"{p.name}/**" for p in public.iterdir() if not p.name.startswith("."))


def undeclared(env_dir: Path, patterns: list[str]) -> list[str]:
    public = env_dir / "public"
    out = []
    for p in sorted(public.rglob("*")):
        rel = p.relative_to(public).as_posix()
        if p.is_file() and not any(fnmatch.fnmatchcase(rel, pat) for pat in patterns):
            out.append(f"public/{rel}")
    return out


def changed_files(env_dir: str | Path, before: dict[str, str]) -> set[str]:
    """Public files (relative to the environment folder) added or changed since ``before`` (:func:`file_hashes`)."""
    now = file_hashes(env_dir)
    return {rel for rel, h in now.items() if before.get(rel) != h}


#: files hashed by content (smaller, not media); the rest by size and modification time
HASH_BYTES = 2**20
MEDIA_SUFFIXES = (".png", ".jpg", ".jpeg", ".tif", ".tiff", ".bmp", ".gif", ".wav", ".aif", ".aiff", ".mp3", ".flac",
                  ".npy", ".npz")


def file_hashes(env_dir: str | Path) -> dict[str, str]:
    """Every public file (relative to the environment folder) → its content hash, or its size and modification
    time for media and large files (cheap on a real competition of 100,000 images)."""
    env_dir = Path(env_dir)
    out = {}
    for p in sorted((env_dir / "public").rglob("*")):
        if not p.is_file():
            continue
        st = p.stat()
        rel = p.relative_to(env_dir).as_posix()
        if st.st_size <= HASH_BYTES and p.suffix.lower() not in MEDIA_SUFFIXES:
            out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
        else:
            out[rel] = f"{st.st_size}:{st.st_mtime_ns}"
    return out


# ---------------------------------------------------------------------------------------------- the grid
class Grid:
    """The answers and a base submission as the metric's matrices: an attempt replaces the columns it predicts
    and is scored with the metric's fast function; a finding is confirmed by the grader itself."""

    def __init__(self, spec: GradeSpec, answers: pd.DataFrame, base: pd.DataFrame):
        self.spec, self.answers = spec, answers
        self.Y = answers_matrix(spec, answers)
        self.P0 = prediction_matrix(spec, base, check_labels=False)
        self.fn = fast_fn(spec.metric)
        self.metric = get_metric(spec.metric)
        self.kind = self.metric.prediction

    def score(self, P: np.ndarray) -> float | None:
        try:
            value = float(self.fn(self.Y, P))
        except (ValueError, TypeError, ZeroDivisionError):
            return None
        return value if np.isfinite(value) else None

    def apply(self, target: Target, values: np.ndarray, P: np.ndarray | None = None) -> np.ndarray:
        P = (self.P0 if P is None else P).copy()
        cols = self.spec.prediction_columns
        if target.name == LABEL_VIEW:
            k = len(cols)
            onehot = (np.asarray(values, dtype=object)[:, None] == np.asarray(target.classes, dtype=object)[None, :])
            return np.where(onehot, CONFIDENCE, (1 - CONFIDENCE) / max(k - 1, 1)).astype(float)
        j = cols.index(target.name)
        if target.kind == "label":
            if self.metric.ordinal:
                P = P.astype(float)
                P[:, j] = pd.to_numeric(pd.Series(values), errors="coerce").fillna(float(P[0, j])).to_numpy()
            elif self.kind == "ranking":
                rest = [c for c in (target.classes or [])]
                P[:, j] = [" ".join([v] + [c for c in rest if c != v][:2]) for v in values]
            else:
                P[:, j] = values
            return P
        v = np.asarray(values, dtype=float)
        if self.metric.probabilities or self.kind == "proba":
            v = np.clip(v, CLIP, 1 - CLIP)
        elif self.metric.non_negative:
            v = np.maximum(v, 0.0)
        P = P.astype(float)
        P[:, j] = v
        return P

    def frame(self, P: np.ndarray) -> pd.DataFrame:
        """The submission a matrix stands for (what the grader reads)."""
        out = pd.DataFrame({self.spec.id_column: self.answers[self.spec.id_column].to_numpy()})
        for j, c in enumerate(self.spec.prediction_columns):
            out[c] = P[:, j]
        return out

    def confirm(self, P: np.ndarray) -> float | None:
        try:
            return score_submission(self.spec, self.answers, self.frame(P))
        except InvalidSubmission:
            return None


# ---------------------------------------------------------------------------------------------- targets
def constant_base(spec: GradeSpec, answers: pd.DataFrame, train: pd.DataFrame) -> pd.DataFrame:
    """The constant submission every attempt starts from (and is compared with): the training rows' mean or
    commonest label, uniform probabilities — never the sample submission, which is itself audited."""
    out = pd.DataFrame({spec.id_column: answers[spec.id_column].to_numpy()})
    kind = get_metric(spec.metric).prediction
    for c in spec.prediction_columns:
        if kind == "proba":
            out[c] = 1.0 / len(spec.prediction_columns)
        elif c in train.columns and kind in ("label", "ranking"):
            out[c] = train[c].mode().iloc[0]
        elif c in train.columns:
            out[c] = float(pd.to_numeric(train[c], errors="coerce").mean())
        else:
            out[c] = answers[c].mode().iloc[0]
    return out


def _label_target(spec: GradeSpec, name: str, truth: np.ndarray, train_labels: pd.Series | None,
                  fill: np.ndarray, classes: list[str] | None) -> Target:
    if classes is None:
        pool = list(truth) + (list(norm_labels(train_labels.dropna())) if train_labels is not None else [])
        classes = sorted(set(pool))
    prior = np.ones(len(classes))
    if train_labels is not None and len(train_labels.dropna()):
        counts = pd.Series(norm_labels(train_labels.dropna())).value_counts()
        prior = np.array([float(counts.get(c, 0)) for c in classes]) + 1e-9
    return Target(name, "label", truth, classes, prior, fill)


def targets(spec: GradeSpec, answers: pd.DataFrame, train: pd.DataFrame, grid: Grid) -> list[Target]:
    """What the audit tries to recover: each prediction column, and the class of each row for one probability
    column per class."""
    kind = get_metric(spec.metric).prediction
    classes = [str(c) for c in norm_labels(pd.Series(list(spec.classes)))] if spec.classes else None
    out = []
    for j, c in enumerate(spec.prediction_columns):
        tr = train[c] if c in train.columns else None
        if kind in ("label", "ranking"):
            truth = norm_labels(answers[c])
            fill = np.asarray(norm_labels(pd.Series(grid.P0[:, j])), dtype=object) if kind == "label" else \
                np.full(len(truth), truth[0], dtype=object)
            out.append(_label_target(spec, c, truth, tr, fill, classes))
        else:
            truth = pd.to_numeric(answers[c], errors="coerce").to_numpy(dtype=float)
            prior = np.sort(pd.to_numeric(tr, errors="coerce").dropna().to_numpy(dtype=float)) if tr is not None \
                else None
            out.append(Target(c, "numeric", truth, None, prior, grid.P0[:, j].astype(float)))
    if kind == "proba" and len(spec.target_columns) == 1:
        cols = spec.prediction_columns
        truth = np.asarray(cols, dtype=object)[answers[cols].to_numpy(dtype=float).argmax(axis=1)]
        tr = train[spec.target_columns[0]] if spec.target_columns[0] in train.columns else None
        names = [str(c) for c in norm_labels(pd.Series(cols))]
        truth = np.asarray(norm_labels(pd.Series(truth)), dtype=object)
        major = pd.Series(norm_labels(tr.dropna())).mode().iloc[0] if tr is not None and len(tr.dropna()) else names[0]
        out.append(_label_target(spec, LABEL_VIEW, truth, tr, np.full(len(truth), major, dtype=object), names))
    return out


def _text_labels(spec: GradeSpec, tgts: list[Target]) -> set[str] | None:
    """The tokens a run of labels in free text would be made of (None: numbers)."""
    labels = {c for t in tgts if t.kind == "label" for c in (t.classes or [])}
    return labels or None


# ---------------------------------------------------------------------------------------------- the training side
class TrainSide:
    """The same attempts on the training rows (for the features an agent may use): what a column gives away there
    is what a learner can learn; more on the test rows means the test set was written differently."""

    def __init__(self, spec: GradeSpec, train: pd.DataFrame, base: pd.DataFrame):
        self.ok = False
        kind = get_metric(spec.metric).prediction
        cols = spec.prediction_columns
        ids = [f"r{i}" for i in range(len(train))]
        if kind == "proba" and len(spec.target_columns) == 1 and spec.target_columns[0] in train.columns:
            labels = norm_labels(train[spec.target_columns[0]].fillna(""))
            answers = pd.DataFrame({c: (labels == str(n)).astype(float) for c, n in
                                    zip(cols, norm_labels(pd.Series(cols)))})
        elif all(c in train.columns for c in cols) and not train[cols].isna().any().any():
            answers = train[cols].reset_index(drop=True).copy()
        else:
            return
        spec_tr = GradeSpec(**{**spec.to_dict(), "id_column": "_row"})
        answers.insert(0, "_row", ids)
        first = base.iloc[[0] * len(train)].reset_index(drop=True)
        first = first.drop(columns=[spec.id_column]).assign(_row=ids)[["_row", *cols]]
        try:
            self.grid = Grid(spec_tr, answers, first)
        except (InvalidSubmission, ValueError, KeyError):
            return
        self.ids = pd.Index(ids)
        self.targets = {t.name: t for t in targets(spec_tr, answers, train, self.grid)}
        self.trivial = self.grid.score(self.grid.P0)
        self.ok = self.trivial is not None

    def score(self, att: Attempt) -> float | None:
        """The attempt's decoder on the training rows, scored against the training labels."""
        cand, target = att.candidate, self.targets.get(att.target)
        if cand.train_values is None or target is None:
            return None
        mirror = Candidate(cand.source, cand.column, cand.train_values.set_axis(self.ids), legit=True)
        family = att.decoder.removesuffix(", reversed")
        make = numeric_attempts if target.kind == "numeric" else label_attempts
        same = [a for a in make(mirror, target) if a.decoder.removesuffix(", reversed") == family]
        scores = [s for a in same if (s := self.grid.score(self.grid.apply(target, a.values))) is not None]
        if not scores:
            return None
        return min(scores) if self.grid.spec.lower_is_better else max(scores)


def _legit_leak(att: Attempt, score: float, bar: Bar, train_side: TrainSide | None) -> bool:
    """A feature the agent may use is a finding only when it gives away on the test rows what it does not on the
    training rows (less than half its lead over the constant there): the test set was written differently. (A
    feature that is as good on both is an easy task, which the verifier's saturation check judges.)"""
    if train_side is None or not train_side.ok or train_side.trivial is None:
        return False
    s_tr = train_side.score(att)
    if s_tr is None:
        return False
    lead_tr = (train_side.trivial - s_tr) if bar.lower_is_better else (s_tr - train_side.trivial)
    return lead_tr < 0.5 * bar.gap(score)


# ---------------------------------------------------------------------------------------------- the audit
def _read_view(env_dir: Path, spec: GradeSpec) -> tuple[pd.DataFrame, Public]:
    public = env_dir / "public"
    answers = read_frame(env_dir / "private" / "answers.csv", spec.id_column)
    train = pd.DataFrame()
    if (public / "train.csv").is_file():  # a full-size competition's training table: its first rows are enough
        big = (public / "train.csv").stat().st_size > MAX_BYTES
        train = pd.read_csv(public / "train.csv", low_memory=False, nrows=TRAIN_ROWS if big else None)
    test = read_frame(public / "test.csv", spec.id_column) if (public / "test.csv").is_file() else pd.DataFrame()
    view = Public(env_dir, spec.id_column, pd.Index(norm_keys(answers[spec.id_column])), test, train,
                  media_columns(test, public))
    return answers, view


def audit(env_dir: str | Path, spec: GradeSpec, *, gold: float | None = None, strong: float | None = None,
          only: set[str] | None = None, declared: list[str] | None = None,
          screen_strong: float | None = None) -> AuditReport:
    """Try to recover the hidden answers of the environment in ``env_dir`` from its public files; the report's
    findings name each file and column that gives them away (an attempt that reaches ``gold`` or beats ``strong``,
    see :class:`Bar`) and each public file that ``declared`` (default: :func:`declared_files`) does not cover.
    ``only``: audit just these public files (paths relative to ``env_dir``), e.g. a description written after
    the rest was audited. An audit that cannot run is a finding too (it fails closed). ``screen_strong``: for an
    environment graded by its own evaluator, the strong reference's score by its proxy metric (the screening bar)."""
    start = time.perf_counter()
    try:
        return _audit(Path(env_dir), spec, Bars(gold, strong, screen_strong), only, declared)
    except Exception as exc:  # noqa: BLE001 - whatever stops the audit, the environment is not verified
        first = str(exc).splitlines()[0][:200] if str(exc) else ""
        return AuditReport(findings=[Finding("error", "", how=f"{type(exc).__name__}: {first}")],
                           wall_s=round(time.perf_counter() - start, 4))


@dataclass
class Bars:
    """What the audit was given to judge by: the gold threshold and the strong reference (in the grader's scores);
    for an environment graded by its own evaluator, the strong reference's proxy score too."""

    gold: float | None
    strong: float | None
    screen_strong: float | None = None


def _audit(env_dir: Path, spec: GradeSpec, bars: Bars, only: set[str] | None,
           declared: list[str] | None) -> AuditReport:
    start = time.perf_counter()
    answers, view = _read_view(env_dir, spec)
    report = AuditReport(declared=declared if declared is not None else declared_files(env_dir, spec))
    report.files = file_hashes(env_dir)
    for rel in undeclared(env_dir, report.declared):
        if only is None or rel in only:
            report.findings.append(Finding("undeclared", rel, how="the grading spec declares "
                                           + ", ".join(report.declared)))
    screen = screening_spec(spec)
    grid = Grid(screen, answers, constant_base(screen, answers, view.train))
    trivial = grid.score(grid.P0)
    if trivial is None:
        raise InvalidSubmission("the exploit audit cannot score a constant submission (a broken grading spec)")
    bar = Bar(trivial, screen.lower_is_better, None if spec.external else bars.gold,
              bars.screen_strong if spec.external else bars.strong, get_metric(screen.metric).best)
    report.bar = bar.to_dict()
    tgts = targets(screen, answers, view.train, grid)
    cands = list(candidates(view, _text_labels(screen, tgts), only))
    report.candidates = len(cands)
    tried = _try(grid, tgts, cands, report)

    def screened(score: float) -> bool:
        return bar.share(score) >= SCREEN_SHARE if spec.external else bar.reached(score)

    train_side = TrainSide(screen, view.train, grid.frame(grid.P0)) if any(
        a.candidate.legit and screened(s) for a, _, s, _ in tried) else None
    picks = _picks(tried, bar, screened, train_side)
    combined = _combined(grid, tgts, tried, bar, screened)
    leaks = _confirmed(spec, grid, bars, bar, picks, combined, len(tgts) > 1)
    report.findings = list(leaks.values()) + report.findings
    report.best = [{"where": a.where, "how": a.decoder, "target": t.name, "score": round(s, 6)}
                   for a, t, s, _ in sorted(tried, key=lambda x: -bar.gap(x[2]))[:5]]
    report.closest = round(max([bar.share(s) for a, _, s, _ in tried if not a.candidate.legit] + [0.0]), 4)
    report.skipped = view.skipped
    report.wall_s = round(time.perf_counter() - start, 4)
    return report


def _try(grid: Grid, tgts: list[Target], cands: list[Candidate],
         report: AuditReport) -> list[tuple[Attempt, Target, float, np.ndarray]]:
    """Every screened attempt on every target, scored with the metric's fast function."""
    tried = []
    pool = Pool(cands)
    for target in tgts:
        for att in pool.screen(target):
            P = grid.apply(target, att.values)
            score = grid.score(P)
            report.attempts += 1
            if score is not None:
                tried.append((att, target, score, P))
    return tried


Tried = list[tuple[Attempt, Target, float, np.ndarray]]


def _picks(tried: Tried, bar: Bar, screened: Callable[[float], bool], train_side: TrainSide | None) -> Tried:
    """The attempts the grader itself must judge: screened in (a feature only where it gives away more on the test
    rows than on the training rows), best first, at most :data:`PER_KEY` per file and column."""
    picks: Tried = []
    per_key: dict[tuple[str, str], int] = {}
    for att, target, score, P in sorted(tried, key=lambda x: -bar.gap(x[2])):
        key = (att.candidate.source, att.candidate.column)
        if per_key.get(key, 0) >= PER_KEY or not screened(score):
            continue
        if att.candidate.legit and not _legit_leak(att, score, bar, train_side):
            continue
        per_key[key] = per_key.get(key, 0) + 1
        picks.append((att, target, score, P))
    return picks


def _graded(spec: GradeSpec, grid: Grid, Ps: list[np.ndarray]) -> list[float | None]:
    """The grader's own scores of attempts (None: invalid); an evaluator grades them all in one sandbox run."""
    if not spec.external:
        return [grid.confirm(P) for P in Ps]
    scores = score_many(spec, grid.answers, {str(i): grid.frame(P) for i, P in enumerate(Ps)})
    return [None if isinstance(v, InvalidSubmission) else v for v in (scores[str(i)] for i in range(len(Ps)))]


def _confirmed(spec: GradeSpec, grid: Grid, bars: Bars, bar: Bar, picks: Tried,
               combined: tuple[np.ndarray, list[Attempt], int] | None, several: bool) -> dict[tuple[str, str], Finding]:
    """The findings: each file and column whose attempt the grader confirms at the bar (in the grader's own scores:
    for an environment graded by its own evaluator, the constant is scored by it too, for the gap)."""
    if not picks and combined is None:
        return {}
    Ps = [P for *_, P in picks] + ([combined[0]] if combined is not None else [])
    real_bar = bar
    if spec.external:
        trivial, *graded = _graded(spec, grid, [grid.P0, *Ps])
        if trivial is None:
            raise InvalidSubmission("the environment's evaluator refuses a constant submission: the exploit audit "
                                    "cannot judge its attempts")
        real_bar = Bar(trivial, spec.lower_is_better, bars.gold, bars.strong, None)
    else:
        graded = _graded(spec, grid, Ps)
    leaks: dict[tuple[str, str], Finding] = {}
    for (att, target, _, _), real in zip(picks, graded):
        key = (att.candidate.source, att.candidate.column)
        if key not in leaks and real is not None and real_bar.reached(real):
            how = att.decoder + (f", for {target.name!r}" if several else "")
            leaks[key] = Finding("leak", att.candidate.source, att.candidate.column, how, real, real_bar.describe())
    real = graded[-1] if combined is not None else None
    if not leaks and combined is not None and real is not None and real_bar.reached(real):
        _, used, n_columns = combined
        files = " + ".join(dict.fromkeys(a.candidate.source for a in used))
        leaks[(files, "")] = Finding("leak", files, ", ".join(a.candidate.column for a in used),
                                     f"one column per prediction column ({len(used)} of {n_columns})", real,
                                     real_bar.describe())
    return leaks


def _combined(grid: Grid, tgts: list[Target], tried: Tried, bar: Bar,
              screened: Callable[[float], bool]) -> tuple[np.ndarray, list[Attempt], int] | None:
    """Several prediction columns, each read off its best column (not a feature): together, do they win? The
    submission to confirm, the attempts it is made of and the number of prediction columns."""
    columns = [t for t in tgts if t.name != LABEL_VIEW]
    if len(columns) < 2:
        return None
    P, used = grid.P0, []
    for target in columns:
        mine = [(a, s) for a, t, s, _ in tried if t is target and not a.candidate.legit]
        if not mine:
            continue
        att, _ = max(mine, key=lambda x: bar.gap(x[1]))
        P = grid.apply(target, att.values, P)
        used.append(att)
    score = grid.score(P) if used else None
    if score is None or not screened(score):
        return None
    return P, used, len(columns)
