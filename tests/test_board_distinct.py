"""Boards count distinct solutions, and the target transform follows the metric (issue 40).

- A population board holds one entry per distinct submission: a feature set whose matrix equals another's does
  not run its models again, identical predictions collapse to one entry before ranking, there is no `cv-select`
  beside its own candidates, and the 40 entries the board promises are 40 different prediction files (the reserve
  fills in when copies leave fewer). Old `population-1` boards are listed by `doctor --deep` and rebuilt by
  `envs reboard`; a board cached by another population is not read.
- Our programs fit log1p of a value target where the metric is on the log scale (RMSLE), whatever the description
  says; the agent's script reads the metric off the description's fixed scoring line only.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import store_at
from engine.agents.templates import Choice, whole_script
from engine.config import load_settings
from engine.envs.layout import EnvSpec, GradeSpec
from engine.eval import boards
from engine.grading.score import read_frame, score_submission
from engine.grading.thresholds import Thresholds
from engine.sandbox import get_backend
from engine.synthesis.distinct import distinct_count, first_of_each, prediction_key
from engine.synthesis.population import (BOARD_VERSION, MIN_ENTRIES, POPULATION, RESERVE, SOLUTIONS, Entry,
                                         run_population)
from engine.synthesis.solutions import LADDER, target_transform, with_solution_imports
from engine.synthesis.verifier import run_ladder


@pytest.fixture(scope="module")
def box():
    b = get_backend(settings=with_solution_imports(load_settings().sandbox))
    yield b
    b.close()


@pytest.fixture(scope="module")
def taxi(tmp_path_factory):
    """One procedural environment of the shipped taxi-fare seed (numbers and a category, no text: the "rich"
    features build the "plain" matrix), in a data dir of the module's."""
    from engine.seeds.load import load_shipped
    from engine.synthesis.pipeline import synthesize
    from store import Store

    home = tmp_path_factory.mktemp("distinct")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SANDMLE_HOME", str(home))
        mp.delenv("SANDMLE_CONFIG", raising=False)
        with Store(home / "sandmle.db") as store:
            load_shipped(store)
            (outcome,) = synthesize(store, "taxi-fare", 1, backend="procedural", rng_seed=7).outcomes
    assert outcome.status == "verified", outcome.reason
    return home, outcome.env_id


# ------------------------------------------------------------------------------------------- the prediction key
def test_the_key_is_the_predictions_not_the_score():
    spec = GradeSpec("rmse", True, "id", ["y"], ["y"], task_type="regression")
    answers = pd.DataFrame({"id": ["a", "b"], "y": [2.0, 2.0]})
    low_high = pd.DataFrame({"id": ["a", "b"], "y": [1.0, 3.0]})
    high_low = pd.DataFrame({"id": ["a", "b"], "y": [3.0, 1.0]})
    # a tie in score with different predictions: two entries
    assert score_submission(spec, answers, low_high) == score_submission(spec, answers, high_low)
    assert prediction_key(low_high, "id", ["y"]) != prediction_key(high_low, "id", ["y"])
    # the same predictions in another row order, or through another code path (last bits of a float): one
    same = pd.DataFrame({"id": ["b", "a"], "y": [3.0, 1.0 + 1e-15]})
    assert prediction_key(same, "id", ["y"]) == prediction_key(low_high, "id", ["y"])
    assert prediction_key(low_high.assign(y=[1.0, 3.0001]), "id", ["y"]) != prediction_key(low_high, "id", ["y"])
    labels = pd.DataFrame({"id": ["a", "b"], "y": ["cat", "dog"]})
    assert prediction_key(labels, "id", ["y"]) != prediction_key(labels.assign(y=["dog", "cat"]), "id", ["y"])
    assert first_of_each([(0, "k1"), (1, "k2"), (2, "k1"), (5, "k1")]) == {2: 0, 5: 0}
    assert distinct_count([low_high, same, high_low], "id", ["y"]) == 2


