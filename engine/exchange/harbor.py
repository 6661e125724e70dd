"""One environment as a Harbor task folder (the layout TRL, SkyRL, verifiers, rLLM and NeMo Gym load; ``harbor run``
runs it)::

    <id>/instruction.md         the description, where the files are, what to write
    <id>/task.toml              timeouts (the episode budget), cpus and memory, no network, [metadata]
    <id>/environment/Dockerfile FROM the base image, the public files in /app
    <id>/environment/docker-compose.yaml   only on the sandmle base image: this machine's /usr, /etc and Python
    <id>/environment/public/    the public files (train.csv, test.csv, sample_submission.csv, media)
    <id>/tests/test.sh          grades /app/submission.csv: reward -> /logs/verifier/reward.txt, report -> grade.json
    <id>/tests/grader.py        the standalone grader (sandmle's grading code, no sandmle import)
    <id>/tests/answers.csv      the hidden answers (Harbor uploads tests/ only after the agent is done)
    <id>/tests/public/          graded by the task's own evaluator: the public files it runs beside
    <id>/solution/solve.sh      the strong reference solution the verifier ran (Harbor's oracle agent runs it)

The base image defaults to the one ``sandmle sandbox build-image`` makes (nothing can be pulled here): an empty
root filesystem whose containers bind this machine's system and Python read-only, so the task's
``environment/docker-compose.yaml`` names those binds and the task runs on this machine (or one set up the same
way). ``--base-image python:3.11-slim`` (or any image with Python) writes a self-contained task instead.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

from ..grading.score import metric_of
from ..sandbox.image import BASE_IMAGE, host_mounts
from .grader_source import standalone_grader, task_record
from .source import REFERENCE_SEED, Source

#: where the agent works in the container (the public files are there)
WORKDIR = "/app"
#: the grade report the verifier writes beside the reward (``reward.json`` would be read as the rewards)
REPORT = "/logs/verifier/grade.json"


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(float(value)) if isinstance(value, float) else str(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return json.dumps(str(value))  # a TOML basic string: JSON's escapes are TOML's


def toml_table(name: str, table: dict[str, Any]) -> list[str]:
    """``[name]`` with its scalar keys, then a ``[name.key]`` sub-table per dict value (None values left out)."""
    lines = [f"[{name}]"] + [f"{k} = {toml_value(v)}" for k, v in table.items()
                             if v is not None and not isinstance(v, dict)]
    for key, sub in table.items():
        if isinstance(sub, dict):
            lines += [""] + toml_table(f"{name}.{key}", sub)
    return lines


def task_toml(src: Source, *, reward: str, agent_timeout_s: float, verifier_timeout_s: float, cpus: float,
              memory_mb: int) -> str:
    row = src.row
    th = row.get("thresholds") or {}
    metadata = {"env_id": src.id, "seed": row.get("seed_id"), "modality": row["modality"],
                "task_type": row["task_type"], "metric": row["metric"],
                "direction": "lower" if row["lower_is_better"] else "higher", "reward": reward,
                "leaderboard_size": len(src.board), "split": row.get("split"),
                "thresholds": {k: float(th[k]) for k in ("gold", "silver", "bronze", "median") if k in th} or None,
                "provenance": src.index_row("harbor", Path(src.id))["provenance"]}
    lines = ['schema_version = "1.1"', ""]
    lines += toml_table("task", {"name": f"sandmle/{src.id}", "description": row["title"],
                                 "keywords": ["sandmle", row["modality"], row["task_type"], row["metric"]]})
    lines += [""] + toml_table("metadata", metadata)
    lines += [""] + toml_table("agent", {"timeout_sec": float(agent_timeout_s)})
    lines += [""] + toml_table("verifier", {"timeout_sec": float(verifier_timeout_s)})
    lines += [""] + toml_table("environment", {"build_timeout_sec": 600.0, "cpus": cpus, "memory_mb": memory_mb,
                                               "network_mode": "no-network"})
    return "\n".join(lines) + "\n"


def instruction(src: Source) -> str:
    spec = src.env.grade
    header = ",".join([spec.id_column, *spec.prediction_columns])
    files = ", ".join(f"`{p.name}{'/' if p.is_dir() else ''}`" for p in src.public_files())
    metric = metric_of(spec)
    how = "the task's own evaluator (the metric the description explains)" if spec.external else f"**{spec.metric}**"
    return (src.description().rstrip() + "\n\n## Your workspace\n\n"
            f"The task's files are in `{WORKDIR}` (the working directory): {files}. There is no internet access; "
            "Python with numpy, pandas and scikit-learn is installed.\n\n"
            f"Write your predictions to `{WORKDIR}/submission.csv`: one row per `{spec.id_column}` of `test.csv`, "
            f"with the header of `sample_submission.csv`:\n\n```\n{header}\n```\n\n"
            f"It is graded once you finish, against hidden answers, with {how} "
            f"({'lower' if metric.lower_is_better else 'higher'} is better).\n")


def dockerfile(base_image: str, mounts: bool) -> str:
    lines = [f"FROM {base_image}"]
    if mounts:
        lines += ["# sandmle's base image holds no system: docker-compose.yaml binds this machine's /usr, /etc and "
                  "Python read-only", f"ENV PATH={Path(sys.prefix).resolve()}/bin:/usr/local/bin:/usr/bin:/bin"]
    else:
        lines += ['RUN python -c "import numpy, pandas, sklearn" 2>/dev/null || '
                  "pip install --no-cache-dir numpy pandas scikit-learn scipy"]
    return "\n".join(lines + [f"WORKDIR {WORKDIR}", f"COPY public/ {WORKDIR}/", ""])


def compose_mounts() -> str:
    binds = "".join(f"      - {p}:{p}:ro\n" for p in host_mounts())
    return ("# The base image sandmle-base holds no system of its own (`sandmle sandbox build-image`): the task's "
            "container\n# binds this machine's system folders, interpreter and virtual env read-only.\n"
            f"services:\n  main:\n    volumes:\n{binds}")


TEST_SH = """#!/bin/bash
# Grades {workdir}/submission.csv against the hidden answers beside this script (sandmle's grading code, no sandmle
# install): the reward ({reward}) goes to /logs/verifier/reward.txt, the whole grade report to {report}.
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p /logs/verifier
python "$here/grader.py" --submission_path {workdir}/submission.csv --answers "$here/answers.csv" \\
    --reward {reward} --reward-file /logs/verifier/reward.txt --report-file {report}
