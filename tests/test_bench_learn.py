"""`sandmle bench learn`: macro tokens keep the teacher's turns exact and short, the reward plot is written, and a
scaled-down run goes through every phase (the instruct base included) and reports the paired comparison per
scaffold."""

from __future__ import annotations

import pytest

from rl_tiny import ENV_DIR, register_tiny_env


@pytest.mark.slow
def test_macro_tokens_make_teacher_turns_short_and_exact(store, tmp_path):
    from transformers import AutoTokenizer

    from engine.agents.policies import load_policy
    from engine.agents.rollout import run_episode
    from engine.agents.tiny import macro_tokens
    from engine.envs.layout import EnvSpec
    from engine.agents.tiny import default_corpus
    from engine.agents.tiny import build_tiny_model
    from engine.rl.render import render_turns

    register_tiny_env(store)
    tr = run_episode(EnvSpec.from_dir(ENV_DIR), load_policy("scripted:skill=1"), scaffold="react", store=store,
                     rng_seed=0, max_turns=6)
    plain = AutoTokenizer.from_pretrained(build_tiny_model(tmp_path / "plain", corpus=default_corpus(), hidden=32, layers=1))
    macro = AutoTokenizer.from_pretrained(build_tiny_model(tmp_path / "macro", corpus=default_corpus(), hidden=32, layers=1,
                                                           extra_tokens=macro_tokens((6,)), init_std=0.1))
    long_ = render_turns(plain, tr.turns)
    short = render_turns(macro, tr.turns)
    for t, ids, ids_plain in zip(tr.turns, short, long_):
        if t.role == "assistant":
            assert macro.decode(ids, skip_special_tokens=True) == t.text
            assert len(ids) <= 60 < len(ids_plain) or len(t.text) < 200


def test_reward_plot_is_written(tmp_path):
    from engine.bench.learn import plot_rewards

    path = plot_rewards({"reward_mean": [(1, 0.2), (2, 0.4)], "medal_rate": [(1, 0.0), (2, 0.5)]},
                        tmp_path / "r.png", sft_medal=0.25)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
def test_a_quick_run_reports_the_paired_difference_per_scaffold(store, tmp_path):
    from engine.bench.learn import QUICK, SCAFFOLDS, TRAINED_IN, run

    result = run(store, quick=True, workdir=str(tmp_path / "work"), results_dir=tmp_path / "out")
    s = result.summary
    assert s["episodes_per_arm"] == QUICK.episodes_per_arm == 1
    assert set(s["scaffolds"]) == set(SCAFFOLDS) == {"react", "aide", "oneshot"}
    for name, scaffold in s["scaffolds"].items():
        assert scaffold["trained_in"] == (name == TRAINED_IN)
        assert scaffold["episodes_per_arm"] == 1
        assert scaffold["diff"] == pytest.approx(scaffold["grpo_medal"] - scaffold["sft_medal"])
        assert scaffold["ci95_low"] <= scaffold["diff"] <= scaffold["ci95_high"]
        assert scaffold["rank_delta"] == pytest.approx(scaffold["grpo_rank"] - scaffold["sft_rank"])
        assert set(s["sft_valid_by_seed"][name]) == {"leaf-species"}
    # the instruct stage: the uniform teacher in every scaffold on each training environment, merged into tiny
    assert s["instruct_demos"] == len(SCAFFOLDS) * len(QUICK.train_seeds)
    assert set(s["instruct_demos_per_scaffold"]) == set(SCAFFOLDS)
    assert s["instruct_examples"] >= s["instruct_demos"]  # aide episodes give one example per step
    assert s["demos"] == 2 * len(QUICK.train_seeds)  # two teachers, one environment per seed, react only
    assert 0 < s["sft_examples"] <= s["demos"]  # the mixed teacher's react episodes only
    arms = [("SFT", "react"), ("SFT+GRPO", "react"), ("SFT", "aide (unseen)"), ("SFT+GRPO", "aide (unseen)"),
            ("SFT", "oneshot (unseen)"), ("SFT+GRPO", "oneshot (unseen)")]
    assert [(r["group"], r["policy"], r["scaffold"]) for r in result.rows if r["scaffold"] != "any"] == [
        (g, *a) for g in ("unseen_synthetic", "real") for a in arms]
    # both groups: the cluster bootstrap, the best of the 32 constant options beside both arms, the per-task oracle
    groups = s["groups"]
    assert set(groups) == {"unseen_synthetic", "real"}
    assert (groups["unseen_synthetic"]["cluster"], groups["real"]["cluster"]) == ("seed", "dataset")
    assert s["real_envs"] == ["mlebench-real-mass-pima-te", "mlebench-real-sklearn-iris"]
    for name, g in groups.items():
        assert g["bootstrap"] == "cluster" and g["tasks"] == (2 if name == "real" else 1)
        assert 0 <= g["best_constant_medal"] <= g["oracle_medal"] <= 1
        for scaffold in SCAFFOLDS:
            row = g[scaffold]
            assert row["trained_in"] == (scaffold == TRAINED_IN) and row["tasks"] == g["tasks"]
            assert row["clusters"] == g["clusters"] and row["best_constant_strategy"] == g["best_constant_strategy"]
            assert row["ci95_low"] <= row["diff"] <= row["ci95_high"]
            assert row["diff"] == pytest.approx(row["grpo_medal"] - row["sft_medal"])
            assert {"sft_medal", "grpo_medal", "best_constant_medal"} <= set(row)
    # the constants are cached with the suite: a second look reads them back
    from engine.eval.constants import CONSTANTS_CACHE

    assert len(list((store.data_dir / "envs-imported" / CONSTANTS_CACHE).glob("*.json"))) == 2
    assert (tmp_path / "out" / s["plot"]).is_file()
    assert store.runs.list(kind="bench")[0]["status"] == "done"