def test_no_cv_select_and_the_reserve_repeats_no_entry():
    assert "cv-select" not in SOLUTIONS and all(e.solution != "cv-select" for e in (*POPULATION, *RESERVE))
    assert not set(RESERVE) & set(POPULATION) and len(set(RESERVE)) == len(RESERVE)
    assert len(POPULATION) + len(RESERVE) >= MIN_ENTRIES + 10  # room for copies


# ------------------------------------------------------------------------------------ a board of distinct entries
def test_duplicate_entries_collapse_on_a_tabular_seed(taxi, box, monkeypatch):
    home, env_id = taxi
    with store_at(home, monkeypatch) as store:
        env = EnvSpec.from_store(store, env_id)
        row = store.envs.get(env_id)
        stored = store.envs.leaderboard(env_id)
    summary = row["verification"]["report"]["population"]
    # the stored board: distinct, at least 40, no cv-select, its thresholds from this version's board
    assert summary["version"] == BOARD_VERSION and summary["distinct"] == len(stored) >= MIN_ENTRIES
    assert "cv-select" not in {e["name"] for e in stored}
    th = Thresholds.from_dict(row["thresholds"], env.grade.lower_is_better)
    assert row["thresholds"]["version"] == BOARD_VERSION and th.entries == len(stored) and th.distinct()

    answers = read_frame(env.answers, env.grade.id_column)
    pop = run_population(box, env.public, env.grade, answers)
    board = pop.scored
    keys = [prediction_key(pop.submissions[e.index], env.grade.id_column, env.grade.prediction_columns)
            for e in board]
    assert len(set(keys)) == len(keys) == len(board) >= MIN_ENTRIES  # no two entries predict the same
    assert sorted(e.score for e in board) == pytest.approx(sorted(e["score"] for e in stored))
    # "rich" builds the "plain" matrix here: its models that ran on plain were skipped, not run again
    assert pop.summary()["equal_matrices"] == {"rich": "plain"}
    linear_rich = [e for e in pop.entries if e.entry == Entry("linear", {"C": 0.1}, "rich")]
    assert [e.status for e in linear_rich] == ["skipped"]
    assert "rich features equal the plain features" in linear_rich[0].error
    assert linear_rich[0].wall_s is not None and linear_rich[0].index not in pop.submissions  # no model ran
    # a copy that no matrix hash sees (two models, one prediction) is a duplicate, kept off the board and ranks
    cols = (env.grade.id_column, env.grade.prediction_columns)
    for dup in pop.duplicates:
        first = next(e for e in pop.entries if dup.error == f"same predictions as {e.entry.label(pop.regression)}")
        assert dup.score is None and first.score is not None
        assert prediction_key(pop.submissions[dup.index], *cols) == prediction_key(pop.submissions[first.index], *cols)
    # the plan's distinct entries were too few: the reserve filled the board up to the minimum, no further
    assert pop.summary()["reserve"] >= 1 and len(board) == MIN_ENTRIES
    assert len([e for e in board if not e.reserve]) < MIN_ENTRIES


def test_too_few_distinct_entries_are_refused_with_the_reason(taxi, box, monkeypatch):
    home, env_id = taxi
    with store_at(home, monkeypatch) as store:
        env = EnvSpec.from_store(store, env_id)
    answers = read_frame(env.answers, env.grade.id_column)
    pop = run_population(box, env.public, env.grade, answers,
                         entries=(Entry("knn", {"k": 5}, "plain"), Entry("knn", {"k": 5}, "plain", 1),
                                  Entry("linear", {"C": 1.0}, "plain"), Entry("linear", {"C": 1.0}, "plain", 3),
                                  Entry("linear", {"C": 1.0}, "rich")), reserve=())
    assert [e.status for e in pop.entries] == ["ok", "duplicate", "ok", "duplicate", "skipped"]
    why = pop.shortfall(3)
    assert why.startswith("2 distinct solutions scored of 5 run (needs 3; 2 copied another entry's predictions")


