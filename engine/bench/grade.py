"""`sandmle bench grade`: what a grade costs when an environment is graded by its own evaluator (an imported task of
the paper's layout whose metric is none of ours) against one of our metrics, side by side on the same data.

One synthesized regression environment (procedural backend, in a temporary store) is exported in the paper's layout,
its evaluator replaced by a weighted absolute error (a metric we do not have) and imported: the import keeps that
evaluator as the grader. Then, per grade: our metric in-process; the evaluator in the sandbox (warm worker, one
submission per run: `sandmle grade`, an episode's final grade); many submissions in one run (the verifier's ladder
and fuzzing); a cold sandbox (no warm worker); the paper's own call without any sandbox (`python evaluator.py
--submission_path P`, a fresh interpreter); and a score-tool call of each environment.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from store import Store

from ..agents.env import MLEEnv
from ..agents.format import ToolCall
from ..config import load_settings
from ..envs.layout import EnvSpec
from ..exchange.export import ExportOptions, export_envs
from ..exchange.paper_import import import_tasks
from ..grading import grade
from ..grading.evaluator import run_evaluator, using
from ..grading.score import score_many
from ..sandbox import SandboxBackend, get_backend
from ..seeds.load import load_shipped
from ..synthesis.pipeline import synthesize
from . import BenchResult

#: a paper-style evaluator of a metric we do not have: each row's absolute error divided by its true value's size
EVALUATOR = '''import argparse, json, sys
import numpy as np
import pandas as pd

parser = argparse.ArgumentParser()
parser.add_argument("--submission_path", required=True)
args = parser.parse_args()
answers = pd.read_csv("answer.csv", dtype=str)
sub = pd.read_csv(args.submission_path, dtype=str)
idc, target = answers.columns[0], answers.columns[1]
if list(sub.columns) != [idc, target] or len(sub) != len(answers) or set(sub[idc]) != set(answers[idc]):
    sys.exit("the submission does not match the test set")
pred = pd.to_numeric(sub[target], errors="coerce")
if pred.isna().any() or not np.isfinite(pred).all():
    sys.exit("predictions must be finite numbers")
truth = pd.to_numeric(answers.set_index(idc)[target])
guess = pred.set_axis(sub[idc]).loc[truth.index].to_numpy()
score = float(np.mean(np.abs(truth.to_numpy() - guess) / np.maximum(np.abs(truth.to_numpy()), 1.0)))
print(json.dumps({"score": score, "is_lower_better": True}))
'''


def _ms(fn: Callable[[], object], n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - start) / n * 1000


def _envs(store: Store, tmp: Path) -> tuple[EnvSpec, EnvSpec]:
    """The synthesized environment (our metric) and its import graded by EVALUATOR."""
    load_shipped(store)
    report = synthesize(store, "taxi-fare", 1, rng_seed=5)
    if not report.verified:
        raise RuntimeError("the benchmark environment failed verification")
    original = report.verified[0].env_id
    export_envs(store, original, tmp / "paper", ExportOptions(fmt="sandmle", paper_compatible=True))
    task = tmp / "tasks" / "weighted-error"
    shutil.copytree(tmp / "paper" / original, task)
    (task / "prepared" / "public" / "evaluator.py").write_text(EVALUATOR)
    (outcome,) = import_tasks(store, task.parent)
    if outcome.status != "verified" or outcome.metric != "evaluator":
        raise RuntimeError(f"the evaluator-graded import did not verify: {outcome.line()}")
    return EnvSpec.from_store(store, original), EnvSpec.from_store(store, str(outcome.env_id))


def _score_tool_ms(env: EnvSpec, backend: SandboxBackend, n: int) -> float:
    e = MLEEnv(env.id, env.public, env.grade, backend)
    e.reset()
    e.workspace.write_file("val/submission.csv", e.read("val/sample_submission.csv") or b"")

    def call() -> None:
        e.state.steps = 0
        e.step(ToolCall("score", {}))

    call()
    try:
        return _ms(call, n)
    finally:
        e.close()


def _rows(ours: EnvSpec, theirs: EnvSpec, store: Store, n: int) -> list[dict[str, Any]]:
    sample = theirs.public / "sample_submission.csv"
    settings = load_settings().sandbox
    rows: list[dict[str, Any]] = [{"what": "our metric (rmse), in-process",
                                   "ms_per_grade": _ms(lambda: grade(ours, sample), n)}]
    with get_backend(store=store, settings=settings) as warm, using(warm):
        start = time.perf_counter()
        grade(theirs, sample)
        rows.append({"what": "its own evaluator: first grade (starts the warm worker)",
                     "ms_per_grade": (time.perf_counter() - start) * 1000})
        rows.append({"what": "its own evaluator, sandboxed warm, 1 per run",
                     "ms_per_grade": _ms(lambda: grade(theirs, sample), n)})
        answers = pd.read_csv(theirs.answers, dtype={theirs.grade.id_column: str})
        frame = pd.read_csv(sample, dtype={theirs.grade.id_column: str})
        batch = {str(i): frame for i in range(20)}
        rows.append({"what": "its own evaluator, sandboxed warm, 20 per run",
                     "ms_per_grade": _ms(lambda: score_many(theirs.grade, answers, batch), 2) / len(batch)})
        inner = run_evaluator(str(theirs.grade.evaluator_code), theirs.public, answers, batch)
        rows.append({"what": "  of which the evaluator's own run (fork + its code)",
                     "ms_per_grade": sum(float(str(r.get("ms", 0))) for r in inner.values()) / len(inner)})
        rows.append({"what": "score tool call, our metric", "ms_per_grade": _score_tool_ms(ours, warm, n)})
        rows.append({"what": "score tool call, its own evaluator", "ms_per_grade": _score_tool_ms(theirs, warm, n)})
    with get_backend(store=store, settings=settings.model_copy(update={"warm": False})) as cold, using(cold):
        rows.append({"what": "its own evaluator, sandboxed cold, 1 per run",
                     "ms_per_grade": _ms(lambda: grade(theirs, sample), max(2, n // 4))})
    rows.append({"what": "the paper's call, no sandbox (fresh python)",
                 "ms_per_grade": _paper_call_ms(theirs, sample, max(2, n // 4))})
    return rows


def _paper_call_ms(env: EnvSpec, sample: Path, n: int) -> float:
    """``python evaluator.py --submission_path P`` in a folder holding the public files and answer.csv."""
    with tempfile.TemporaryDirectory(prefix="sandmle-bench-paper-") as tmp:
        work = Path(tmp) / "public"
        shutil.copytree(env.public, work)
        shutil.copyfile(env.answers, work / "answer.csv")
        (work / "evaluator.py").write_text(str(env.grade.evaluator_code))
        argv = [sys.executable, "evaluator.py", "--submission_path", str(sample)]
        return _ms(lambda: subprocess.run(argv, cwd=work, capture_output=True, check=True), n)


def run(store: Store, quick: bool = False, **_options: Any) -> BenchResult:
    with tempfile.TemporaryDirectory(prefix="sandmle-bench-grade-") as tmp:
        bench_store = Store(Path(tmp) / "bench.db")
        try:
            start = time.perf_counter()
            ours, theirs = _envs(bench_store, Path(tmp))
            setup_s = time.perf_counter() - start
            rows = _rows(ours, theirs, bench_store, 5 if quick else 20)
        finally:
            bench_store.close()
    by = {r["what"]: r["ms_per_grade"] for r in rows}
    for r in rows:
        r["ms_per_grade"] = round(float(r["ms_per_grade"]), 2)
    metric_ms = by["our metric (rmse), in-process"]
    summary = {"metric_ms": round(metric_ms, 2),
               "evaluator_warm_ms": round(by["its own evaluator, sandboxed warm, 1 per run"], 2),
               "evaluator_batched_ms": round(by["its own evaluator, sandboxed warm, 20 per run"], 2),
               "evaluator_cold_ms": round(by["its own evaluator, sandboxed cold, 1 per run"], 2),
               "paper_call_ms": round(by["the paper's call, no sandbox (fresh python)"], 2),
               "warm_vs_metric": round(by["its own evaluator, sandboxed warm, 1 per run"] / max(metric_ms, 1e-9), 1),
               "setup_s": round(setup_s, 1)}
    notes = [f"setup (synthesis, export, import of the evaluator-graded task): {setup_s:.0f} s",
             "ratios measured side by side in one run; the machine is shared (see the load in docs/export.md)"]
    return BenchResult(name="grade", rows=rows, summary=summary, notes=notes)
