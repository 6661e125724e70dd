"""Environments arrive: `sandmle envs import DIR` on tasks in the SandMLE paper's layout -- the answers move out of
public/, the paper's evaluator decides which of our metrics it computes, our ladder verifies, provenance is
`imported: sandmle`, one line per bad task and nothing half-stored; the round trip export -> import grades every
submission the same; imported environments run in eval, train grpo and the workbench."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from conftest import cli_runner, store_at
from test_exchange import _write, submissions

SEEDS = ("taxi-fare", "author-style")


@pytest.fixture(scope="module")
def round_trip(tmp_path_factory):
    """Two synthesized environments exported in the paper's layout and imported again into the same store."""
    from engine.exchange.export import ExportOptions, export_envs
    from engine.exchange.paper_import import import_tasks
    from engine.seeds.load import load_shipped
    from engine.synthesis.pipeline import synthesize
    from store import Store

    home = tmp_path_factory.mktemp("import-home")
    with pytest.MonkeyPatch.context() as env:  # monkeypatch itself is function-scoped
        env.setenv("SANDMLE_HOME", str(home))
        with Store(home / "sandmle.db") as s:
            load_shipped(s)
            originals = [synthesize(s, seed, 1, rng_seed=5).verified[0].env_id for seed in SEEDS]
            paper = home.parent / "paper"
            export_envs(s, ",".join(originals), paper, ExportOptions(fmt="sandmle", paper_compatible=True))
            outcomes = import_tasks(s, paper, split="heldout")
        yield home, paper, originals, outcomes


@pytest.fixture
def istore(round_trip, monkeypatch):
    with store_at(round_trip[0], monkeypatch) as s:
        yield s


def test_import_moves_answers_out_maps_the_metric_verifies_and_records_provenance(round_trip, istore):
    _, paper, originals, outcomes = round_trip
    assert [o.status for o in outcomes] == ["verified", "verified"], [o.line() for o in outcomes]
    for original, outcome in zip(sorted(originals), outcomes):
        row, before = istore.envs.get(outcome.env_id), istore.envs.get(original)
        assert outcome.task == original and row["status"] == "verified" and row["split"] == "heldout"
        assert row["metric"] == before["metric"] == outcome.metric and row["lower_is_better"] == before["lower_is_better"]
        env_dir = Path(row["dir"])
        assert not (env_dir / "public" / "answer.csv").exists() and not (env_dir / "public" / "evaluator.py").exists()
        assert (env_dir / "private" / "answers.csv").read_bytes() == \
            (paper / original / "prepared" / "public" / "answer.csv").read_bytes()
        prov = row["verification"]["provenance"]
        assert prov["imported"] == "sandmle" and prov["task"] == original and prov["source"].endswith(original)
        # ours from our ladder, the paper's kept beside them (here: the thresholds our export embedded)
        assert row["thresholds"] == outcome.thresholds and istore.envs.leaderboard(row["id"])
        assert outcome.paper_thresholds == {k: before["thresholds"][k] for k in ("gold", "silver", "bronze", "median")}
        assert row["verification"]["paper"]["thresholds"] == outcome.paper_thresholds
        assert row["verification"]["report"]["leakage"] is not None
        files = {f["path"]: f["role"] for f in istore.envs.files(row["id"])}
        assert files["private/answers.csv"] == "private" and files["public/train.csv"] == "public"


def test_round_trip_grades_every_submission_the_same(round_trip, istore, tmp_path):
    from engine.envs.layout import EnvSpec
    from engine.grading import grade

    _, _, originals, outcomes = round_trip
    rng = np.random.default_rng(3)
    for original, outcome in zip(sorted(originals), outcomes):
        before, after = EnvSpec.from_store(istore, original), EnvSpec.from_store(istore, outcome.env_id)
        paths = _write(tmp_path / original, submissions(before, rng))
        assert len(paths) >= 15
        for name, path in paths.items():
            a, b = grade(before, path), grade(after, path)
            assert (a.valid_submission, a.score, a.error) == (b.valid_submission, b.score, b.error), name


