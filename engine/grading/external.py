"""An environment's own evaluator as its grader: the contract of the SandMLE paper's ``evaluator.py`` and what its
output means to a grade.

The paper's score tool runs ``python evaluator.py --submission_path P`` with the working directory in the task's
``public/`` (where ``answer.csv`` is) and reads one JSON object from its standard output: ``score``,
``is_lower_better``, ``gold_threshold``, ``silver_threshold``, ``bronze_threshold``, ``median_threshold``. A non-zero
exit, output that is not such an object, or a score that is not a finite number makes the submission invalid;
:func:`score_of` turns each into one line (the last line of a traceback, never the traceback). A run that left no
result at all (``rc`` None: the grading run died or ran out of time as a whole) is a :class:`GradingFault`, the
grader's fault.

This module needs only the standard library: the standalone grader of an export carries it unchanged
(:mod:`engine.exchange.grader_source`), beside a stand-in for :mod:`engine.grading.evaluator`, which runs the
evaluator under the sandbox.
"""

from __future__ import annotations

import json
import math
from typing import Any

from ..errors import GradingFault, InvalidSubmission

#: the file names of the contract: the program, the answers it reads from its working directory
EVALUATOR_FILE, ANSWERS_FILE = "evaluator.py", "answer.csv"
#: the longest an evaluator may take on one submission (seconds)
TIMEOUT_S = 120.0
#: characters of an evaluator's message kept in a grade's one-line error
MESSAGE_CHARS = 200
#: how a grade's error names the evaluator
PREFIX = "the environment's evaluator"


def last_line(text: str) -> str:
    """The last non-empty line of ``text`` (an exception's message ends a traceback), cut to a readable length."""
    lines = [ln.strip() for ln in (text or "").strip().splitlines() if ln.strip()]
    return lines[-1][:MESSAGE_CHARS] if lines else ""


def output_object(stdout: str) -> dict[str, Any] | None:
    """The JSON object an evaluator printed: its whole output, else its last line (progress lines may come first)."""
    text = (stdout or "").strip()
    if not text:
        return None
    for candidate in (text, text.splitlines()[-1]):
        try:
            data = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(data, dict):
            return data
    return None


def score_of(result: dict[str, Any]) -> float:
    """The score of one evaluator run (``rc``, ``stdout``, ``stderr``, ``timed_out``), or
    :class:`InvalidSubmission` with one line saying why there is none."""
    if result.get("timed_out"):
        raise InvalidSubmission(f"{PREFIX} timed out after {result.get('timeout_s', TIMEOUT_S):g} s")
    rc, stdout, stderr = result.get("rc"), str(result.get("stdout") or ""), str(result.get("stderr") or "")
    if rc is None:  # it never ran: the grading run itself failed (the grader's fault, not the submission's)
        raise GradingFault(f"{PREFIX} could not run: {last_line(stderr) or 'no result'}")
    data = output_object(stdout)
    if rc != 0:
        told = data.get("error") if data is not None else None  # a JSON report saying why (an exported grader's)
        if isinstance(told, str) and told.startswith(PREFIX):
            raise InvalidSubmission(told[:MESSAGE_CHARS * 2])
        said = (last_line(told) if isinstance(told, str) else "") or last_line(stderr) or last_line(stdout) or \
            "no output"
        raise InvalidSubmission(f"{PREFIX} exited {rc}: {said}")
    if data is None:
        shown = last_line(stdout) or "nothing"
        raise InvalidSubmission(f"{PREFIX} printed no JSON object (it printed: {shown})")
    value = data.get("score")
    score = math.nan
    if isinstance(value, (int, float, str)) and not isinstance(value, bool):
        try:
            score = float(value)
        except ValueError:
            pass
    if not math.isfinite(score):
        raise InvalidSubmission(f"{PREFIX} gave no finite score (score: {str(value)[:60]})")
    return score


def direction_of(data: dict[str, Any]) -> bool | None:
    """``is_lower_better`` as the paper's score tool reads it (a bool, a number, or text such as "true")."""
    value = data.get("is_lower_better")
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return value != 0
    if isinstance(value, str) and value.strip().lower() in ("true", "1", "yes", "false", "0", "no"):
        return value.strip().lower() in ("true", "1", "yes")
    return None


def thresholds_of(data: dict[str, Any]) -> dict[str, float] | None:
    """The medal thresholds an evaluator printed (the paper's, kept beside ours), None when it printed none."""
    out = {}
    for name in ("gold", "silver", "bronze", "median"):
        value = data.get(f"{name}_threshold")
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(float(value)):
            out[name] = float(value)
    return out or None


#: runs inside the grading workspace: every job of ``_eval_jobs.json`` as ``python evaluator.py --submission_path
#: P`` would run it -- ``evaluator.py`` as ``__main__``, that argv, this working directory -- in a child forked
#: from this process, which has already imported what the evaluator names of numpy, pandas, scikit-learn's metrics
#: and scipy (a fresh interpreter per job would pay ~1 s of imports each); each child's output goes to files, a
#: child past its time is killed
RUNNER = r"""
import json, os, runpy, signal, sys, time, traceback
_source = open("evaluator.py", errors="replace").read()
for _name, _named in (("numpy", "numpy"), ("pandas", "pandas"), ("sklearn.metrics", "sklearn"),
                      ("scipy.stats", "scipy")):
    if _named in _source:  # only what the evaluator names: sklearn.metrics alone is seconds to import cold
        try:
            __import__(_name)
        except Exception:
            pass
try:  # pandas imports its CSV reader and join code on first use: once here, not once per child
    _frame = sys.modules["pandas"].read_csv("answer.csv")
    _frame.merge(_frame, on=list(_frame.columns[:1]))
except Exception:
    pass
jobs = json.load(open("_eval_jobs.json"))
timeout = float(jobs.pop("_timeout_s"))
out = {}
for name, sub in jobs.items():
    paths = ("_eval_%s.out" % name, "_eval_%s.err" % name)
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            fds = [os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644) for p in paths]
            sys.stdout.flush(); sys.stderr.flush()
            os.dup2(fds[0], 1); os.dup2(fds[1], 2)
            sys.argv = ["evaluator.py", "--submission_path", sub]
            try:
                runpy.run_path("evaluator.py", run_name="__main__")
                code = 0
            except SystemExit as exc:
                if exc.code is None or isinstance(exc.code, int):
                    code = exc.code or 0
                else:
                    print(exc.code, file=sys.stderr)
                    code = 1
            except BaseException:
                traceback.print_exc()
                code = 1
        finally:
            try:
                sys.stdout.flush(); sys.stderr.flush()
            finally:
                os._exit(code)
    timed_out, status = False, 0
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() - start > timeout:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            timed_out = True
            break
        time.sleep(0.002)
    read = [open(p, errors="replace").read()[-50000:] if os.path.exists(p) else "" for p in paths]
    rc = os.waitstatus_to_exitcode(status) if not timed_out else -9
    out[name] = {"rc": rc, "stdout": read[0], "stderr": read[1][-4000:], "timed_out": timed_out,
                 "timeout_s": timeout, "ms": round((time.monotonic() - start) * 1000, 2)}
json.dump(out, open("_eval_result.json", "w"))
"""
