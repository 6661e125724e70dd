"""Issue 22: a task of the paper's layout whose evaluator computes a metric we do not have (a weighted absolute
error: each row's error divided by the size of its true value) is imported with that evaluator as its grader, run
in the sandbox at every grade: `sandmle grade`, an episode in eval (and its score tool, on the validation split),
the verifier's ladder, fuzzing and exploit audit, the exports, train grpo. An evaluator that crashes or prints
garbage gives an invalid grade with one line, never a traceback."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import PRIVATE_OPEN_AUDIT, ROOT, cli_runner, store_at

#: the task's evaluator, in the paper's contract: ``python evaluator.py --submission_path P`` in public/, the
#: answers in answer.csv there, one JSON object out
EVALUATOR = '''"""Weighted absolute error: each row's error divided by the size of its true rate."""
import argparse
import json
import sys

import numpy as np
import pandas as pd


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--submission_path", required=True)
    args = parser.parse_args()
    answers = pd.read_csv("answer.csv", dtype=str)
    sub = pd.read_csv(args.submission_path, dtype=str)
    idc, target = answers.columns[0], answers.columns[1]
    if list(sub.columns) != [idc, target]:
        sys.exit(f"expected columns {[idc, target]}, got {list(sub.columns)}")
    if len(sub) != len(answers) or sub[idc].duplicated().any() or set(sub[idc]) != set(answers[idc]):
        sys.exit("the submission's ids are not the test ids")
    pred = pd.to_numeric(sub[target], errors="coerce")
    if pred.isna().any() or not np.isfinite(pred).all():
        sys.exit("predictions must be finite numbers")
    if (pred > 1e9).any():
        raise OverflowError("a rate beyond any bank's")
    truth = pd.to_numeric(answers.set_index(idc)[target])
    guess = pred.set_axis(sub[idc]).loc[truth.index].to_numpy()
    score = float(np.mean(np.abs(truth.to_numpy() - guess) / np.maximum(np.abs(truth.to_numpy()), 1.0)))
    print(json.dumps({"score": score, "is_lower_better": True, "gold_threshold": 0.05, "silver_threshold": 0.1,
                      "bronze_threshold": 0.15, "median_threshold": 0.3}))


if __name__ == "__main__":
    main()