def test_bad_tasks_get_one_line_each_and_nothing_is_stored(round_trip, istore, tmp_path, capsys):
    _, paper, originals, _ = round_trip
    good = paper / sorted(originals)[0]
    bad = tmp_path / "bad"
    causes = {"noeval": "no evaluator (prepared/public/evaluator.py)",
              "noanswers": "no answers (answer.csv in prepared/public/ or prepared/private/)",
              "notrain": "no train file (prepared/public/train.csv)",
              "badids": "ids that do not match", "crashes": "its evaluator fails on the sample submission"}
    for name in causes:
        shutil.copytree(good, bad / name)
    public = {n: bad / n / "prepared" / "public" for n in causes}
    (public["noeval"] / "evaluator.py").unlink()
    (public["noanswers"] / "answer.csv").unlink()
    (public["notrain"] / "train.csv").unlink()
    lines = (public["badids"] / "answer.csv").read_text().splitlines()
    (public["badids"] / "answer.csv").write_text("\n".join(lines[:-1]) + "\n")
    (public["crashes"] / "evaluator.py").write_text("raise SystemExit('cannot parse the submission')\n")
    rows_before, files_before = istore.envs.count(), sorted(p.name for p in (Path(istore.data_dir) / "envs").iterdir())
    run = cli_runner(capsys)
    res = run("envs", "import", str(bad))
    assert res.code == 1 and "Traceback" not in res.err
    out = res.out.splitlines()
    for name, cause in causes.items():
        line = next(ln for ln in out if ln.startswith(f"bad {name}:"))
        assert cause in line, line
    assert "evaluator fails on the sample submission (exit 1: cannot parse the submission)" in res.out
    assert out[-1] == "0 verified, 0 rejected, 5 bad (of 5 tasks)"
    assert istore.envs.count() == rows_before  # no row, no pending reservation
    assert sorted(p.name for p in (Path(istore.data_dir) / "envs").iterdir()) == files_before
    js = run("envs", "import", str(bad / "noeval"), "--json")
    assert js.code == 1 and js.json() == [{"task": "noeval", "status": "bad", "env_id": None,
                                            "reason": causes["noeval"], "metric": None, "thresholds": None,
                                            "paper_thresholds": None}]
    assert run("envs", "import", str(tmp_path / "nowhere")).err.strip().startswith("error:")


def test_import_is_gated_by_the_exploit_audit(round_trip, istore, tmp_path, capsys):
    """A task whose public/ also holds the answers under another name (the paper's layout invites it) is stored
    rejected, the audit naming the file; its answer.csv itself never stays in public/."""
    import pandas as pd

    _, paper, originals, _ = round_trip
    task = tmp_path / "leaky" / "leaky-task"
    shutil.copytree(paper / sorted(originals)[0], task)
    public = task / "prepared" / "public"
    answers = pd.read_csv(public / "answer.csv")
    answers.rename(columns={c: f"ref_{c}" for c in answers.columns[1:]}).to_csv(public / "customer_reference.csv",
                                                                                  index=False)
    res = cli_runner(capsys)("envs", "import", str(task), "--json")
    assert res.code == 1, res.err
    (outcome,) = res.json()
    assert outcome["status"] == "rejected" and "exploit audit" in outcome["reason"]
    assert "customer_reference.csv" in outcome["reason"]
    row = istore.envs.get(outcome["env_id"])
    assert row["status"] == "rejected" and row["verification"]["provenance"]["imported"] == "sandmle"
    assert not (Path(row["dir"]) / "public" / "answer.csv").exists()


@pytest.mark.slow
def test_imported_environments_run_in_eval_and_train_grpo(round_trip, istore, capsys, tmp_path):
    from rl_tiny import build_tiny

    _, _, _, outcomes = round_trip
    run = cli_runner(capsys)
    env_id = outcomes[0].env_id
    res = run("eval", "--policy", "scripted", "--scaffold", "oneshot", "--envs", "split:heldout", "--json")
    assert res.code == 0, res.err
    data = res.json()
    assert data["n_envs"] == 2 and data["status"] == "done" and data["errors"] == 0
    assert env_id in json.dumps(data["per_env"]) and data["summary"]["valid"]["mean"] > 0
    tiny = build_tiny(tmp_path / "tiny")
    res = run("train", "grpo", "--model", str(tiny), "--env-ids", env_id, "--steps", "1", "--envs-per-step", "1",
              "--group-size", "2", "--max-turns", "2", "--max-new-tokens", "12", "--lora-r", "4", "--device", "cpu",
              "--json")
    assert res.code == 0, res.err
    assert res.json()["steps_done"] == 1
    trajectories = istore.trajectories.list(run_id=res.json()["run_id"])
    assert {t.env_id for t in trajectories} == {env_id} and all(t.reward is not None for t in trajectories)


async def test_environments_screen_shows_the_origin(round_trip, istore):
    from textual.widgets import DataTable

    from test_app import wait_for
    from test_app_screens import static_text
    from workbench.app import Workbench

    _, _, originals, outcomes = round_trip
    app = Workbench(store=istore)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("2")
        await wait_for(pilot, lambda: app.current_mode == "environments")
        table = app.screen.query_one("#envs-table", DataTable)
        seen = set()
        for _ in range(table.row_count):
            text = static_text(app.screen.query_one("#env-summary"))
            seen.add("imported: sandmle" if "imported: sandmle" in text else
                     "synthesized" if "synthesized" in text else text)
            await pilot.press("down")
            await pilot.pause()
        assert seen == {"imported: sandmle", "synthesized"}
