"""The standalone grader written into every exported environment: ``evaluator.py`` of the paper's layout and
``tests/grader.py`` of a Harbor task. It needs numpy, pandas and scikit-learn, never sandmle.

It is not a second implementation: it carries the source of our own grading modules (:data:`BUNDLED`: the error
classes, the metric library, the medal thresholds, submission validation and scoring, the grade report, the
rewards) byte for byte, each run as a module of its own under the package name ``_sandmle`` (their relative imports
unchanged), with stand-ins for the project outside grading: the grading spec (the real ``GradeSpec`` class,
beside a small ``EnvSpec``), the two type names the rewards import from the store, and the sandboxed run of an
environment's own evaluator (:data:`EVALUATOR`: where the grader runs -- Harbor's verifier container -- is the
sandbox, so an environment graded by its own evaluator has it run as the paper's score tool runs it, ``python
evaluator.py --submission_path P`` in a copy of the task's files with the answers as ``answer.csv``; its source is
embedded in the grader). So ``sandmle grade`` and the
exported grader agree on every submission because they run the same code (tests/test_exchange.py checks it).

Called as the paper's score tool calls an evaluator -- ``python evaluator.py --submission_path P`` with the working
directory in ``public/`` -- it prints one JSON object: the grade report (``score``, ``is_lower_better``,
``gold_threshold``, ``silver_threshold``, ``bronze_threshold``, ``median_threshold``, ``valid_submission``,
``error``, medals, the rank on the board: ``rank``, ``board``) and exits 0, or 1 for an invalid submission (the score tool reads that as invalid).
The answers are the first of ``--answers``, ``answer.csv`` beside the grader, ``../private/answer.csv``.
"""

from __future__ import annotations

import inspect
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from .. import errors
from ..envs.layout import GradeSpec
from ..grading import external, metrics, rewards, score
from ..grading.grade import GradeReport
from ..grading.thresholds import Thresholds

#: our modules the grader carries unchanged, as (name under ``_sandmle``, module), in the order they are loaded
#: (engine.grading re-exports the functions grade and thresholds under their modules' names: hence sys.modules)
BUNDLED: tuple[tuple[str, ModuleType | None], ...] = (
    ("errors", errors), ("grading.metrics", metrics), ("grading.thresholds", sys.modules[Thresholds.__module__]),
    ("grading.external", external), ("grading.evaluator", None), ("grading.score", score), ("grading.grade", sys.modules[GradeReport.__module__]), ("grading.rewards", rewards))

#: the stand-in of engine/envs/layout.py: the real GradeSpec (its source is pasted in) and what a report needs
LAYOUT = '''from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from ..errors import SandmleError

{grade_spec}

@dataclass
class EnvSpec:
    """What a grade report needs of an environment (sandmle's EnvSpec knows its folder and store row)."""

    id: str
    grade: GradeSpec
    public: Path
    answers: Path
    thresholds: dict[str, float] | None = None
    leaderboard: list[float] = field(default_factory=list)
    board: str | None = None
'''

#: the stand-in of engine/grading/evaluator.py (a subprocess, not the sandbox: the grader's container is one)
EVALUATOR = '''from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from ..errors import InvalidSubmission
from .external import ANSWERS_FILE, EVALUATOR_FILE, TIMEOUT_S, score_of

#: the folder holding the task's files (set by the grader: beside it, or its public/)
FILES = None


def _run(work, submission):
    try:
        done = subprocess.run([sys.executable, EVALUATOR_FILE, "--submission_path", submission], cwd=work,
                              capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return {"timed_out": True, "timeout_s": TIMEOUT_S}
    return {"rc": done.returncode, "stdout": done.stdout, "stderr": done.stderr}


def evaluator_scores(spec, answers, submissions, *, files=None, public=None, sandbox=None):
    """Each submission's score by the environment's own evaluator (or the InvalidSubmission saying why)."""
    folder = Path(public if public is not None else FILES)
    out = {}
    with tempfile.TemporaryDirectory(prefix="sandmle-grade-") as tmp:
        for i, (name, submission) in enumerate(submissions.items()):
            work = Path(tmp) / f"task-{i}"
            shutil.copytree(folder, work)
            for rel, data in (files or {}).items():
                (work / rel).write_bytes(data)
            (work / ANSWERS_FILE).write_text(answers.to_csv(index=False))
            (work / EVALUATOR_FILE).write_text(spec.evaluator_code or "")
            submission.to_csv(work / "_submission.csv", index=False)
            try:
                out[name] = score_of(_run(work, "_submission.csv"))
            except InvalidSubmission as exc:
                out[name] = exc
    return out
'''

#: stand-ins for what the rewards import from the store (type names only)
STORE = {"store": "", "store.common": "from typing import Any\nJSON = Any\n",
         "store.trajectories": "from typing import Any\nTurn = Any\n"}

HEADER = '''#!/usr/bin/env python3
"""{title}

Generated by sandmle (environment {env_id}). Standalone: numpy, pandas and scikit-learn, no sandmle. The modules
below are sandmle's own grading code ({modules}), carried unchanged and run as modules of the package
`_sandmle`, so this file and `sandmle grade` score every submission the same.

    python {name} --submission_path submission.csv        # prints the grade report as one JSON object
    python {name} --submission_path S --reward milestone --reward-file R --report-file G
"""

from __future__ import annotations

import argparse
import json
import sys
import types
from pathlib import Path

#: what this grader grades: the grading spec, the medal thresholds and the leaderboard of the environment
TASK = json.loads({task!r})


def _load(name: str, source: str, package: bool = False) -> None:
    module = types.ModuleType(name)
    module.__package__ = name if package else name.rpartition(".")[0]
    if package:
        module.__path__ = []
    sys.modules[name] = module
    exec(compile(source, f"<{{name}}>", "exec"), module.__dict__)


for _package in ("_sandmle", "_sandmle.envs", "_sandmle.grading"):
    _load(_package, "", package=True)
'''

