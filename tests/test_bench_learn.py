"""`sandmle bench learn`: macro tokens keep the teacher's turns exact and short, the reward plot is written, a
scaled-down run goes through every phase (the instruct base included) and reports the paired comparison per
scaffold; and the claims (issue 40) on eval runs written through a real store: the best constant rated on exactly
the policy's episodes, several runs pooled per cluster with each run weighing the same, a tie reported as a tie,
and 3 held-out seeds claiming nothing."""

from __future__ import annotations

from dataclasses import replace

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
    assert (s["runs"], s["run_seeds"], s["method"]) == (1, [0], "cluster sign-flip")  # --quick: one run
    assert store.runs.list(kind="bench")[0]["config"]["runs"] == 1  # declared before it ran
    assert set(s["scaffolds"]) == set(SCAFFOLDS) == {"react", "aide", "oneshot"}
    (own,) = s["per_run"]
    for name, scaffold in s["scaffolds"].items():
        assert scaffold["trained_in"] == (name == TRAINED_IN)
        assert scaffold["episodes"] == 1
        assert scaffold["diff"] == pytest.approx(scaffold["grpo_medal"] - scaffold["sft_medal"])
        # one held-out seed is one cluster: nothing can be shown, and the record says so
        assert scaffold["ci95_low"] is None and scaffold["note"].startswith("cannot be shown with 1 cluster")
        assert scaffold["verdict"] in ("tie", "inconclusive") and not scaffold["target_met"]
        assert scaffold["rank_delta"] == pytest.approx(scaffold["grpo_rank"] - scaffold["sft_rank"])
        assert set(own["sft_valid_by_seed"][name]) == {"leaf-species"}
    assert not s["react_met"] and not s["transfer_met"] and s["runs_react_met"] == [False]
    # the instruct stage: the uniform teacher in every scaffold on each training environment, merged into tiny
    assert own["instruct_demos"] == len(SCAFFOLDS) * len(QUICK.train_seeds)
    assert set(own["instruct_demos_per_scaffold"]) == set(SCAFFOLDS)
    assert own["instruct_examples"] >= own["instruct_demos"]  # aide episodes give one example per step
    assert own["demos"] == 2 * len(QUICK.train_seeds)  # two teachers, one environment per seed, react only
    assert 0 < own["sft_examples"] <= own["demos"]  # the mixed teacher's react episodes only
    arms = [("SFT", "react"), ("SFT+GRPO", "react"), ("SFT", "aide (unseen)"), ("SFT+GRPO", "aide (unseen)"),
            ("SFT", "oneshot (unseen)"), ("SFT+GRPO", "oneshot (unseen)")]
    assert [(r["group"], r["policy"], r["scaffold"]) for r in own["arms"]] == [
        (g, *a) for g in ("unseen_synthetic", "real") for a in arms]
    # the table: one row per group and scaffold (one run), each difference with its verdict
    assert [(r["group"], r["scaffold"], r["run"]) for r in result.rows] == [
        (g, a[1], "1") for g in ("unseen_synthetic", "real") for a in arms[::2]]
    # both groups: the sign-flip test over clusters, the best of the 32 constant options beside both arms on exactly
    # their pairs, the per-task oracle
    groups = s["groups"]
    assert set(groups) == {"unseen_synthetic", "real"}
    assert (groups["unseen_synthetic"]["cluster"], groups["real"]["cluster"]) == ("seed", "dataset")
    assert s["real_envs"] == ["mlebench-real-mass-pima-te", "mlebench-real-sklearn-wine"]
    for name, g in groups.items():
        assert g["method"] == "cluster sign-flip" and g["tasks"] == (2 if name == "real" else 1)
        assert 0 <= g["all_tasks"]["best_constant_medal"] <= g["all_tasks"]["oracle_medal"] <= 1
        for scaffold in SCAFFOLDS:
            row = g[scaffold]
            assert row["trained_in"] == (scaffold == TRAINED_IN) and row["tasks"] == g["tasks"]
            assert row["clusters"] == g["clusters"] and row["ci95_low"] is None  # 1 or 2 clusters
            assert row["diff"] == pytest.approx(row["grpo_medal"] - row["sft_medal"])
            assert row["vs_best_constant"] == pytest.approx(row["grpo_medal"] - row["best_constant_medal"])
            assert 0 <= row["best_constant_medal"] <= row["oracle_medal"] <= 1
            assert [r["run"] for r in row["per_run"]] == [1]
    # the constants are cached with the suite: a second look reads them back
    from engine.eval.constants import CONSTANTS_CACHE

    assert len(list((store.data_dir / "envs-imported" / CONSTANTS_CACHE).glob("*.json"))) == 2
    assert (tmp_path / "out" / own["plot"]).is_file()
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


