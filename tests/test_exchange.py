"""Environments leave: `sandmle envs export SELECTOR DEST --format mlebench|harbor|sandmle`, the index, the
standalone grader (sandmle's own grading code, no sandmle import) agreeing with `sandmle grade` on many submissions,
the paper's score-tool call, and the real `harbor` CLI running the oracle and nop agents on exported tasks."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import ROOT, cli_runner, store_at

#: one environment per kind of prediction: a probability (roc_auc), one column per class (log_loss), a value
#: (rmse), an ordinal label (qwk)
SEEDS = ("tabular-binary-manufacturing", "author-style", "taxi-fare", "essay-scoring")
HARBOR = ROOT / ".venv-harbor"


@pytest.fixture(scope="module")
def exported_home(tmp_path_factory):
    """A store with one verified environment of each seed in SEEDS (procedural synthesis)."""
    from engine.seeds.load import load_shipped
    from engine.synthesis.pipeline import synthesize
    from store import Store

    home = tmp_path_factory.mktemp("exchange-home")
    with pytest.MonkeyPatch.context() as env:  # monkeypatch itself is function-scoped
        env.setenv("SANDMLE_HOME", str(home))
        with Store(home / "sandmle.db") as s:
            load_shipped(s)
            for seed in SEEDS:
                report = synthesize(s, seed, 1, rng_seed=3)
                assert len(report.verified) == 1, report.to_dict()
        yield home


@pytest.fixture
def xstore(exported_home, monkeypatch):
    with store_at(exported_home, monkeypatch) as s:
        yield s


@pytest.fixture
def cli(xstore, capsys):
    return cli_runner(capsys)


def _env(store, env_id):
    from engine.envs.layout import EnvSpec

    return EnvSpec.from_store(store, env_id)


def submissions(env, rng) -> dict[str, pd.DataFrame]:
    """Many submissions of one environment: the sample, the answers, noisy and shuffled answers, and the malformed
    variants the verifier fuzzes the grader with (missing rows, unknown ids, NaN, inf, wrong types, ...)."""
    from engine.grading.metrics import get_metric
    from engine.synthesis.verifier import fuzz_cases

    spec = env.grade
    answers = pd.read_csv(env.answers, dtype={spec.id_column: str})
    sample = pd.read_csv(env.public / "sample_submission.csv", dtype={spec.id_column: str})
    out = {"sample": sample, "perfect": answers}
    kind = get_metric(spec.metric).prediction
    for i in range(3):
        noisy = answers.copy()
        perm = rng.permutation(len(noisy))
        for c in spec.prediction_columns:
            values = noisy[c].to_numpy()
            if kind == "label":
                swap = rng.random(len(values)) < 0.3 * (i + 1)
                noisy[c] = np.where(swap, values[perm], values)
            else:
                v = values.astype(float)
                noisy[c] = np.clip((1 - 0.3 * i) * v + 0.3 * i * v[perm], 0, None) if kind == "proba" else \
                    v + rng.normal(0, 0.1 * (i + 1) * (np.std(v) + 1e-9), len(v))
        out[f"noisy{i}"] = noisy
    out.update(fuzz_cases(spec, answers, rng))
    return out


def _write(folder: Path, subs: dict[str, pd.DataFrame]) -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name, df in subs.items():
        paths[name] = folder / f"{name}.csv"
        df.to_csv(paths[name], index=False)
    return paths


def test_export_writes_one_folder_per_environment_and_an_index(xstore, cli, tmp_path):
    ids = [r["id"] for r in xstore.envs.list(status="verified")]
    for fmt in ("mlebench", "harbor", "sandmle"):
        dest = tmp_path / fmt
        res = cli("envs", "export", "split:train", str(dest), "--format", fmt, "--json")
        assert res.code == 0, res.err
        index = [json.loads(line) for line in (dest / "index.jsonl").read_text().splitlines()]
        assert sorted(r["id"] for r in index) == sorted(ids)
        for r in index:
            row = xstore.envs.get(r["id"])
            assert r["format"] == fmt and r["seed"] == row["seed_id"] and r["split"] == "train"
            assert r["metric"] == row["metric"]
            assert r["direction"] == ("lower" if row["lower_is_better"] else "higher")
            assert r["thresholds"] == {k: row["thresholds"][k] for k in ("gold", "silver", "bronze", "median")}
            assert r["provenance"]["origin"] == "synthesized" and r["provenance"]["run_id"] == row["run_id"]
            assert r["leaderboard_size"] == len(xstore.envs.leaderboard(r["id"])) > 0
            assert (dest / r["path"]).is_dir()
    # the formats' own files
    one = ids[0]
    assert (tmp_path / "mlebench" / one / "config.yaml").is_file()
    h = tmp_path / "harbor" / one
    for rel in ("instruction.md", "task.toml", "environment/Dockerfile", "environment/public/train.csv",
                "tests/test.sh", "tests/grader.py", "tests/answers.csv", "solution/solve.sh"):
        assert (h / rel).is_file(), rel
    assert not (h / "environment" / "public" / "answers.csv").exists()
    p = tmp_path / "sandmle" / one / "prepared"
    assert (p / "public" / "evaluator.py").is_file() and (p / "private" / "answer.csv").is_file()
    assert not (p / "public" / "answer.csv").exists()
    assert sorted(json.loads((tmp_path / "sandmle" / "ok_competitions_sanity.json").read_text())) == sorted(ids)
    # the existing single-folder export keeps working
    res = cli("envs", "export", one, str(tmp_path / "single"))
    assert res.code == 0 and (tmp_path / "single" / "config.yaml").is_file()


def test_harbor_task_toml_says_budget_resources_network_and_metadata(xstore, cli, tmp_path):
    env_id = xstore.envs.list(seed_id="author-style")[0]["id"]
    row = xstore.envs.get(env_id)
    assert cli("envs", "export", env_id, str(tmp_path / "h"), "--format", "harbor", "--agent-timeout", "900").code == 0
    task = tomllib.loads((tmp_path / "h" / env_id / "task.toml").read_text())
    assert task["agent"]["timeout_sec"] == 900.0 and task["verifier"]["timeout_sec"] > 0
    assert task["environment"]["network_mode"] == "no-network"
    assert task["environment"]["cpus"] == 1 and task["environment"]["memory_mb"] == 4096
    meta = task["metadata"]
    assert (meta["seed"], meta["modality"], meta["metric"], meta["direction"]) == \
        ("author-style", row["modality"], "log_loss", "lower")
    assert meta["thresholds"]["gold"] == row["thresholds"]["gold"]
    assert meta["leaderboard_size"] == len(xstore.envs.leaderboard(env_id))
    assert meta["provenance"]["run_id"] == row["run_id"] and meta["reward"] == "milestone"
    instruction = (tmp_path / "h" / env_id / "instruction.md").read_text()
    assert "/app/submission.csv" in instruction and "sample_submission.csv" in instruction
    assert (tmp_path / "h" / env_id / "environment" / "Dockerfile").read_text().startswith("FROM sandmle-base:1")
    other = tmp_path / "h2"
    assert cli("envs", "export", env_id, str(other), "--format", "harbor", "--base-image", "python:3.11-slim").code == 0
    assert "pip install" in (other / env_id / "environment" / "Dockerfile").read_text()
    assert not (other / env_id / "environment" / "docker-compose.yaml").exists()


def test_export_refuses_bad_input_with_one_line(xstore, cli, tmp_path):
    env_id = xstore.envs.list(status="verified")[0]["id"]
    res = cli("envs", "export", "no-such-env,also-not", str(tmp_path / "x"), "--format", "harbor")
    assert res.code != 0 and "no environment or folder 'no-such-env'" in res.err and "Traceback" not in res.err
    keep = tmp_path / "keep"
    keep.mkdir()
    (keep / "mine.txt").write_text("precious")
    res = cli("envs", "export", env_id, str(keep), "--format", "harbor", "--force")
    assert res.code != 0 and "does not hold an export" in res.err
    assert (keep / "mine.txt").read_text() == "precious"
    res = cli("envs", "export", env_id, str(tmp_path / "y"), "--format", "harbor", "--paper-compatible")
    assert res.code != 0 and "--paper-compatible" in res.err
    assert not (tmp_path / "y").exists() and not list(tmp_path.glob(".y-export-*"))


def test_export_refuses_an_environment_that_holds_a_link(xstore, cli, tmp_path):
    """A link planted in a stored environment's public/ (to its answers) never leaves with it: every format refuses,
    naming the path, and writes nothing."""
    env = _env(xstore, xstore.envs.list(status="verified")[0]["id"])
    link = env.public / "peek.csv"
    link.symlink_to("../private/answers.csv")
    try:
        for fmt in (None, "mlebench", "harbor", "sandmle"):
            dest = tmp_path / f"out-{fmt}"
            res = cli("envs", "export", env.id, str(dest), *(("--format", fmt) if fmt else ()))
            assert res.code == 2 and res.err.startswith(f"error: {link}: a symbolic link (to ../private/answers.csv) "
                                                        f"in environment {env.id}"), res.err
            assert not dest.exists() and not list(tmp_path.glob(f".{dest.name}-export-*"))
    finally:
        link.unlink()


def _grader_results(grader: Path, paths: dict[str, Path], answers: Path) -> dict[str, dict]:
    """Every submission through the exported grader's main(), in one interpreter started with -I (no sandmle on its
    path) from another folder; also reports whether any sandmle module was loaded."""
    code = (
        "import contextlib, io, json, runpy, sys\n"
        f"g = runpy.run_path({str(grader)!r}, run_name='grader')\n"
        f"out = {{}}\n"
        f"for name, path in {({k: str(v) for k, v in paths.items()})!r}.items():\n"
        "    buf = io.StringIO()\n"
        "    with contextlib.redirect_stdout(buf):\n"
        f"        rc = g['main'](['--submission_path', path, '--answers', {str(answers)!r}, '--reward', 'milestone'])\n"
        "    out[name] = {'rc': rc, **json.loads(buf.getvalue())}\n"
        "out['_own'] = sorted(m for m in sys.modules if m.split('.')[0] in ('engine', 'workbench'))\n"
        "print(json.dumps(out))\n")
    proc = subprocess.run([sys.executable, "-I", "-c", code], cwd=grader.parent.parent, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


def test_exported_grader_scores_every_submission_as_sandmle_grade(xstore, cli, tmp_path):
    from engine.grading import compute_reward, grade

    assert cli("envs", "export", "all", str(tmp_path / "h"), "--format", "harbor").code == 0
    rng = np.random.default_rng(0)
    checked = 0
    for row in xstore.envs.list(status="verified"):
        env = _env(xstore, row["id"])
        grader = tmp_path / "h" / row["id"] / "tests" / "grader.py"
        tree = ast.parse(grader.read_text())
        imports = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names} | \
            {(n.module or "").split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        assert not imports & {"engine", "store", "workbench"}, imports
        paths = _write(tmp_path / "subs" / row["id"], submissions(env, rng))
        results = _grader_results(grader, paths, env.answers)
        assert results.pop("_own") == []
        for name, path in paths.items():
            ours, theirs = grade(env, path), results[name]
            assert theirs["valid_submission"] == ours.valid_submission, (row["id"], name, theirs["error"], ours.error)
            assert theirs["score"] == ours.score and theirs["error"] == ours.error, (row["id"], name)
            assert (theirs["gold_medal"], theirs["bronze_medal"], theirs["rank"]) == \
                (ours.gold_medal, ours.bronze_medal, ours.rank)
            assert theirs["reward"] == compute_reward(ours, [], "milestone")[0]
            assert theirs["rc"] == (0 if ours.valid_submission else 1)
            checked += 1
    valid = sum(1 for r in xstore.envs.list(status="verified"))
    assert checked >= 15 * valid


def test_paper_layout_evaluator_called_as_the_paper_score_tool_prints_sandmle_grade(xstore, cli, tmp_path):
    """The SynScoreTool call: ["python", "evaluator.py", "--submission_path", P] with cwd prepared/public, one JSON
    object on stdout; a non-zero exit is an invalid submission."""
    env_id = xstore.envs.list(seed_id="taxi-fare")[0]["id"]
    env = _env(xstore, env_id)
    rng = np.random.default_rng(1)
    subs = submissions(env, rng)
    paths = _write(tmp_path / "subs", {k: subs[k] for k in ("sample", "noisy0", "noisy2", "missing_row")})
    for flag, answers_at in (((), "private"), (("--paper-compatible",), "public")):
        dest = tmp_path / f"paper-{answers_at}"
        res = cli("envs", "export", env_id, str(dest), "--format", "sandmle", *flag)
        assert res.code == 0, res.err
        assert ("an agent that can read public/ can read the answers there" in res.out) == bool(flag)
        public = dest / env_id / "prepared" / "public"
        assert (public / "answer.csv").is_file() == bool(flag)
        for name, path in paths.items():
            proc = subprocess.run([sys.executable, "evaluator.py", "--submission_path", str(path)], cwd=public,
                                  capture_output=True, text=True, timeout=120)
            data = json.loads(proc.stdout)
            graded = cli("grade", env_id, str(path), "--json").json()
            assert data["score"] == graded["score"] and data["error"] == graded["error"], name
            assert (proc.returncode != 0) == (not graded["valid_submission"])
            for key in ("is_lower_better", "gold_threshold", "silver_threshold", "bronze_threshold",
                        "median_threshold"):
                assert data[key] == graded[key], key


def test_grade_reward_option_is_the_reward_of_the_submission_alone(xstore, cli, tmp_path):
    env_id = xstore.envs.list(seed_id="author-style")[0]["id"]
    env = _env(xstore, env_id)
    out = cli("grade", env_id, str(env.answers), "--reward", "milestone", "--json").json()
    assert out["gold_medal"] and out["reward"] == 0.9  # 0.2 valid + 0.7 gold; the format term needs turns
    bad = tmp_path / "bad.csv"
    bad.write_text("nothing,here\n1,2\n")
    res = cli("grade", env_id, str(bad), "--reward", "milestone")
    assert res.code == 3 and "reward (milestone, submission alone) 0" in res.out


# ---------------------------------------------------------------------------------------------- the real harbor
def _harbor_ready() -> str | None:
    if not (HARBOR / ".sandmle-installed").is_file():
        return f"no Harbor venv at {HARBOR} (`make harbor-venv` installs harbor 0.25 on Python >= 3.12)"
    return None


def _harbor(dest: Path, agent: str, jobs: Path, *extra: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "DOCKER_CONFIG": str(HARBOR / "docker-config"), "PYTHONPATH": str(dest)}
    return subprocess.run([str(HARBOR / "bin" / "harbor"), "run", "-p", str(dest), "-a", agent, "-e",
                           "sandmle_harbor:OfflineDockerEnvironment", "-o", str(jobs), "-y", "-q", "-n", "2", *extra],
                          capture_output=True, text=True, timeout=900, env=env)


def _trials(jobs: Path) -> dict[str, Path]:
    """Task name (the exported folder) → its trial folder (Harbor cuts trial names to 32 characters)."""
    return {Path(json.loads((t / "config.json").read_text())["task"]["path"]).name: t
            for t in jobs.glob("*/*__*") if (t / "config.json").is_file()}


@pytest.mark.slow
def test_harbor_runs_exported_tasks_oracle_earns_sandmle_grade_nop_earns_invalid(xstore, cli, tmp_path,
                                                                                 docker_daemon):
    """`harbor run` (PyPI's harbor 0.25, its docker environment through Docker Compose v2) on two exported tasks:
    the oracle agent runs solution/solve.sh, the verifier tests/test.sh; the reward Harbor reads equals the reward
    of `sandmle grade` on the same submission; the nop agent writes nothing and gets the invalid reward."""
    import docker

    from engine.grading import compute_reward, grade
    from engine.sandbox.image import build_base_image

    reason = _harbor_ready()
    if reason:
        pytest.skip(reason)
    build_base_image(docker.from_env())
    ids = [xstore.envs.list(seed_id=s)[0]["id"] for s in ("author-style", "tabular-binary-manufacturing")]
    dest = tmp_path / "harbor"
    assert cli("envs", "export", ",".join(ids), str(dest), "--format", "harbor").code == 0
    proc = _harbor(dest, "oracle", tmp_path / "jobs-oracle", "--artifact", "/app/submission.csv")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    trials = _trials(tmp_path / "jobs-oracle")
    assert sorted(trials) == sorted(ids)
    for env_id, trial in trials.items():
        env = _env(xstore, env_id)
        submission = trial / "artifacts" / "app" / "submission.csv"
        ours = grade(env, submission)
        assert ours.valid_submission and ours.any_medal, ours.error
        reward = float((trial / "verifier" / "reward.txt").read_text())
        assert reward == compute_reward(ours, [], "milestone")[0] >= 0.7
        assert json.loads((trial / "result.json").read_text())["verifier_result"]["rewards"]["reward"] == reward
        report = json.loads((trial / "verifier" / "grade.json").read_text())
        assert report["score"] == ours.score
        assert cli("grade", env_id, str(submission), "--reward", "milestone", "--json").json()["reward"] == reward
    proc = _harbor(dest, "nop", tmp_path / "jobs-nop")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    for env_id, trial in _trials(tmp_path / "jobs-nop").items():
        invalid = grade(_env(xstore, env_id), trial / "no-submission.csv")
        assert float((trial / "verifier" / "reward.txt").read_text()) == compute_reward(invalid, [], "milestone")[0] \
            == 0.0
        assert json.loads((trial / "verifier" / "grade.json").read_text())["valid_submission"] is False
    shutil.rmtree(tmp_path / "jobs-oracle", ignore_errors=True)