MAIN = r'''

# ---------------------------------------------------------------------------------------------- command line
from _sandmle.envs.layout import EnvSpec, GradeSpec  # noqa: E402
from _sandmle.grading.grade import GradeReport, grade  # noqa: E402
from _sandmle.grading.rewards import SCHEMES, compute_reward  # noqa: E402


def _answers(given: str | None) -> Path:
    here = Path(__file__).resolve().parent
    for path in ([Path(given)] if given else [here / "answer.csv", here.parent / "private" / "answer.csv"]):
        if path.is_file():
            return path
    raise SystemExit(f"error: no answers file ({given or 'answer.csv beside the grader or ../private/answer.csv'})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Grade a submission of " + TASK["id"])
    parser.add_argument("--submission_path", "--submission-path", dest="submission", default="submission.csv")
    parser.add_argument("--answers", help="the hidden answers (default: answer.csv beside this file, else "
                                          "../private/answer.csv)")
    parser.add_argument("--reward", choices=sorted(SCHEMES) + ["score"],
                        help="also compute this reward (score: the metric's value, 0 when invalid)")
    parser.add_argument("--reward-file", help="write the reward (one float) here")
    parser.add_argument("--report-file", help="write the grade report (JSON) here")
    args = parser.parse_args(argv)
    env = EnvSpec(id=TASK["id"], grade=GradeSpec(**TASK["grade"]), public=Path(__file__).resolve().parent,
                  answers=_answers(args.answers), thresholds=TASK.get("thresholds"),
                  leaderboard=list(TASK.get("leaderboard") or []), board=TASK.get("board"))
    if TASK.get("evaluator_code") is not None:  # graded by the environment's own evaluator, embedded here
        env.grade.evaluator_code = TASK["evaluator_code"]
        sys.modules["_sandmle.grading.evaluator"].FILES = env.public / TASK.get("files", ".")
    report = grade(env, args.submission).to_dict()
    scheme = args.reward or (TASK.get("reward") if args.reward_file else None)
    if scheme == "score":
        report["reward"] = float(report["score"]) if report["valid_submission"] else 0.0
    elif scheme:
        report["reward"] = compute_reward(GradeReport.from_dict(report), [], scheme)[0]
    if args.report_file:
        Path(args.report_file).parent.mkdir(parents=True, exist_ok=True)
        Path(args.report_file).write_text(json.dumps(report, indent=2) + "\n")
    if args.reward_file:
        Path(args.reward_file).parent.mkdir(parents=True, exist_ok=True)
        Path(args.reward_file).write_text(f"{report['reward']!r}\n")
    print(json.dumps(report))
    return 0 if report["valid_submission"] else 1


if __name__ == "__main__":
    sys.exit(main())
'''

QUOTES = "'" * 3


def _literal(source: str) -> str:
    """``source`` as a raw triple-quoted string literal (what we carry holds no triple single quote and does not
    end with a backslash)."""
    if QUOTES in source or source.endswith("\\"):
        raise ValueError("a bundled module holds a triple single quote or ends with a backslash")
    return "r" + QUOTES + source + QUOTES


def _source(module: ModuleType) -> str:
    return Path(inspect.getfile(module)).read_text(encoding="utf-8")


def task_record(env_id: str, spec: GradeSpec, thresholds: dict[str, Any] | None, leaderboard: list[float],
                reward: str, *, files: str = ".", board: str | None = None) -> dict[str, Any]:
    """What the grader embeds: the grading spec, thresholds, leaderboard scores and the default reward; for an
    environment graded by its own evaluator, its source and where the task's files are (``files``, relative to the
    grader's folder)."""
    th = {k: float(thresholds[k]) for k in ("gold", "silver", "bronze", "median")} if thresholds else None
    out = {"id": env_id, "grade": spec.to_dict(), "thresholds": th, "leaderboard": [float(s) for s in leaderboard],
           "reward": reward, "board": board}
    if spec.external:
        out.update(evaluator_code=spec.evaluator_code, files=files)
    return out


def standalone_grader(task: dict[str, Any], *, name: str = "evaluator.py", title: str = "") -> str:
    """The source of one environment's standalone grader (see the module docstring)."""
    parts = [HEADER.format(title=title or f"Grader of {task['id']}", env_id=task["id"], name=name,
                           modules=", ".join(f"engine/{n.replace('.', '/')}.py" for n, m in BUNDLED if m is not None),
                           task=json.dumps(task, sort_keys=True))]
    for name, source in STORE.items():
        parts.append(f"_load({name!r}, {_literal(source)}, package={name == 'store'})")
    parts.append(f"_load('_sandmle.errors', {_literal(_source(errors))})")
    parts.append(f"_load('_sandmle.envs.layout', {_literal(LAYOUT.format(grade_spec=inspect.getsource(GradeSpec)))})")
    for name, module in BUNDLED[1:]:
        what = f"engine/{name.replace('.', '/')}.py" + ("" if module is not None else " (its stand-in)")
        parts.append(f"\n# {'-' * 70} {what}\n"
                     f"_load('_sandmle.{name}', {_literal(_source(module) if module is not None else EVALUATOR)})")
    parts.append(MAIN)
    return "\n".join(parts)