# ------------------------------------------------------------------------------------ the claims (issue 40)
# Eval runs written through the store's API, as bench learn's evaluations leave them; the claims read them back.
def _task(store, env_id: str) -> str:
    store.envs.add({"id": env_id, "title": env_id, "status": "verified", "modality": "tabular",
                    "task_type": "binary", "metric": "roc_auc", "lower_is_better": False, "id_column": "id",
                    "target_columns": ["y"]})
    return env_id


def _eval(store, name: str, medals: dict) -> str:
    """An eval run whose episode (env id, RNG seed) medalled (1), did not (0) or could not run ("error")."""
    run = store.runs.create("eval", {"policy": name, "scaffold": "react"}, name=name)
    store.runs.add_eval_results(run, [
        {"env_id": env, "rng_seed": seed, "policy": name, "scaffold": "react", "has_leaderboard": True,
         "valid": medal != "error", "gold": medal == 1, "rank": 0.5, "reward": 0.0,
         "error": "sandbox down" if medal == "error" else None} for (env, seed), medal in medals.items()])
    store.runs.finish(run, "done")
    return run


def _constants(medalling: dict[str, str]) -> dict:
    """task → every option's constant result: the options whose key starts with medalling[task] medal."""
    from engine.eval.constants import options

    return {t: {c.key: {"score": 0.5, "valid": True, "medal": c.key.startswith(prefix)} for c in options()}
            for t, prefix in medalling.items()}


def test_the_best_constant_is_rated_on_exactly_the_policys_episodes(store):
    """t1 has 3 scored pairs, t2 one (two of its episodes errored): the linear constant (medals on t1) is rated
    0.75 on those 4 pairs, not 0.5 over the 2 tasks, and SFT+GRPO − it is over the same 4 pairs."""
    from engine.bench.learn_groups import compare_pairs, paired_episodes

    t1, t2 = _task(store, "t1"), _task(store, "t2")
    sft = _eval(store, "sft", {(t1, 0): 0, (t1, 1): 0, (t1, 2): 0, (t2, 0): 0, (t2, 1): 0, (t2, 2): 0})
    grpo = _eval(store, "grpo", {(t1, 0): 1, (t1, 1): 1, (t1, 2): 0, (t2, 0): 1, (t2, 1): "error",
                                 (t2, 2): "error"})
    pairs = paired_episodes(store, sft, grpo, {t1: t1, t2: t2})
    assert [(p["task"], p["seed"]) for p in pairs] == [(t1, 0), (t1, 1), (t1, 2), (t2, 0)]
    row = compare_pairs(pairs, _constants({t1: "linear/", t2: "boosted/"}))
    assert row["best_constant_strategy"].startswith("linear/")
    assert row["best_constant_medal"] == pytest.approx(0.75) and row["oracle_medal"] == pytest.approx(1.0)
    assert (row["sft_medal"], row["grpo_medal"]) == (0.0, 0.75)
    assert row["vs_best_constant"] == pytest.approx(row["grpo_medal"] - row["best_constant_medal"]) == 0.0
    assert row["vs_best_constant_verdict"] == "tie"  # equal rates: a tie, whatever else
    assert (row["episodes"], row["tasks"], row["clusters"]) == (4, 2, 2)
    assert row["note"].startswith("cannot be shown with 2 clusters") and row["verdict"] == "inconclusive"


def _learn_store(store, runs: int, seeds: int, grpo_of, tag: str = "") -> list[dict]:
    """``runs`` bench runs' records (as learn.record_run leaves them) on ``seeds`` held-out seeds of 2
    environments each (new environments every run) and 2 RNG seeds: SFT never medals, SFT+GRPO as grpo_of(run,
    seed index, env index, rng seed) says; the constant "blend" medals everywhere. ``tag`` keeps ids apart."""
    from engine.bench.learn import SCAFFOLDS
    from engine.bench.learn_groups import paired_episodes

    records = []
    for run in range(1, runs + 1):
        clusters = {_task(store, f"{tag}s{i}-r{run}-e{e}"): f"seed{i}" for i in range(seeds) for e in range(2)}
        eps = {(env, k): (clusters[env], int(env.split("-e")[1]), k) for env in clusters for k in (0, 1)}
        pairs = {}
        for s in SCAFFOLDS:
            sft = _eval(store, f"sft {s}", {key: 0 for key in eps})
            grpo = _eval(store, f"grpo {s}", {key: grpo_of(run, int(c[4:]), e, k) for key, (c, e, k) in eps.items()})
            pairs[("unseen_synthetic", s)] = paired_episodes(store, sft, grpo, clusters, run=run)
        records.append({"pairs": pairs, "clusters": {"unseen_synthetic": clusters},
                        "constants": {"unseen_synthetic": _constants({t: "blend/" for t in clusters})},
                        "figures": {s: {"sft_valid": 1.0, "grpo_valid": 0.5 * run, "sft_rank": 0.2, "grpo_rank": 0.6,
                                        "rank_label": "rank among reference solutions"} for s in SCAFFOLDS},
                        "real_ids": [], "own": {"run": run, "seed": run - 1}})
    return records


