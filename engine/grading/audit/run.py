"""The exploit audit: can an agent win this environment by reading a file instead of learning?

:func:`audit` (an environment folder + its grading spec → an :class:`AuditReport`) tries, on everything the agent
can read (:mod:`.sources`), every way of reading answers off it (:mod:`.decode`); each promising attempt becomes a
submission scored on the hidden answers. An attempt that reaches the lowest rewarded tier (the bronze threshold) or
beats the strong reference
(:class:`Bar`) is a finding naming the file and the column; so is a public file the grading spec does not declare.
A feature of ``test.csv`` that ``train.csv`` also has is the agent's to use: it is a finding only when it gives the
answers away on the test rows and not on the training rows (a monotone transform of the label planted in the test
set).

An environment graded by its own evaluator (a program, too slow for thousands of attempts) is screened with its
proxy metric (:func:`engine.grading.score.screening_spec`): an attempt half way from the constant to the strong
reference's proxy score goes on to its evaluator, which decides -- one sandbox run for every attempt screened in --
against the bronze threshold and the strong reference in the evaluator's own scores.

This module is the orchestration; the report is :mod:`.report`, the declared files and hashes :mod:`.files`, the
grid and its targets :mod:`.grid`, the training side :mod:`.trainside`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from ...envs.layout import GradeSpec
from ...errors import InvalidSubmission
from ..metrics import get_metric
from ..score import read_frame, score_many, screening_spec
from .decode import Attempt, Pool, Target
# the report, the declared files and the grid live in modules of their own; what callers import from here stays here
from .files import STANDARD_FILES, changed_files, declare_all, declared_files, file_hashes, undeclared
from .grid import LABEL_VIEW, Grid, _text_labels, constant_base, targets
from .lookup import Lookup, lookup_findings
from .report import Bar, AuditReport, Finding
from .sources import MAX_BYTES, candidates
from .trainside import TrainSide, _legit_leak
from .view import Candidate, Public, media_columns, norm_keys

__all__ = ["STANDARD_FILES", "AuditReport", "Bar", "Finding", "audit", "changed_files", "declare_all",
           "declared_files", "file_hashes"]

#: the rows of a training table larger than the sources' size limit that are read (priors, the training side)
TRAIN_ROWS = 200_000
#: the attempts of one file and column confirmed by the grader at most (best first)
PER_KEY = 3
#: graded by its own evaluator: an attempt this far towards the proxy's bar goes on to the evaluator
SCREEN_SHARE = 0.5


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


def audit(env_dir: str | Path, spec: GradeSpec, *, medal: float | None = None, strong: float | None = None,
          only: set[str] | None = None, declared: list[str] | None = None,
          screen_strong: float | None = None, lookup: Lookup | None = None) -> AuditReport:
    """Try to recover the hidden answers of the environment in ``env_dir`` from its public files; the report's
    findings name each file and column that gives them away (an attempt that reaches ``medal``, the bronze threshold,
    or beats ``strong``,
    see :class:`Bar`) and each public file that ``declared`` (default: :func:`declared_files`) does not cover.
    ``only``: audit just these public files (paths relative to ``env_dir``), e.g. a description written after
    the rest was audited. An audit that cannot run is a finding too (it fails closed). ``screen_strong``: for an
    environment graded by its own evaluator, the strong reference's score by its proxy metric (the screening bar).
    ``lookup``: what the lookup probe found from inside the agent's sandbox (:func:`.lookup.run_lookup`): a dataset
    holding the test rows is a finding (``reachable``), and its columns are tried as answers like a file's."""
    start = time.perf_counter()
    try:
        return _audit(Path(env_dir), spec, Bars(medal, strong, screen_strong), only, declared, lookup)
    except Exception as exc:  # noqa: BLE001 - whatever stops the audit, the environment is not verified
        first = str(exc).splitlines()[0][:200] if str(exc) else ""
        return AuditReport(findings=[Finding("error", "", how=f"{type(exc).__name__}: {first}")],
                           wall_s=round(time.perf_counter() - start, 4))


@dataclass
class Bars:
    """What the audit was given to judge by: the bronze threshold and the strong reference (in the grader's scores);
    for an environment graded by its own evaluator, the strong reference's proxy score too."""

    medal: float | None
    strong: float | None
    screen_strong: float | None = None


def _audit(env_dir: Path, spec: GradeSpec, bars: Bars, only: set[str] | None,
           declared: list[str] | None, lookup: Lookup | None = None) -> AuditReport:
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
        try:  # the metric's own reason, where it gave one
            why = f": {screen.metric} says {grid.fn(grid.Y, grid.P0)}"
        except (ValueError, TypeError, ZeroDivisionError) as exc:
            why = f": {screen.metric}: {exc}"
        raise InvalidSubmission(f"the exploit audit cannot score a constant submission (a broken grading spec{why})")
    bar = Bar(trivial, screen.lower_is_better, None if spec.external else bars.medal,
              bars.screen_strong if spec.external else bars.strong, get_metric(screen.metric).best)
    report.bar = bar.to_dict()
    tgts = targets(screen, answers, view.train, grid)
    cands = list(candidates(view, _text_labels(screen, tgts), only))
    if lookup is not None:
        report.lookup = lookup.to_dict()
        cands += lookup.candidates(view.test_ids)
        report.findings += lookup_findings(lookup)
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
    report.findings += [Finding("unaudited", rel, how=how) for rel, how in view.unread]
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
        real_bar = Bar(trivial, spec.lower_is_better, bars.medal, bars.strong, None)
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
