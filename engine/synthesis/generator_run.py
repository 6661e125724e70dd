"""Running a generator program (the procedural engineer's or an LLM's) in a fresh sandbox workspace, taking its
``public/`` and ``private/`` out, and checking what it wrote against the layout contract."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..envs.layout import GradeSpec
from ..errors import SandboxError
from ..sandbox import Limits, RunMeta, SandboxBackend


@dataclass
class GeneratorRun:
    ok: bool
    wall_s: float
    #: one line naming the cause of a failure (the traceback's last line, the limit that stopped it)
    error: str = ""
    sandbox_run_id: str | None = None
    #: the last lines of stderr (the traceback) of a failed run
    traceback: str = ""


def _program_traceback(text: str) -> str:
    """The traceback from the program's own frames on (the launcher's frames say nothing to its author)."""
    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines) if 'File "generator.py"' in ln), None)
    if start is None:
        return "\n".join(lines[-25:])
    return "\n".join(["Traceback (most recent call last):", *lines[start:]][-40:])


def run_generator(sandbox: SandboxBackend, program: str, dest: Path, rng_seed: int, *, n_train: int | None = None,
                  n_test: int | None = None, limits: Limits | None = None,
                  meta: RunMeta | None = None) -> GeneratorRun:
    """Run the program in a fresh sandbox workspace and move its output to ``dest`` (public/ + private/)."""
    with sandbox.open(None, label="generator", profile="generator") as ws:
        ws.write_file("generator.py", program.encode())
        argv = ["generator.py", "--out", "out", "--seed", str(rng_seed)]
        if n_train:
            argv += ["--n-train", str(n_train)]
        if n_test:
            argv += ["--n-test", str(n_test)]
        # a two-line launcher lets the warm worker (numpy/pandas imported) run the program with its arguments
        launcher = f"import runpy, sys\nsys.argv = {argv!r}\nrunpy.run_path('generator.py', run_name='__main__')\n"
        res = ws.run_python(launcher, filename="_run_generator.py", limits=limits, meta=meta)
        tail = _program_traceback((res.stderr_tail or res.stdout_tail or "").strip())
        if res.status == "timeout" and limits is not None:
            return GeneratorRun(False, res.wall_s, f"generator.py ran past the {limits.timeout_s:g} s time limit and "
                                                   "was stopped (timeout)", res.run_id, tail)
        if not res.ok:
            last = tail.splitlines()[-1] if tail else "no output"
            return GeneratorRun(False, res.wall_s, f"generator.py failed ({res.status}): {last}", res.run_id, tail)
        dest.mkdir(parents=True, exist_ok=True)
        room = (limits or sandbox.default_limits).max_disk_mb * 2**20  # no more than a workspace can hold
        for part in ("public", "private"):
            if (dest / part).exists():
                shutil.rmtree(dest / part)
            try:
                ws.copy_out(f"out/{part}", dest / part, max_bytes=room)
            except SandboxError as exc:
                return GeneratorRun(False, res.wall_s, f"generator.py wrote no usable DIR/{part}/ folder: {exc}",
                                    res.run_id, tail)
        return GeneratorRun(True, res.wall_s, "", res.run_id)


DATA_FILES = ("public/train.csv", "public/test.csv", "public/sample_submission.csv", "private/answers.csv")


def missing_files(env_dir: Path) -> list[str]:
    """The data files of the layout contract that a generator did not write."""
    return [f"generator.py did not write {rel}" for rel in DATA_FILES if not (env_dir / rel).is_file()]


def check_output(env_dir: Path, spec: GradeSpec, media_column: str | None, *, micro: bool = True) -> list[str]:
    """Structural checks of generated files (the layout contract), as a list of problems."""
    pub, priv = env_dir / "public", env_dir / "private"
    problems = []
    train = pd.read_csv(pub / "train.csv", dtype={spec.id_column: str})
    test = pd.read_csv(pub / "test.csv", dtype={spec.id_column: str})
    sample = pd.read_csv(pub / "sample_submission.csv", dtype={spec.id_column: str})
    answers = pd.read_csv(priv / "answers.csv", dtype={spec.id_column: str})
    if micro and not (50 <= len(train) <= 200):
        problems.append(f"train.csv has {len(train)} rows; micro environments need 50-200")
    for t in spec.target_columns:
        if t not in train.columns:
            problems.append(f"train.csv lacks the target {t!r}")
        if t in test.columns:
            problems.append(f"test.csv leaks the target {t!r}")
    expected = [spec.id_column, *spec.prediction_columns]
    # the id only in the sample submission (as in the seed: id_in_test = false): test rows counted from 1, in order
    hidden = spec.id_column not in test.columns
    test_ids = [str(i) for i in range(1, len(test) + 1)] if hidden else test[spec.id_column].tolist()
    if hidden and spec.id_column in set(train.columns) | set(test.columns):
        problems.append(f"the id {spec.id_column!r} must be only in sample_submission.csv")
    for name, frame in (("sample_submission.csv", sample), ("answers.csv", answers)):
        if list(frame.columns) != expected:
            problems.append(f"{name} columns {list(frame.columns)} != {expected}")
        elif frame[spec.id_column].tolist() != test_ids:
            problems.append(f"{name} ids differ from test.csv ids")
    if not hidden and (train[spec.id_column].duplicated().any() or test[spec.id_column].duplicated().any()):
        problems.append("duplicate ids")
    if not hidden and set(train[spec.id_column]) & set(test[spec.id_column]):
        problems.append("train and test share ids")
    if media_column:
        for frame in (train, test):
            missing = [p for p in frame[media_column].astype(str) if not (pub / p).is_file()]
            if missing:
                problems.append(f"{len(missing)} media files are missing, e.g. {missing[0]}")
                break
    return problems