exit 0
"""

SOLVE_SH = """#!/bin/bash
# The strong reference solution sandmle's verifier ran (RNG seed {seed}): writes {workdir}/submission.csv.
here="$(cd "$(dirname "$0")" && pwd)"
cd {workdir} && python "$here/solve.py" {seed} {workdir}/submission.csv
"""


def _script(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(0o755)


def write_harbor_task(src: Source, dest: Path, *, base_image: str = BASE_IMAGE, reward: str = "milestone",
                      agent_timeout_s: float = 1200.0, verifier_timeout_s: float = 120.0, cpus: float = 1,
                      memory_mb: int = 4096) -> Path:
    """Write the Harbor task folder of one environment at ``dest`` (which must not exist)."""
    env = src.env
    mounts = base_image == BASE_IMAGE
    (dest / "environment").mkdir(parents=True)
    (dest / "tests").mkdir()
    (dest / "solution").mkdir()
    (dest / "instruction.md").write_text(instruction(src), encoding="utf-8")
    (dest / "task.toml").write_text(task_toml(src, reward=reward, agent_timeout_s=agent_timeout_s,
                                              verifier_timeout_s=verifier_timeout_s, cpus=cpus, memory_mb=memory_mb),
                                    encoding="utf-8")
    shutil.copytree(env.public, dest / "environment" / "public")
    (dest / "environment" / "Dockerfile").write_text(dockerfile(base_image, mounts))
    if mounts:
        (dest / "environment" / "docker-compose.yaml").write_text(compose_mounts())
    task = task_record(src.id, env.grade, env.thresholds, src.scores, reward, files="public", board=env.board)
    (dest / "tests" / "grader.py").write_text(standalone_grader(task, name="grader.py"), encoding="utf-8")
    if env.grade.external:  # its own evaluator runs over a copy of the task's files, not the agent's /app
        (dest / "tests" / "public").mkdir()
        for p in src.public_files():
            if p.is_file():
                shutil.copyfile(p, dest / "tests" / "public" / p.name)
    shutil.copyfile(env.answers, dest / "tests" / "answers.csv")
    shutil.copyfile(env.public / "sample_submission.csv", dest / "tests" / "sample_submission.csv")
    _script(dest / "tests" / "test.sh", TEST_SH.format(workdir=WORKDIR, reward=reward, report=REPORT))
    (dest / "solution" / "solve.py").write_text(src.strong_solution(), encoding="utf-8")
    _script(dest / "solution" / "solve.sh", SOLVE_SH.format(workdir=WORKDIR, seed=REFERENCE_SEED))
    return dest