'''
PAPER_THRESHOLDS = {"gold": 0.05, "silver": 0.1, "bronze": 0.15, "median": 0.3}


def weighted_error(answers: pd.DataFrame, sub: pd.DataFrame) -> float:
    """The evaluator's metric, computed here independently."""
    idc, target = answers.columns[0], answers.columns[1]
    truth = pd.to_numeric(answers.set_index(idc)[target])
    guess = pd.to_numeric(sub.set_index(idc)[target]).loc[truth.index]
    return float(np.mean(np.abs(truth - guess) / np.maximum(np.abs(truth), 1.0)))


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    """A synthesized regression environment exported in the paper's layout with its answers in public/, its
    evaluator replaced by EVALUATOR, and imported: (home, task folder, outcome)."""
    from engine.exchange.export import ExportOptions, export_envs
    from engine.exchange.paper_import import import_tasks
    from engine.seeds.load import load_shipped
    from engine.synthesis.pipeline import synthesize
    from store import Store

    home = tmp_path_factory.mktemp("evaluator-home")
    with pytest.MonkeyPatch.context() as env:  # monkeypatch itself is function-scoped
        env.setenv("SANDMLE_HOME", str(home))
        with Store(home / "sandmle.db") as s:
            load_shipped(s)
            original = synthesize(s, "taxi-fare", 1, rng_seed=5).verified[0].env_id
            export = home.parent / "paper-export"
            export_envs(s, original, export, ExportOptions(fmt="sandmle", paper_compatible=True))
            task = home.parent / "tasks" / "weighted"
            shutil.copytree(export / original, task)
            (task / "prepared" / "public" / "evaluator.py").write_text(EVALUATOR)
            (outcome,) = import_tasks(s, task.parent, split="heldout")
        yield home, task, outcome


@pytest.fixture
def estore(imported, monkeypatch):
    with store_at(imported[0], monkeypatch) as s:
        yield s


def _env(store, outcome):
    from engine.envs.layout import EnvSpec

    return EnvSpec.from_store(store, outcome.env_id)


def _paper_call(public: Path, submission: Path) -> subprocess.CompletedProcess:
    """The paper's score tool's call: cwd public/, one JSON object on stdout."""
    return subprocess.run([sys.executable, "evaluator.py", "--submission_path", str(submission)], cwd=public,
                          capture_output=True, text=True, timeout=120)


def test_an_evaluator_of_a_metric_we_lack_becomes_the_grader_and_the_task_is_verified(imported, estore):
    _, task, outcome = imported
    assert outcome.status == "verified", outcome.line()
    assert outcome.metric == "evaluator" and "graded by its own evaluator" in outcome.line()
    row = estore.envs.get(outcome.env_id)
    env_dir = Path(row["dir"])
    grade = json.loads((env_dir / "private" / "grade.json").read_text())
    assert grade["metric"] == grade["grader"] == "evaluator" and grade["lower_is_better"] is True
    assert grade["proxy_metric"] == "rmse" and grade["answer_columns"] == ["id", "interest_rate_pct"]
    assert (env_dir / "private" / "evaluator.py").read_text() == EVALUATOR
    assert not (env_dir / "public" / "evaluator.py").exists() and not (env_dir / "public" / "answer.csv").exists()
    assert row["metric"] == "evaluator" and row["lower_is_better"] == 1 and row["status"] == "verified"
    report = row["verification"]["report"]
    assert report["bootstrap_metric"] == "rmse" and report["audit"]["findings"] == []
    assert report["bootstrap_resamples"] == 1000 and report["gap_lower_q"] > 0
    assert all(v == "invalid" or v.startswith("score") for v in report["fuzz"].values())
    assert report["fuzz"]["missing_row"] == report["fuzz"]["wrong_dtype"] == "invalid"
    # the ladder was graded by the evaluator; the board is our population (graded by it too), and the task keeps
    # the thresholds its evaluator brings (board "paper"), ours kept beside them
    paper = row["verification"]["paper"]
    assert paper["thresholds"] == PAPER_THRESHOLDS == outcome.paper_thresholds
    ladder = {(r["name"], r["seed"]): r["score"] for r in report["ladder"]}
    for name in ("strong", "simple", "trivial"):
        assert ladder[(name, 0)] == pytest.approx(paper["probe_scores"][f"{name}-0"], rel=1e-12)
    board = estore.envs.leaderboard(outcome.env_id)
    assert len(board) >= 40 and {e["source"] for e in board} == {"population"}
    assert row["thresholds"]["board"] == "paper" and row["thresholds"]["population"] != PAPER_THRESHOLDS
    assert {k: row["thresholds"][k] for k in PAPER_THRESHOLDS} == PAPER_THRESHOLDS
    answers = pd.read_csv(env_dir / "private" / "answers.csv", dtype={"id": str})
    sample = pd.read_csv(env_dir / "public" / "sample_submission.csv", dtype={"id": str})
    assert paper["probe_scores"]["sample"] == pytest.approx(weighted_error(answers, sample), rel=1e-12)
    ours = row["thresholds"]["population"]
    assert ours["gold"] < ours["silver"] < ours["bronze"] <= ours["median"]  # lower is better: three tiers


def test_sandmle_grade_prints_the_evaluators_score(imported, estore, capsys, tmp_path):
    _, task, outcome = imported
    env = _env(estore, outcome)
    answers = pd.read_csv(env.answers, dtype={"id": str})
    rng = np.random.default_rng(0)
    noisy = answers.assign(interest_rate_pct=answers["interest_rate_pct"] * rng.uniform(0.7, 1.3, len(answers)))
    noisy.to_csv(tmp_path / "noisy.csv", index=False)
    run = cli_runner(capsys)
    res = run("grade", outcome.env_id, str(tmp_path / "noisy.csv"))
    assert res.code == 0, res.err
    expected = weighted_error(answers, noisy)
    assert res.out.startswith(f"{outcome.env_id}: score {expected:.6g} (lower is better)")
    assert "graded by its own evaluator" in res.out and "paper's thresholds gold 0.05" in res.out
    js = run("grade", outcome.env_id, str(tmp_path / "noisy.csv"), "--json").json()
    assert js["score"] == pytest.approx(expected, rel=1e-12) and js["grader"] == "evaluator"
    assert js["paper_thresholds"] == PAPER_THRESHOLDS and js["gold_threshold"] == env.thresholds["gold"]
    # exactly what the paper's score tool gets from the evaluator in the task's own public/ folder
    theirs = json.loads(_paper_call(task / "prepared" / "public", tmp_path / "noisy.csv").stdout)
    assert js["score"] == pytest.approx(theirs["score"], rel=1e-12)


def test_a_crashing_or_garbage_evaluator_gives_an_invalid_grade_in_one_line(imported, estore, capsys, tmp_path):
    _, _, outcome = imported
    env = _env(estore, outcome)
    sample = pd.read_csv(env.public / "sample_submission.csv", dtype={"id": str})
    sample.assign(interest_rate_pct=1e12).to_csv(tmp_path / "huge.csv", index=False)
    run = cli_runner(capsys)
    res = run("grade", outcome.env_id, str(tmp_path / "huge.csv"))
    assert res.code == 3 and "Traceback" not in res.out + res.err
    assert res.out.splitlines()[0] == (f"{outcome.env_id}: invalid submission: the environment's evaluator exited 1: "
                                       "OverflowError: a rate beyond any bank's")
    sample.to_csv(tmp_path / "sample.csv", index=False)
    broken = {"garbage": ("print('<html>502 bad gateway</html>')",
                          "printed no JSON object (it printed: <html>502 bad gateway</html>)"),
              "nan": ("import json; print(json.dumps({'score': float('nan'), 'is_lower_better': True}))",
                      "gave no finite score (score: nan)"),
              "silent": ("pass", "printed no JSON object (it printed: nothing)"),
              "crash": ("import pandas as pd\npd.read_csv('no_such_file.csv')",
                        "exited 1: FileNotFoundError: [Errno 2] No such file or directory: 'no_such_file.csv'")}
    for name, (code, said) in broken.items():
        folder = tmp_path / name
        shutil.copytree(env.dir, folder)
        (folder / "private" / "evaluator.py").write_text(code + "\n")
        res = run("grade", str(folder), str(tmp_path / "sample.csv"))
        assert res.code == 3 and "Traceback" not in res.out + res.err, (name, res.out, res.err)
        line = res.out.splitlines()[0]
        assert line.endswith("invalid submission: the environment's evaluator " + said), (name, line)


def test_an_episode_in_eval_gets_its_reward_from_the_evaluator(imported, estore, capsys):
    _, _, outcome = imported
    res = cli_runner(capsys)("eval", "--policy", "scripted", "--scaffold", "react", "--envs", outcome.env_id,
                             "--json")
    assert res.code == 0, res.err
    data = res.json()
    assert data["n_envs"] == 1 and data["errors"] == 0 and data["summary"]["valid"]["mean"] == 1.0
    (traj,) = [t for t in estore.trajectories.list(run_id=data["run_id"])]
    traj = estore.trajectories.get(traj.id)
    env = _env(estore, outcome)
    answers = pd.read_csv(env.answers, dtype={"id": str})
    sub = pd.read_csv(traj.submission_path, dtype={"id": str})
    assert traj.grade["score"] == pytest.approx(weighted_error(answers, sub), rel=1e-12)
    assert traj.reward >= 0.2 and traj.reward == data["per_env"][0]["reward"]
    scores = [t.observation for t in traj.turns if t.tool == "score" and t.observation]
    assert scores and all(s.startswith("validation evaluator = ") for s in scores), scores


def test_the_score_tool_runs_the_evaluator_on_the_validation_split_never_the_test_answers(imported, estore,
                                                                                          tmp_path):
    from engine.agents.score_tool import carve, parse_score, score_validation
    from engine.sandbox import get_backend

    _, _, outcome = imported
    env = _env(estore, outcome)
    split = carve(env.public, env.grade, key=env.id)
    assert split.answers is not None and list(split.answers.columns) == ["id", "interest_rate_pct"]
    train_ids = set(pd.read_csv(env.public / "train.csv", dtype={"id": str})["id"])
    assert set(split.answers["id"]) <= train_ids
    guess = split.answers.assign(interest_rate_pct=split.answers["interest_rate_pct"] * 1.1 + 2)
    with get_backend("local", root=tmp_path / "box") as box:
        obs = score_validation(env.grade, split, guess.to_csv(index=False).encode(), public=env.public, sandbox=box)
        value = parse_score(obs)
        assert obs.startswith("validation evaluator = ") and value == pytest.approx(
            weighted_error(split.answers, guess), rel=1e-5), obs
        test_ids = pd.read_csv(env.answers, dtype={"id": str})[["id"]].assign(interest_rate_pct=1.0)
        refused = score_validation(env.grade, split, test_ids.to_csv(index=False).encode(), public=env.public,
                                   sandbox=box)
    assert refused == ("invalid val/submission.csv: the environment's evaluator exited 1: the submission's ids are "
                       "not the test ids")


AUDIT = PRIVATE_OPEN_AUDIT + r"""
env = EnvSpec.from_dir(sys.argv[1])          # reads grade.json and evaluator.py here, before the episode
before = len(seen)
e = MLEEnv(env.id, env.public, env.grade, get_backend("local", root=sys.argv[2]))
e.reset()
e.step(ToolCall("python", {"code": "import shutil; shutil.copy('val/sample_submission.csv', 'val/submission.csv')"}))
obs = e.step(ToolCall("score", {})).observation
e.close()
print(json.dumps({"during": seen[before:], "obs": obs}))
"""


def test_the_score_tool_opens_nothing_in_private(imported, estore, tmp_path):
    _, _, outcome = imported
    env = _env(estore, outcome)
    out = subprocess.run([sys.executable, "-c", AUDIT, str(env.dir), str(tmp_path)], cwd=ROOT, capture_output=True,
                         text=True, timeout=240)
    assert out.returncode == 0, out.stderr[-2000:]
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert res["obs"].startswith("validation evaluator = ") and res["during"] == [], res


def _submissions(env) -> dict[str, pd.DataFrame]:
    from engine.synthesis.verifier import fuzz_cases

    answers = pd.read_csv(env.answers, dtype={"id": str})
    sample = pd.read_csv(env.public / "sample_submission.csv", dtype={"id": str})
    rng = np.random.default_rng(2)
    out = {"sample": sample, "perfect": answers, "huge": sample.assign(interest_rate_pct=1e12)}
    for i in range(2):
        out[f"noisy{i}"] = answers.assign(interest_rate_pct=answers["interest_rate_pct"]
                                          + rng.normal(0, 3 * (i + 1), len(answers)))
    out.update({k: v for k, v in fuzz_cases(env.grade, answers, rng).items()
                if k in ("missing_row", "unknown_id", "shuffled_ids", "nan_value", "wrong_dtype")})
    return out


def _main_of(grader: Path, paths: dict[str, Path], extra: list[str]) -> dict[str, dict]:
    """Every submission through an exported grader's main() in one interpreter started with -I (no sandmle on its
    path) in the grader's folder, as the paper's score tool and Harbor's test.sh call it."""
    code = (
        "import contextlib, io, json, runpy, sys\n"
        f"g = runpy.run_path({str(grader)!r}, run_name='grader')\n"
        "out = {}\n"
        f"for name, path in {({k: str(v) for k, v in paths.items()})!r}.items():\n"
        "    buf = io.StringIO()\n"
        "    with contextlib.redirect_stdout(buf):\n"
        f"        rc = g['main'](['--submission_path', path, *{extra!r}])\n"
        "    out[name] = {'rc': rc, **json.loads(buf.getvalue())}\n"
        "out['_own'] = sorted(m for m in sys.modules if m.split('.')[0] in ('engine', 'workbench'))\n"
        "print(json.dumps(out))\n")
    proc = subprocess.run([sys.executable, "-I", "-c", code], cwd=grader.parent, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


@pytest.mark.slow
def test_exports_grade_every_submission_as_sandmle_grade(imported, estore, capsys, tmp_path):
    """Harbor's tests/grader.py and the paper layout's evaluator.py run the task's evaluator (embedded) and agree
    with `sandmle grade`; exported in the paper's layout and imported again, it grades every submission the same."""
    from engine.envs.layout import EnvSpec
    from engine.exchange.paper_import import import_tasks
    from engine.grading import grade

    _, _, outcome = imported
    env = _env(estore, outcome)
    run = cli_runner(capsys)
    assert run("envs", "export", outcome.env_id, str(tmp_path / "h"), "--format", "harbor").code == 0
    assert run("envs", "export", outcome.env_id, str(tmp_path / "p"), "--format", "sandmle").code == 0
    harbor = tmp_path / "h" / outcome.env_id / "tests"
    public = tmp_path / "p" / outcome.env_id / "prepared" / "public"
    assert (harbor / "public" / "test.csv").is_file() and not (public / "answer.csv").exists()
    assert "the task's own evaluator" in (tmp_path / "h" / outcome.env_id / "instruction.md").read_text()
    subs = _submissions(env)
    for name, df in subs.items():
        df.to_csv(tmp_path / f"{name}.csv", index=False)
    ours = {name: grade(env, tmp_path / f"{name}.csv") for name in subs}
    valid = sum(r.valid_submission for r in ours.values())
    assert valid >= 5 and len(ours) - valid >= 4
    paths = {name: tmp_path / f"{name}.csv" for name in subs}
    for grader, extra in ((harbor / "grader.py", ["--answers", str(harbor / "answers.csv")]),
                          (public / "evaluator.py", [])):
        results = _main_of(grader, paths, extra)
        assert results.pop("_own") == []  # no sandmle module: the grader is standalone
        for name, report in ours.items():
            theirs = results[name]
            assert (theirs["valid_submission"], theirs["score"], theirs["error"]) == \
                (report.valid_submission, report.score, report.error), (grader.name, name)
            assert theirs["rc"] == (0 if report.valid_submission else 1)
    with_answers = tmp_path / "again" / outcome.env_id
    shutil.copytree(tmp_path / "p" / outcome.env_id, with_answers)
    (again,) = import_tasks(estore, with_answers.parent)
    assert again.status == "verified" and again.metric == "evaluator", again.line()
    after = EnvSpec.from_store(estore, again.env_id)
    for name, report in ours.items():
        b = grade(after, tmp_path / f"{name}.csv")
        assert (b.valid_submission, b.score, b.error) == (report.valid_submission, report.score, report.error), name


def test_the_exploit_audit_gates_an_evaluator_graded_import(imported, estore, capsys, tmp_path):
    """The answers shipped again under another name in public/: screened by the proxy metric, confirmed by the
    task's own evaluator, the import is stored rejected naming the file."""
    _, task, _ = imported
    leaky = tmp_path / "leaky" / "leaky-weighted"
    shutil.copytree(task, leaky)
    public = leaky / "prepared" / "public"
    answers = pd.read_csv(public / "answer.csv")
    answers.rename(columns={"interest_rate_pct": "quoted_rate"}).to_csv(public / "rate_sheet.csv", index=False)
    res = cli_runner(capsys)("envs", "import", str(leaky), "--json")
    assert res.code == 1, res.err
    (outcome,) = res.json()
    assert outcome["status"] == "rejected" and outcome["metric"] == "evaluator", outcome
    assert "exploit audit" in outcome["reason"] and "rate_sheet.csv" in outcome["reason"], outcome["reason"]
    audit = estore.envs.get(outcome["env_id"])["verification"]["report"]["audit"]
    leak = next(f for f in audit["findings"] if f["kind"] == "leak")
    assert leak["score"] == pytest.approx(0.0, abs=1e-9)  # the evaluator's own score of the read-off answers


def test_bad_evaluator_graded_tasks_get_one_line_each(imported, estore, capsys, tmp_path):
    _, task, _ = imported
    bad = tmp_path / "bad"
    variants = {
        "nodirection": (EVALUATOR.replace('"is_lower_better": True, ', ""),
                        "its evaluator's metric maps onto none of ours and it prints no is_lower_better"),
        "upsidedown": (EVALUATOR.replace('"is_lower_better": True', '"is_lower_better": False'),
                       "its evaluator's metric maps onto none of ours and it scores the answers (0) no better than "
                       "the sample submission"),
        "crashes": (EVALUATOR.replace("    answers = pd.read_csv", "    raise SystemExit('no answers today')\n"
                                      "    answers = pd.read_csv"),
                    "its evaluator fails on the sample submission (exit 1: no answers today)")}
    for name, (code, _) in variants.items():
        shutil.copytree(task, bad / name)
        (bad / name / "prepared" / "public" / "evaluator.py").write_text(code)
    before = estore.envs.count()
    res = cli_runner(capsys)("envs", "import", str(bad))
    assert res.code == 1 and "Traceback" not in res.out + res.err
    for name, (_, cause) in variants.items():
        line = next(ln for ln in res.out.splitlines() if ln.startswith(f"bad {name}:"))
        assert cause in line, line
    assert estore.envs.count() == before


def test_a_stored_evaluator_graded_environment_is_audited_again(imported, estore, capsys):
    _, _, outcome = imported
    res = cli_runner(capsys)("envs", "audit", outcome.env_id, "--json")
    assert res.code == 0, res.err
    (result,) = res.json()
    assert result["id"] == outcome.env_id and result["findings"] == [] and result["probes"] == []
    assert result["attempts"] > 0 and result["bar"]["strong"] is not None  # screened against the proxy's strong


@pytest.mark.slow
def test_train_grpo_runs_on_an_evaluator_graded_environment(imported, estore, capsys, tmp_path):
    from rl_tiny import build_tiny

    _, _, outcome = imported
    tiny = build_tiny(tmp_path / "tiny")
    res = cli_runner(capsys)("train", "grpo", "--model", str(tiny), "--env-ids", outcome.env_id, "--steps", "1",
                             "--envs-per-step", "1", "--group-size", "2", "--max-turns", "2", "--max-new-tokens",
                             "12", "--lora-r", "4", "--device", "cpu", "--json")
    assert res.code == 0, res.err
    assert res.json()["steps_done"] == 1
    trajectories = estore.trajectories.list(run_id=res.json()["run_id"])
    assert {t.env_id for t in trajectories} == {outcome.env_id} and all(t.reward is not None for t in trajectories)
    assert all(estore.trajectories.get(t.id).grade["valid_submission"] is False or
               estore.trajectories.get(t.id).grade["score"] is not None for t in trajectories)
