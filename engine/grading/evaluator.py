"""The environment's own evaluator as its grader, run under the sandbox (for an environment whose grading spec says
``grader = "evaluator"``: an imported task of the SandMLE paper whose metric is none of ours).

Every grade of such an environment -- ``sandmle grade``, an episode's final grade, the verifier's ladder, fuzzing
and leaderboard, the exploit audit's confirmations, the score tool on its validation split -- is one sandbox run of a
*grading workspace*: a fresh, private copy of the environment's public files with the answers written beside them
as ``answer.csv`` and the evaluator as ``evaluator.py``, never an agent's workspace; the sandbox gives it the limits
of ``[sandbox]`` and no network. In it :data:`engine.grading.external.RUNNER` runs each submission as
``python evaluator.py --submission_path P`` would run it, in a child forked after the heavy imports, and the
evaluator's JSON gives the score (:func:`engine.grading.external.score_of`). Many submissions share one run.

Which sandbox: the one given, else the one :func:`using` names for the calling context (the verifier and the import
pass theirs), else one for the whole process, started on first use from the settings and closed at exit.
"""

from __future__ import annotations

import atexit
import dataclasses
import json
import threading
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Iterator

import pandas as pd

from ..config import load_settings
from ..envs.layout import GradeSpec
from ..errors import GradingError, InvalidSubmission, SandboxError
from ..sandbox import SandboxBackend, get_backend
from .external import ANSWERS_FILE, EVALUATOR_FILE, RUNNER, TIMEOUT_S, last_line, score_of

#: the sandbox the calling context grades in (see :func:`using`)
_current: ContextVar[SandboxBackend | None] = ContextVar("grading_sandbox", default=None)
_lock = threading.Lock()
_own: list[SandboxBackend] = []
#: the whole run's wall time beyond its submissions' (the runner's start and imports, cold)
RUN_MARGIN_S = 60.0


@contextmanager
def using(sandbox: SandboxBackend) -> Iterator[SandboxBackend]:
    """Grade in ``sandbox`` within this block (this thread's context)."""
    token = _current.set(sandbox)
    try:
        yield sandbox
    finally:
        _current.reset(token)


def _close_own() -> None:
    with _lock:
        while _own:
            _own.pop().close()


def grading_sandbox() -> SandboxBackend:
    """The sandbox evaluators run in here: the context's (:func:`using`), else this process's own."""
    given = _current.get()
    if given is not None:
        return given
    with _lock:
        if not _own:
            _own.append(get_backend(settings=load_settings().sandbox))
            if len(_own) == 1:
                atexit.register(_close_own)
        return _own[0]


def _public(spec: GradeSpec, public: Path | None) -> Path:
    folder = public if public is not None else (spec.home / "public" if spec.home is not None else None)
    if folder is None or not folder.is_dir():
        raise GradingError(f"graded by its own evaluator, but its public files are not at hand ({folder})")
    if not spec.evaluator_code:
        raise GradingError(f"graded by its own evaluator, but {EVALUATOR_FILE} was not read with its grading spec")
    return folder


def run_evaluator(code: str, public: Path, answers: pd.DataFrame | bytes, submissions: dict[str, pd.DataFrame], *,
                  files: dict[str, bytes] | None = None,
                  sandbox: SandboxBackend | None = None) -> dict[str, dict[str, object]]:
    """The evaluator ``code`` on each submission, in one sandbox run of a grading workspace: a copy of ``public``
    with ``files`` (relative path -> bytes) written over it, ``answers`` as ``answer.csv`` and ``code`` as
    ``evaluator.py``. Each submission's raw result: ``rc``, ``stdout``, ``stderr``, ``timed_out``, ``ms``; a run that
    left no results gives each ``rc`` None and the run's own last line. A sandbox that cannot start raises
    :class:`SandboxError`."""
    if not submissions:
        return {}
    box = sandbox or grading_sandbox()
    names = list(submissions)
    jobs: dict[str, object] = {str(i): f"_eval_sub_{i}.csv" for i in range(len(names))}
    jobs["_timeout_s"] = TIMEOUT_S
    with box.open(public, label="grade-evaluator") as ws:
        for rel, data in (files or {}).items():
            ws.write_file(rel, data)
        ws.write_file(ANSWERS_FILE, answers if isinstance(answers, bytes) else answers.to_csv(index=False).encode())
        ws.write_file(EVALUATOR_FILE, code.encode())
        for i, name in enumerate(names):
            ws.write_file(f"_eval_sub_{i}.csv", submissions[name].to_csv(index=False).encode())
        ws.write_file("_eval_jobs.json", json.dumps(jobs).encode())
        wall = RUN_MARGIN_S + TIMEOUT_S * len(names)
        limits = dataclasses.replace(box.default_limits, timeout_s=wall, cpu_s=max(box.default_limits.cpu_s, wall))
        res = ws.run_python(RUNNER, filename="_eval_runner.py", limits=limits)
        try:
            results = dict(json.loads(ws.read_file("_eval_result.json")))
        except (SandboxError, ValueError, TypeError):
            results = {}
    said = last_line(res.stderr_tail) or last_line(res.stdout_tail) or "no output"
    lost = {"rc": None, "stdout": "", "stderr": f"the grading run ended {res.status} ({said})"}
    return {name: results.get(str(i), lost) for i, name in enumerate(names)}


def evaluator_scores(spec: GradeSpec, answers: pd.DataFrame, submissions: dict[str, pd.DataFrame], *,
                     files: dict[str, bytes] | None = None, public: Path | None = None,
                     sandbox: SandboxBackend | None = None) -> dict[str, float | InvalidSubmission]:
    """Each submission's score by the environment's own evaluator, or the :class:`InvalidSubmission` saying in one
    line why it has none; one sandbox run for all (:func:`run_evaluator` over the environment's ``public/``, or
    ``public`` with ``files`` over it: the score tool's validation split)."""
    folder = _public(spec, public)
    results = run_evaluator(str(spec.evaluator_code), folder, answers, submissions, files=files, sandbox=sandbox)
    out: dict[str, float | InvalidSubmission] = {}
    for name, result in results.items():
        try:
            out[name] = score_of(result)
        except InvalidSubmission as exc:
            out[name] = exc
    return out