def test_doctor_lists_a_population_1_board_and_reboard_makes_it_distinct(run_cli, seeded_store):
    from engine.synthesis.pipeline import synthesize

    (o,) = synthesize(seeded_store, "taxi-fare", 1, backend="procedural", rng_seed=7).outcomes
    assert o.status == "verified", o.reason
    assert _board_findings(run_cli) == []  # a board of this version is current
    # the board as population-1 stored it: copies among the entries, thresholds with no version
    board = seeded_store.envs.leaderboard(o.env_id)
    old = [{k: e[k] for k in ("name", "family", "score", "rng_seed", "source", "wall_s", "params")}
           for e in board + board[:5]]
    th = {k: v for k, v in seeded_store.envs.get(o.env_id)["thresholds"].items() if k != "version"}
    seeded_store.envs.replace_board(o.env_id, old, thresholds={**th, "entries": len(old)})
    (finding,) = _board_findings(run_cli)
    assert finding["subject"] == o.env_id and "population-1" in finding["problem"]
    assert f"envs reboard {o.env_id}" in finding["problem"]

    res = run_cli("envs", "reboard", "--json")
    assert res.code == 0, res.err
    (done,) = res.json()
    assert done["status"] == "rebuilt" and done["before"]["version"] == "population-1"
    assert done["before"]["entries"] == len(board) + 5 and done["after"]["entries"] == len(board)
    assert done["after"]["version"] == BOARD_VERSION
    assert seeded_store.envs.get(o.env_id)["thresholds"]["version"] == BOARD_VERSION
    assert _board_findings(run_cli) == []


def _board_findings(run_cli) -> list[dict]:
    return [f for f in run_cli("doctor", "--deep", "--json").json()["problems"] if f["check"] == "environment boards"]


def test_a_board_cached_by_another_population_is_not_read(tmp_path, monkeypatch):
    env = _regression_env(tmp_path / "env", "rmse", "A task.")
    key = boards.board_key(env)
    (tmp_path / boards.BOARD_CACHE).mkdir()
    (tmp_path / boards.BOARD_CACHE / f"{env.id}.json").write_text(json.dumps({"key": key, "board": [{"score": 1}]}))
    assert boards.cached_board(env, tmp_path) == [{"score": 1}]
    monkeypatch.setattr(boards, "RESERVE", RESERVE[:-1])  # another plan
    assert boards.cached_board(env, tmp_path) is None
    monkeypatch.setattr(boards, "RESERVE", RESERVE)
    monkeypatch.setattr(boards, "BOARD_VERSION", "population-1")  # another version
    assert boards.cached_board(env, tmp_path) is None


# --------------------------------------------------------------------------------------- the target transform
LOG_WORDS = ("The column `x` is the log of a dose; predictions are compared on a log scale by some readers, and "
             "a logarithmic look at `y` helps.")


def _regression_env(folder: Path, metric: str, description: str, low: float = -2.0) -> EnvSpec:
    """A regression environment with ``y = expm1(x)`` (log1p of the target is linear in the one feature ``x``);
    ``low`` below 0 gives negative targets."""
    rng = np.random.default_rng(0)
    x = np.round(rng.uniform(low, 3.0, 100), 4)
    ids = [f"r{i:03d}" for i in range(100)]
    frame = pd.DataFrame({"id": ids, "x": x, "y": np.expm1(x)})
    public, private = folder / "public", folder / "private"
    public.mkdir(parents=True)
    private.mkdir()
    frame.iloc[:70].to_csv(public / "train.csv", index=False)
    frame.iloc[70:][["id", "x"]].to_csv(public / "test.csv", index=False)
    frame.iloc[70:][["id"]].assign(y=1.0).to_csv(public / "sample_submission.csv", index=False)
    frame.iloc[70:][["id", "y"]].to_csv(private / "answers.csv", index=False)
    (public / "description.md").write_text(f"# A dose\n\n{description}\n", encoding="utf-8")
    spec = GradeSpec(metric, True, "id", ["y"], ["y"], task_type="regression")
    (private / "grade.json").write_text(json.dumps(spec.to_dict()))
    return EnvSpec.from_dir(folder, env_id=folder.name)