def test_runs_pool_their_pairs_per_cluster_and_weigh_the_same(store):
    """Two runs on 6 held-out seeds: run 1's GRPO medals everywhere, run 2's on one environment of each seed but
    one of its episodes could not run. Clusters stay the 6 seeds; every figure is the mean of the two runs'; run 1
    alone beats SFT, run 2 alone too, and both together; every run is reported beside the mean."""
    from dataclasses import replace

    from engine.bench.learn import FULL, summarize
    from engine.bench.learn_groups import claim_rows

    def grpo_of(run, seed, env, k):
        if run == 2 and (seed, env, k) == (0, 0, 1):
            return "error"
        return 1 if run == 1 or env == 0 else 0

    records = _learn_store(store, 2, 6, grpo_of)
    plan = replace(FULL, runs=2)
    summary = summarize(plan, records)
    react = summary["groups"]["unseen_synthetic"]["react"]
    run1, run2 = react["per_run"]
    assert (run1["episodes"], run2["episodes"], react["episodes"]) == (24, 23, 47)
    assert run1["grpo_medal"] == 1.0 and run2["grpo_medal"] == pytest.approx(11 / 23)
    assert react["grpo_medal"] == pytest.approx((1.0 + 11 / 23) / 2)  # the mean of the runs, not 35/47
    assert react["diff"] == pytest.approx(react["grpo_medal"] - react["sft_medal"])
    assert (react["clusters"], react["runs"], react["method"]) == (6, 2, "cluster sign-flip")
    assert [run1["verdict"], run2["verdict"], react["verdict"]] == ["beats", "beats", "beats"]
    assert react["p_value"] == pytest.approx(2 / 64)  # 6 clusters, every one above 0: 1 pattern of 64 as far
    # the constant (blend) medals everywhere: SFT+GRPO is worse than it in run 2, ties it in run 1
    assert (run1["vs_best_constant_verdict"], run2["vs_best_constant_verdict"]) == ("tie", "worse")
    assert not react["target_met"] and not run1["target_met"]
    assert summary["react_met"] and summary["runs_react_met"] == [True, True]
    assert summary["scaffolds"]["react"]["grpo_valid"] == pytest.approx(0.75)  # (0.5 + 1.0) / 2
    assert (summary["runs"], summary["run_seeds"], [r["run"] for r in summary["per_run"]]) == (2, [0, 1], [1, 2])
    rows = [r for r in claim_rows(summary["groups"], plan.scaffolds, [1, 2]) if r["scaffold"] == "react"]
    assert [r["run"] for r in rows] == ["1", "2", "mean of 2"]
    assert rows[2]["grpo_minus_sft"].endswith("beats") and rows[0]["grpo_minus_best_constant"].endswith("tie")


def test_three_seeds_cannot_show_a_gain_and_transfer_is_tested_at_a_shared_level(store):
    """3 held-out seeds, GRPO medalling on every episode in every scaffold: the old bootstrap's interval was [1, 1]
    and react_met true; the sign-flip test of 3 clusters cannot reach p < 0.25, so nothing is claimed and the row
    says why."""
    from dataclasses import replace

    from engine.bench.learn import FULL, summarize
    from engine.bench.learn_groups import claim_rows

    one = replace(FULL, runs=1)
    summary = summarize(one, _learn_store(store, 1, 3, lambda *_: 1))
    react = summary["groups"]["unseen_synthetic"]["react"]
    assert react["diff"] == 1.0 and react["ci95_low"] is None and react["verdict"] == "inconclusive"
    assert react["note"] == ("cannot be shown with 3 clusters: the smallest two-sided p a sign-flip test of 3 "
                             "reaches is 0.25")
    assert not summary["react_met"] and not summary["transfer_met"]
    assert summary["scaffolds"]["aide"]["target_level"] == pytest.approx(0.975)  # 2 unseen scaffolds share 5%
    row = claim_rows(summary["groups"], FULL.scaffolds, [1])[0]
    assert row["run"] == "1" and row["grpo_minus_sft"] == "+1.000 (cannot be shown with 3 clusters) inconclusive"
    # with 8 seeds the same data is a claim, in every scaffold, and transfer with it
    more = summarize(one, _learn_store(store, 1, 8, lambda *_: 1, tag="more-"))
    assert more["react_met"] and more["transfer_met"]
    assert more["scaffolds"]["oneshot"]["target_low"] == 1.0