def test_the_best_constant_and_the_per_task_oracle():
    """Task t1 rewards only the linear options, t2 only the boosted ones, t3 none: every constant earns at most
    1 of 3, the oracle (the best option of each task) 2 of 3."""
    from engine.eval.constants import best_constant, options

    keys = [c.key for c in options()]
    assert len(keys) == 32 == len(set(keys))
    constants = {t: {k: {"medal": k.startswith(m), "valid": True, "score": 0.0} for k in keys}
                 for t, m in (("t1", "linear/"), ("t2", "boosted/"), ("t3", "none"))}
    best = best_constant(constants)
    assert best["best_constant_medal"] == pytest.approx(1 / 3) and best["oracle_medal"] == pytest.approx(2 / 3)
    assert best["best_constant_strategy"] == next(k for k in keys if k.startswith("linear/"))  # first of the ties
    assert best["best_constant_per_task"] == {"t1": True, "t2": False, "t3": False}


def test_the_reading_plan_grounds_its_environments_and_teaches_reading(capsys):
    """`bench learn --plan reading`: environments grounded in real datasets, the one teacher tries both of the mixed
    teacher's strategies on val/ and keeps the better, and react has the turns that takes (explore, two validation
    runs and their scores, the final run, the answer); --plan belongs to bench learn alone."""
    from engine.bench.learn import FULL, PLANS, READING_TEACHER, TEACHERS, TRAINED_IN
    from engine.agents.policies import load_policy

    from conftest import cli_runner

    reading = PLANS["reading"]
    assert PLANS["full"] is FULL and FULL.backend == "procedural" and FULL.teachers == TEACHERS
    assert reading.backend == "grounded" and reading.teachers == (READING_TEACHER,)
    teacher = load_policy(READING_TEACHER)
    assert [c.key for c in teacher.candidates] == [t.split("strategy=")[1] for t in TEACHERS]
    assert teacher.name.startswith("scripted:skill=1,")  # SFT's source filter reads its demonstrations
    assert reading.turns(TRAINED_IN) == 8 > FULL.turns(TRAINED_IN) and reading.scaffolds == (TRAINED_IN,)
    assert reading.train_seeds == FULL.train_seeds and reading.heldout_seeds == FULL.heldout_seeds
    res = cli_runner(capsys)("bench", "synth", "--plan", "reading")
    assert res.code == 2 and "--plan goes with `bench learn`" in res.err