def _affine(x: np.ndarray, v: np.ndarray) -> bool:
    """``v`` is an affine function of ``x`` (to rounding)."""
    fit = np.polyval(np.polyfit(x, v, 1), x)
    return bool(np.max(np.abs(fit - v)) < 1e-6 * max(1.0, float(np.max(np.abs(v)))))


def _shape(env: EnvSpec, sub: pd.DataFrame) -> str:
    """What a linear model's submission says about its target transform: ``none`` (affine in x), ``log1p``
    (log1p of it affine in x) or ``other``."""
    test = pd.read_csv(env.public / "test.csv", dtype={"id": str}).merge(sub, on="id")
    x, v = test["x"].to_numpy(), test["y"].to_numpy(dtype=float)
    if _affine(x, v):
        return "none"
    return "log1p" if v.min() > -1 and _affine(x, np.log1p(v)) else "other"


def test_the_transform_comes_from_the_metric_not_the_description(tmp_path, box):
    rmse = _regression_env(tmp_path / "rmse", "rmse", LOG_WORDS + "\n\nSubmissions are scored with **rmse**.")
    rmsle = _regression_env(tmp_path / "rmsle", "rmsle", "Predict `y` from `x`.", low=0.0)
    assert target_transform(rmse.grade) == "none" and target_transform(rmsle.grade) == "log1p"
    assert (pd.read_csv(rmse.public / "train.csv")["y"] < 0).sum() > 10  # negative targets (never clipped)
    ridge = (Entry("linear", {"C": 100.0}, "plain"),)
    shapes = {}
    for env in (rmse, rmsle):
        answers = read_frame(env.answers, "id")
        pop = run_population(box, env.public, env.grade, answers, entries=ridge, reserve=())
        (entry,) = pop.entries
        assert entry.status == "ok", entry.error
        runs, subs, _ = run_ladder(box, env.public, env.grade, (0,), ladder={"simple": LADDER["simple"]})
        assert runs[0].status == "ok", runs[0].error
        shapes[env.grade.metric] = (_shape(env, pop.submissions[0]), _shape(env, subs[("simple", 0)]))
    # the population's ridge and the verifier's linear reference: log space exactly for the log-scale metric
    assert shapes == {"rmse": ("none", "none"), "rmsle": ("log1p", "log1p")}


def test_the_agents_script_reads_only_the_fixed_scoring_line(tmp_path, box):
    """The scripted agent sees public files only: the metric named on the description's line "Submissions are
    scored with **<metric>**" decides; the word "log" elsewhere does not, and without the line there is none."""
    cases = {"rmse-with-log-words": ("rmse", LOG_WORDS + "\n\nSubmissions are scored with **rmse**: lower is better."),
             "rmsle-line": ("rmsle", "Predict `y`.\n\n## Evaluation\n\nSubmissions are scored with **rmsle**: "
                                     "root mean squared log error; lower is better."),
             "no-line": ("rmsle", "Predict `y`; the metric is the root mean squared log error.")}
    shapes = {}
    for name, (metric, text) in cases.items():
        env = _regression_env(tmp_path / name, metric, text, low=0.0)
        with box.open(env.public, label="agent-script") as ws:
            res = ws.run_python(whole_script(Choice("linear", "words", False, False), (".",)))
            assert res.status == "ok", res.stderr_tail
            sub = pd.read_csv(io.BytesIO(ws.read_file("submission.csv")), dtype={"id": str})
        shapes[name] = _shape(env, sub)
    assert shapes == {"rmse-with-log-words": "none", "rmsle-line": "log1p", "no-line": "none"}