def test_runs_are_declared_on_the_command_line(capsys):
    from conftest import cli_runner
    from engine.bench.learn import FULL, QUICK, READING, run_seeds

    assert (FULL.runs, READING.runs, QUICK.runs) == (3, 3, 1) and run_seeds(0, 3) == [0, 1, 2]
    res = cli_runner(capsys)("bench", "synth", "--runs", "2")
    assert res.code == 2 and "--runs goes with `bench learn`" in res.err
    res = cli_runner(capsys)("bench", "learn", "--runs", "0")
    assert res.code == 2 and "--runs" in res.err


def test_a_run_is_recorded_from_its_store_and_the_result_is_strict_json(store, tmp_path):
    """record_run reads one run's eval runs (both groups, every scaffold) back from its store, as bench learn does
    after its stages; summarize and the table take it from there; the result holds no NaN or infinity."""
    import json

    from engine.bench.learn import FULL, SCAFFOLDS, record_run, summarize
    from engine.bench.learn_groups import claim_rows
    from engine.eval.report import aggregate, rank_label
    from engine.eval.run import EvalReport

    def report(run_id: str, scaffold: str) -> EvalReport:  # as run_eval builds it from the stored rows
        rows = store.runs.eval_results(run_id)
        summary, table = aggregate(rows)
        return EvalReport(run_id=run_id, policy="hf:tiny", scaffold=scaffold, n_envs=len(table), rng_seeds=[0, 1],
                          n_episodes=len(rows), summary=summary, per_env=table, wall_s=1.0,
                          rank_label=rank_label(rows))

    unseen = {_task(store, f"u{i}"): f"seed{i % 3}" for i in range(6)}
    real = {_task(store, f"mlebench-real-{i}"): f"mlebench-real-{i}" for i in range(7)}
    runs, reports = {}, {"unseen_synthetic": {}, "real": {}}
    for group, tasks in (("unseen_synthetic", unseen), ("real", real)):
        for arm in ("SFT", "SFT+GRPO"):
            for s in SCAFFOLDS:
                medals = {(t, k): int(arm == "SFT+GRPO" and (k == 0 or s == "react")) for t in tasks for k in (0, 1)}
                runs[(group, arm, s)] = _eval(store, f"{arm} {s} {group}", medals)
                reports[group][(arm, s)] = report(runs[(group, arm, s)], s)
    grpo = store.runs.create("grpo", {"model": "tiny"})
    store.runs.log_metrics(grpo, 1, {"skipped_groups": 1, "groups": 2})
    done = {"runs": runs, "clusters": {"unseen_synthetic": unseen, "real": real},
            "constants": {"unseen_synthetic": _constants({t: "blend/" for t in unseen}),
                          "real": _constants({t: "linear/" if t.endswith(("0", "1")) else "blend/" for t in real})},
            "reports": reports["unseen_synthetic"], "real_reports": reports["real"], "train_ids": ["t"],
            "heldout_ids": list(unseen), "real_ids": list(real), "stats": {"demos": 4},
            "sft": {"examples": 3, "train_loss": 1.23456}, "grpo": {"steps_done": 1, "warnings": []}, "grpo_run": grpo}
    record = record_run(store, FULL, done, 1, 0, tmp_path / "learn_reward.png")
    summary = summarize(replace(FULL, runs=1), [record])
    json.dumps(summary, allow_nan=False)
    real_react = summary["groups"]["real"]["react"]
    # 7 datasets, GRPO medals on every episode: beats SFT. The blend constant medals on 5 of 7: GRPO is above it on
    # 2 datasets and equal on 5 — flipping the signs of equal datasets changes nothing, so 2 clusters decide: no claim
    assert (real_react["verdict"], real_react["vs_best_constant_verdict"], real_react["target_met"]) == (
        "beats", "inconclusive", False)
    assert real_react["best_constant_medal"] == pytest.approx(5 / 7)
    aide = summary["groups"]["real"]["aide"]  # GRPO medals on RNG seed 0 only
    assert aide["grpo_medal"] == pytest.approx(0.5) and aide["verdict"] == "beats"
    assert summary["per_run"][0]["per_env"]["react"][0] == {"env_id": "u0", "sft": 0.0, "grpo": 1.0, "diff": 1.0}
    assert summary["per_run"][0]["grpo_skipped_groups"] == 1 and summary["per_run"][0]["sft_loss"] == 1.2346
    assert len(claim_rows(summary["groups"], FULL.scaffolds, [1])) == 2 * len(SCAFFOLDS)
