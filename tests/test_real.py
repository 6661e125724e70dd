"""Real competitions in MLE-bench's layout, built from scikit-learn's shipped datasets (tests/realdata.py):
evidence-based import, grading, the score tool, bad files, missing leaderboards, metric overrides, the split
``real``, the digit-recognizer layout, MLE-bench Lite evaluation and run comparison."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import realdata
from conftest import ROOT
from engine.envs.layout import EnvSpec


def seed_of(run_cli, folder, *extra):
    res = run_cli("seeds", "import", str(folder), *extra)
    assert res.code == 0, res.err
    return run_cli("seeds", "show", folder.name, "--json").json()


def grade_json(run_cli, folder, submission, *extra):
    res = run_cli("grade", str(folder), str(submission), "--json", *extra)
    return res, (res.json() if res.out.strip() else None)


# ------------------------------------------------------------------ import: targets, classes, features
def test_label_in_the_second_column_with_one_hot_submission_is_the_target(run_cli, tmp_path):
    folder = realdata.wine(tmp_path)
    seed = seed_of(run_cli, folder)
    assert seed["target_columns"] == ["cultivar"] and seed["id_column"] == "id"
    assert seed["metric"] == "log_loss" and seed["task_type"] == "multiclass"
    target = next(c for c in seed["columns"] if c["role"] == "target")
    assert target["name"] == "cultivar" and sorted(target["values"]) == sorted(realdata.CULTIVARS)
    features = [c for c in seed["columns"] if c["role"] == "feature"]
    assert len(features) == 13 and {c["dtype"] for c in features} == {"float"}
    assert "cultivar" not in {c["name"] for c in features} and "proline" in {c["name"] for c in features}
    shown = run_cli("seeds", "show", "wine-cultivars").out
    assert "targets cultivar" in shown and "classes 3 (barolo, grignolino, barbera)" in shown
    assert "features 13 numeric" in shown


def test_the_score_tool_sees_real_validation_labels(store, tmp_path):
    from engine.agents.score_tool import carve, score_validation
    from engine.seeds.competition import env_from_mlebench

    env = env_from_mlebench(realdata.wine(tmp_path), tmp_path / "cache")
    split = carve(env.public, env.grade, key=env.id)
    answers = split.answers
    assert list(answers.columns) == ["id", *realdata.CULTIVARS]
    assert (answers[realdata.CULTIVARS].sum(axis=1) == 1).all()  # one-hot of the held-out cultivars
    assert answers[realdata.CULTIVARS].sum().min() >= 1  # every cultivar is held out at least once
    uniform = answers.assign(**{c: 1 / 3 for c in realdata.CULTIVARS}).to_csv(index=False).encode()
    obs = score_validation(env.grade, split, uniform)
    assert obs.startswith("validation log_loss = 1.0986"), obs  # log 3, not the "-0" of all-zero answers


def test_every_classification_seed_records_classes_and_features(run_cli, tmp_path):
    digits = seed_of(run_cli, realdata.digits(tmp_path))
    assert digits["hints"]["n_classes"] == 10 and digits["task_type"] == "multiclass"
    pixels = [c for c in digits["columns"] if c["role"] == "feature"]
    assert len(pixels) == 64 and {c["dtype"] for c in pixels} == {"int"}
    cancer = seed_of(run_cli, realdata.breast_cancer(tmp_path))
    assert cancer["task_type"] == "binary" and cancer["hints"]["n_classes"] == 2
    assert next(c for c in cancer["columns"] if c["role"] == "target")["values"] == ["benign", "malignant"]
    auc = seed_of(run_cli, realdata.breast_cancer(tmp_path, "cancer-auc", grader="auc-roc", proba=True))
    assert auc["metric"] == "roc_auc" and auc["task_type"] == "binary" and auc["hints"]["n_classes"] == 2
    diabetes = seed_of(run_cli, realdata.diabetes(tmp_path))
    assert diabetes["task_type"] == "regression" and "n_classes" not in diabetes["hints"]
    assert sum(c["role"] == "feature" for c in diabetes["columns"]) == 10


def test_a_label_outside_the_known_classes_is_invalid(run_cli, tmp_path):
    cancer = realdata.breast_cancer(tmp_path)
    sample = pd.read_csv(cancer / "prepared" / "public" / "sample_submission.csv")
    res, report = grade_json(run_cli, cancer, sample.to_csv(tmp_path / "ok.csv", index=False) or tmp_path / "ok.csv")
    assert res.code == 0 and report["valid_submission"]
    sample.loc[3, "diagnosis"] = "maybe"
    sample.to_csv(tmp_path / "maybe.csv", index=False)
    res, report = grade_json(run_cli, cancer, tmp_path / "maybe.csv")
    assert res.code == 3 and not report["valid_submission"]
    assert "'maybe', not one of the classes ['benign', 'malignant']" in report["error"]
    digits = realdata.digits(tmp_path)
    answers = pd.read_csv(digits / "prepared" / "private" / "test.csv")
    answers.loc[0, "label"] = 11
    answers.to_csv(tmp_path / "eleven.csv", index=False)
    res, report = grade_json(run_cli, digits, tmp_path / "eleven.csv")
    assert res.code == 3 and "holds '11', not one of the classes" in report["error"]


# ------------------------------------------------------------------ bad files
@pytest.mark.parametrize("junk", ["prepared/public/train.csv", "prepared/public/sample_submission.csv",
                                  "leaderboard.csv"])
def test_binary_files_are_one_line_errors_everywhere(run_cli, tmp_path, junk):
    folder = realdata.wine(tmp_path)
    perfect = tmp_path / "perfect.csv"
    perfect.write_bytes((folder / "prepared" / "private" / "test.csv").read_bytes())
    realdata.junk(folder / junk)
    for args in (["seeds", "import", str(folder)], ["grade", str(folder), str(perfect)],
                 ["rollout", "--env", str(folder)], ["eval", "--envs", str(folder)]):
        res = run_cli(*args)
        assert res.code == 2, (args, res.err)
        assert res.err.strip().splitlines() == [
            f"error: {folder / junk}: not a UTF-8 CSV file (binary data or another encoding)"], args
    shipped = {p.name for p in (ROOT / "seeds").iterdir() if p.is_dir()}  # what a fresh data dir starts with
    assert {s["id"] for s in run_cli("seeds", "list", "--json").json()} == shipped


# ------------------------------------------------------------------ leaderboards and metrics
def test_without_a_leaderboard_a_competition_is_graded_on_its_population_board(run_cli, tmp_path):
    # ROC-AUC: probabilities, so standard models differ (by accuracy on 80 rows, 60 solutions give 31 different
    # label files: fewer than the 40 distinct entries a board needs)
    folder = realdata.breast_cancer(tmp_path, leaderboard=False, grader="auc-roc", proba=True)
    answers = folder / "prepared" / "private" / "test.csv"
    res, report = grade_json(run_cli, folder, answers)
    assert res.code == 0 and report["score"] == 1.0 and report["rank"] == 1.0
    assert "building its population board" in res.err  # built once, in the sandbox ...
    assert report["board"] == "population" and report["board_entries"] >= 40
    assert report["gold_threshold"] is not None and report["gold_medal"]
    out = run_cli("grade", str(folder), str(answers))
    assert "building" not in out.err  # ... then read from the cache
    assert f"rank among {report['board_entries']} reference solutions 1.000" in out.out
    with_board = realdata.wine(tmp_path)  # a real leaderboard of people: kept, and its rank is HumanRank
    res, report = grade_json(run_cli, with_board, with_board / "prepared" / "private" / "test.csv")
    assert report["board"] == "human" and "HumanRank" in run_cli("grade", str(with_board),
                                                                 str(with_board / "prepared" / "private" / "test.csv")).out


@pytest.mark.slow
def test_eval_names_the_rank_for_each_competitions_board(run_cli, tmp_path):
    cancer = realdata.breast_cancer(tmp_path, leaderboard=False, grader="auc-roc", proba=True)  # distinct: ROC-AUC
    wine = realdata.wine(tmp_path)
    res = run_cli("eval", "--envs", f"{cancer},{wine}", "--scaffold", "oneshot", "--rng-seeds", "2", "--json")
    assert res.code == 0, res.err
    rep = res.json()
    rows = {r["env_id"]: r for r in rep["per_env"]}
    assert rows["mlebench-breast-cancer"]["board"] == "population" and rows["mlebench-breast-cancer"]["rank"] > 0
    assert rows["mlebench-breast-cancer"]["valid"] == 1.0 and rows["mlebench-breast-cancer"]["mean_score"] > 0.9
    assert rows["mlebench-wine-cultivars"]["board"] == "human"
    assert rows["mlebench-wine-cultivars"]["rank"] == 1.0  # the strong solution beats the whole board
    assert rep["rank_label"] == "rank (HumanRank on real leaderboards)" and rep["left_out"]["episodes"] == 0
    text = run_cli("eval", "--envs", str(cancer), "--scaffold", "oneshot").out
    assert "rank: rank among" in text and "reference solutions" in text
    md = run_cli("eval", "--envs", "real", "--scaffold", "oneshot", "--markdown").out
    assert "rank: rank (HumanRank on real leaderboards)." in md


def test_an_unknown_grader_is_fixed_by_metric_everywhere(run_cli, tmp_path):
    folder = realdata.wine(tmp_path, "odd-wine", grader="bespoke-wine-score")
    perfect = folder / "prepared" / "private" / "test.csv"
    res = run_cli("grade", str(folder), str(perfect))
    assert res.code == 2 and "'bespoke-wine-score' does not map to a known metric" in res.err
    assert "pass --metric NAME" in res.err
    res, report = grade_json(run_cli, folder, perfect, "--metric", "log_loss")
    assert res.code == 0 and report["score"] < 1e-9
    assert run_cli("seeds", "import", str(folder), "--metric", "log_loss").code == 0
    res, report = grade_json(run_cli, folder, perfect)  # the import's metric now applies to the folder
    assert res.code == 0 and report["score"] < 1e-9 and report["is_lower_better"]


# ------------------------------------------------------------------ real competitions stay apart
def test_real_competitions_never_leak_into_synthetic_selections(store, tmp_path):
    from engine.agents.rollout import register_env
    from engine.eval.select import select_envs
    from engine.rl.config import GRPOConfig
    from engine.rl.grpo import select_envs as grpo_envs
    from conftest import DATA

    register_env(store, EnvSpec.from_dir(DATA / "envs" / "tiny-tabular"), split="train")
    real = select_envs(store, str(realdata.wine(tmp_path)))[0]
    register_env(store, real)  # what every episode on it does first
    assert real.split == "real" and store.envs.get("mlebench-wine-cultivars")["split"] == "real"
    assert [e.id for e in select_envs(store, "all")] == ["tiny-tabular"]
    assert [e.id for e in select_envs(store, "real")] == ["mlebench-wine-cultivars"]
    assert grpo_envs(store, GRPOConfig(env_split="all")) == ["tiny-tabular"]
    from engine.errors import TrainingError

    with pytest.raises(TrainingError, match="real competition"):
        grpo_envs(store, GRPOConfig(env_ids=["mlebench-wine-cultivars"]))


def test_sft_never_learns_from_episodes_on_real_competitions(store, tmp_path):
    from engine.agents.policies.scripted import ScriptedPolicy
    from engine.agents.rollout import run_episode
    from engine.seeds.competition import env_from_mlebench
    from engine.rl.config import SFTConfig
    from engine.rl.sft import select_trajectories
    from engine.errors import TrainingError

    env = env_from_mlebench(realdata.breast_cancer(tmp_path), tmp_path / "cache")
    traj = run_episode(env, ScriptedPolicy(), scaffold="oneshot", store=store, max_turns=1)
    assert traj.reward > 0 and store.envs.get(env.id)["split"] == "real"
    with pytest.raises(TrainingError, match="no stored trajectories"):
        select_trajectories(store, SFTConfig(env_split="all", source_policy="scripted", min_reward=0.0))


# ------------------------------------------------------------------ Kaggle's digit-recognizer layout
@pytest.mark.slow
def test_id_only_in_the_sample_submission(run_cli, tmp_path):
    folder = realdata.digits(tmp_path, "digit-recognizer", kaggle=True)
    seed = seed_of(run_cli, folder)
    assert seed["id_column"] == "ImageId" and seed["target_columns"] == ["label"]
    assert seed["hints"] == {"n_classes": 10, "id_in_test": False}
    assert "id only in sample_submission.csv" in run_cli("seeds", "show", "digit-recognizer").out
    res = run_cli("rollout", "--env", str(folder), "--scaffold", "react", "--json")
    assert res.code == 0, res.err
    traj = res.json()
    scores = [t["observation"] for t in traj["turns"] if t["tool"] == "score" and t["observation"]]
    assert scores and all(o.startswith("validation accuracy = ") for o in scores)  # the score tool works
    assert traj["grade"]["valid_submission"] and traj["grade"]["score"] > 0.8
    sub = pd.read_csv(traj["submission_path"])
    assert list(sub.columns) == ["ImageId", "Label"] and sub["ImageId"].tolist() == list(range(1, 61))


# ------------------------------------------------------------------ MLE-bench Lite
def test_lite_ids_are_mlebench_low_complexity_split():
    from engine.eval.mlebench import lite_ids

    ids = lite_ids()
    assert len(ids) == 22 == len(set(ids))
    assert {"leaf-classification", "spooky-author-identification", "tabular-playground-series-may-2022",
            "the-icml-2013-whale-challenge-right-whale-redux"} <= set(ids)


@pytest.mark.slow
def test_eval_on_mlebench_lite_reports_per_competition_and_lists_skipped(run_cli, tmp_path):
    data = realdata.lite_data_dir(tmp_path / "mle-bench-data")
    res = run_cli("eval", "--envs", f"mlebench:{data}:lite", "--scaffold", "oneshot", "--wide")
    assert res.code == 0, res.err
    out = res.out
    header = "competition                         n  valid  >median  bronze  silver  gold  medal  score   rank"
    assert header in out
    assert "leaf-classification                 1  1.00   1.00     0.00    0.00    1.00  1.00   0.0424  1.000" in out
    assert "\ntabular-playground-series-may-2022  1  1.00 " in out
    assert "skipped 20 competition(s) (not run, not counted):" in out
    assert "  aerial-cactus-identification: not in " in out
    assert "  spooky-author-identification: not prepared (run `mlebench prepare -c spooky-author-identification`)" in out
    rep = run_cli("eval", "--envs", f"mlebench:{data}:lite", "--scaffold", "oneshot", "--json").json()
    assert [r["env_id"] for r in rep["per_env"]] == ["mlebench-leaf-classification",
                                                      "mlebench-tabular-playground-series-may-2022"]
    assert len(rep["skipped"]) == 20 and rep["n_episodes"] == 2


def test_metadata_from_mlebench_s_registry_folder(home, store, tmp_path):
    """MLE-bench's data directory holds only prepared/ data; config, description and leaderboard come from its
    mlebench/competitions folder ([mlebench] competitions)."""
    import shutil

    from engine.eval.select import select

    data = realdata.lite_data_dir(tmp_path / "data")
    registry = tmp_path / "mle-bench" / "mlebench" / "competitions"
    for comp in ("leaf-classification", "tabular-playground-series-may-2022"):
        (registry / comp).mkdir(parents=True)
        for name in ("config.yaml", "description.md", "leaderboard.csv"):
            shutil.move(data / comp / name, registry / comp / name)
    shutil.rmtree(registry / "tabular-playground-series-may-2022")  # a competition the registry lacks
    from engine.errors import SandmleError

    with pytest.raises(SandmleError, match=r"no environment selected \(22 skipped"):  # no registry configured yet
        select(store, f"mlebench:{data}:lite")
    (home / "config.toml").write_text(f'[mlebench]\ncompetitions = "{registry}"\n')
    chosen = select(store, f"mlebench:{data}:lite")
    assert [e.id for e in chosen.envs] == ["mlebench-leaf-classification"]
    leaf = chosen.envs[0]
    assert leaf.grade.metric == "log_loss" and len(leaf.leaderboard) == 40 and leaf.split == "real"
    reasons = {s.id: s.reason for s in chosen.skipped}
    assert reasons["tabular-playground-series-may-2022"].startswith("no config.yaml (set [mlebench] competitions")
    assert len(reasons) == 21


def test_a_competition_larger_than_the_workspace_quota_says_so_before_the_episode(run_cli, home, tmp_path):
    folder = realdata.wine(tmp_path)
    (folder / "prepared" / "public" / "images.bin").write_bytes(b"\0" * 20_000_000)
    (home / "config.toml").write_text("[sandbox]\nmax_disk_mb = 16\n")
    res = run_cli("rollout", "--env", str(folder))
    assert res.code == 1
    assert res.err.strip() == ("error: mlebench-wine-cultivars: data 20 MB is larger than the workspace quota (16 MB, "
                               "[sandbox] max_disk_mb) (raise [sandbox] max_disk_mb or use a machine with more room)")
    res = run_cli("eval", "--envs", str(folder))
    assert res.code == 1 and "no environment selected (1 skipped, e.g. mlebench-wine-cultivars: data 20 MB" in res.err


def test_steps_take_their_timeout_and_memory_from_the_sandbox_settings(home, store, tmp_path):
    from engine.config import load_settings
    from engine.sandbox import get_backend

    (home / "config.toml").write_text("[sandbox]\ntimeout_s = 42\nmemory_mb = 1536\n")
    backend = get_backend(store=store, settings=load_settings().sandbox)
    try:
        assert backend.default_limits.timeout_s == 42 and backend.default_limits.memory_mb == 1536
    finally:
        backend.close()


# ------------------------------------------------------------------ comparing eval runs
def _rows(env_rates: dict[str, list[tuple[int, bool]]]) -> list[dict]:
    return [{"env_id": env, "rng_seed": seed, "valid": True, "gold": medal, "silver": False, "bronze": False,
             "above_median": medal, "rank": 1.0 if medal else 0.2, "reward": 0.9 if medal else 0.3,
             "score": 0.5, "has_leaderboard": True}
            for env, seeds in env_rates.items() for seed, medal in seeds]


def test_compare_paired_differences_and_bootstrap_intervals():
    from engine.eval.compare import compare_rows

    a = _rows({"x": [(0, False), (1, False)], "y": [(0, True), (1, False)], "z": [(0, True)]})
    b = _rows({"x": [(0, True), (1, True)], "y": [(0, True), (1, True)], "only-b": [(0, True)]})
    cmp = compare_rows(a, b, "any_medal", run_a="sft", run_b="grpo", n_boot=1000, seed=0)
    by = {e.env_id: e for e in cmp.per_env}
    assert set(by) == {"x", "y"} and cmp.only_a == ["z"] and cmp.only_b == ["only-b"]
    assert (by["x"].a, by["x"].b, by["x"].diff) == (0.0, 1.0, 1.0)
    assert (by["x"].interval.low, by["x"].interval.high) == (1.0, 1.0)  # both pairs moved the same way
    assert by["y"].diff == 0.5 and by["y"].interval.low == 0.0 and by["y"].interval.high == 1.0
    assert cmp.diff == 0.75 and cmp.n_pairs == 4
    # two competitions, one of them split: the overall interval honestly spans [0, 1]
    assert (cmp.interval.low, cmp.interval.high) == (0.0, 1.0)
    many = compare_rows(_rows({f"e{i}": [(0, False), (1, False)] for i in range(8)}),
                        _rows({f"e{i}": [(0, i > 0), (1, True)] for i in range(8)}), n_boot=1000)
    assert many.diff == pytest.approx(15 / 16) and 0.75 <= many.interval.low < many.diff < many.interval.high == 1.0
    again = compare_rows(a, b, "any_medal", n_boot=1000, seed=0)
    assert again.interval == cmp.interval  # a fixed RNG seed: the same runs give the same interval
    hr = compare_rows(a, b, "rank", n_boot=200)
    assert math.isclose(hr.diff, (0.8 + 0.4) / 2)


def test_compare_leaves_out_pairs_without_a_leaderboard():
    from engine.errors import SandmleError
    from engine.eval.compare import compare_rows

    a = _rows({"x": [(0, False)], "nb": [(0, False)]})
    b = _rows({"x": [(0, True)], "nb": [(0, True)]})
    for r in a + b:
        r["has_leaderboard"] = r["env_id"] != "nb"
    cmp = compare_rows(a, b, "gold", n_boot=200)
    assert [e.env_id for e in cmp.per_env] == ["x"] and cmp.not_applicable == 1
    assert compare_rows(a, b, "valid", n_boot=200).n_pairs == 2  # validity needs no leaderboard
    with pytest.raises(SandmleError, match="share no scored episode"):
        compare_rows(a, _rows({"other": [(0, True)]}), "gold")


@pytest.mark.slow
def test_cli_eval_compare(run_cli, tmp_path):
    wine = realdata.wine(tmp_path)
    runs = []
    for policy in ("scripted:strategy=constant", "scripted"):
        res = run_cli("eval", "--envs", str(wine), "--policy", policy, "--scaffold", "oneshot", "--rng-seeds", "2",
                      "--json")
        assert res.code == 0, res.err
        runs.append(res.json()["run_id"])
    out = run_cli("eval", "compare", *runs).out
    assert "wine-cultivars  2      0.000  1.000  +1.000  [+1.00, +1.00]" in out
    assert "overall (1 competitions, 2 pairs): B − A = +1.000 [+1.000, +1.000]" in out
    data = run_cli("eval", "compare", *runs, "--rate", "rank", "--json").json()
    assert data["rate"] == "rank" and data["diff"] == pytest.approx(1.0) and data["run_b"] == runs[1]
    res = run_cli("eval", "compare", runs[0], "nope")
    assert res.code != 0 and "nope" in res.err
    assert run_cli("eval").code == 2  # no --envs and no subcommand: a usage error
