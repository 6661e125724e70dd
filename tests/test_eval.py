"""Evaluation: selectors, parallel episodes, mean ± SEM over seeds, eval runs in the store; the CLI commands
grade / rollout / eval / trajectories export."""

from __future__ import annotations

import json
import math

import pytest

from engine.envs.layout import EnvSpec
from engine.errors import SandmleError
from engine.eval.report import aggregate, mean_sem, spread_by_env
from engine.eval.run import run_eval
from engine.eval.select import select_envs

from conftest import DATA

TINY = DATA / "envs" / "tiny-tabular"


def test_mean_sem():
    assert mean_sem([1.0]) == (1.0, 0.0)
    m, s = mean_sem([0.0, 1.0, 1.0, 0.0])
    assert m == 0.5 and s == pytest.approx(math.sqrt(1 / 3) / 2)
    assert all(math.isnan(v) for v in mean_sem([]))


def test_aggregate_rates_per_seed_and_per_env():
    def row(env, seed, medal=None, valid=True, hr=0.5, reward=0.3, score=0.7, above=False):
        return {"env_id": env, "rng_seed": seed, "valid": valid, "gold": medal == "gold",
                "silver": medal == "silver", "bronze": medal == "bronze", "above_median": above,
                "rank": hr if valid else None, "reward": reward, "score": score if valid else None}

    rows = [row("a", 0, "gold", above=True), row("b", 0), row("a", 1, "bronze", above=True),
            row("b", 1, valid=False)]
    summary, table = aggregate(rows)
    assert summary["any_medal"]["mean"] == 0.5 and summary["any_medal"]["sem"] == 0.0
    assert summary["gold"]["mean"] == 0.25 and summary["gold"]["sem"] == pytest.approx(0.25)
    assert summary["valid"]["mean"] == 0.75 and summary["valid"]["sem"] == pytest.approx(0.25)
    assert summary["rank"]["mean"] == pytest.approx((0.5 + 0.25) / 2)  # invalid ranks 0
    assert summary["above_median"]["mean"] == 0.5
    by_env = {r["env_id"]: r for r in table}
    # per competition: each of MLE-bench's fields as a rate over its episodes
    assert by_env["a"]["gold"] == 0.5 and by_env["a"]["bronze"] == 0.5 and by_env["a"]["any_medal"] == 1.0
    assert by_env["b"]["valid"] == 0.5 and by_env["b"]["mean_score"] == 0.7 and by_env["b"]["rank"] == 0.25
    # per environment over its episodes, with the spread (the workbench's Eval table): the same means, and SEMs
    spread = spread_by_env(rows + [{**row("c", 0), "error": "sandbox down"}])  # an episode that could not run
    assert list(spread) == ["a", "b"] and spread["a"]["n"] == 2
    assert spread["a"]["any_medal"] == {"mean": 1.0, "sem": 0.0}
    assert spread["b"]["valid"]["mean"] == 0.5 and spread["b"]["valid"]["sem"] == pytest.approx(0.5)
    assert spread["b"]["score"] == {"mean": 0.7, "sem": 0.0}  # the invalid episode has no score


def test_selectors(store, tmp_path):
    from engine.agents.rollout import register_env

    specs = select_envs(store, str(DATA / "envs"))
    assert [s.id for s in specs] == ["tiny-tabular"]
    both = select_envs(store, f"{DATA / 'envs'},{DATA / 'mlebench'}")
    assert [s.id for s in both] == ["tiny-tabular", "mlebench-spooky-mini"]
    assert select_envs(store, str(DATA / "mlebench" / "spooky-mini"))[0].grade.metric == "log_loss"
    register_env(store, EnvSpec.from_dir(TINY), split="heldout")
    assert [s.id for s in select_envs(store, "split:heldout")] == ["tiny-tabular"]
    assert [s.id for s in select_envs(store, "tiny-tabular")] == ["tiny-tabular"]
    assert [s.id for s in select_envs(store, "all,tiny-tabular")] == ["tiny-tabular"]  # no duplicates
    stored = EnvSpec.from_store(store, "tiny-tabular")
    assert stored.leaderboard and sorted(stored.leaderboard) == sorted(EnvSpec.from_dir(TINY).leaderboard)
    for bad in ("nope", "split:nothing", "seed:nothing", str(tmp_path)):
        with pytest.raises(SandmleError):
            select_envs(store, bad)


@pytest.mark.slow
def test_eval_runs_episodes_in_parallel_and_stores_an_eval_run(store):
    envs = select_envs(store, f"{DATA / 'envs'},{DATA / 'mlebench'}")
    seen = []
    report = run_eval(store, "scripted", envs, scaffold="oneshot", rng_seeds=[0, 1], workers=2,
                      progress=lambda d, t: seen.append((d, t)))
    assert report.n_episodes == 4 and seen[-1] == (4, 4) and report.n_envs == 2
    assert report.summary["valid"] == {"mean": 1.0, "sem": 0.0}
    assert 0.0 <= report.summary["any_medal"]["mean"] <= 1.0
    run = store.runs.get(report.run_id)
    assert run["kind"] == "eval" and run["status"] == "done" and run["config"]["scaffold"] == "oneshot"
    assert run["summary"]["summary"]["valid"]["mean"] == 1.0 and len(run["summary"]["per_env"]) == 2
    results = store.runs.eval_results(report.run_id)
    assert len(results) == 4 and {r["env_id"] for r in results} == {"tiny-tabular", "mlebench-spooky-mini"}
    assert all(r["valid"] == 1 and r["trajectory_id"] for r in results)
    assert store.trajectories.count(run_id=report.run_id) == 4
    tiny = next(r for r in report.per_env if r["env_id"] == "tiny-tabular")
    assert tiny["episodes"] == 2 and tiny["bronze"] + tiny["silver"] + tiny["gold"] == 1.0  # medals both times


# ------------------------------------------------------------------ CLI
def test_cli_grade(run_cli, tmp_path):
    res = run_cli("grade", str(TINY), str(TINY / "private" / "answers.csv"), "--json")
    assert res.code == 0 and res.json()["gold_medal"] is True and res.json()["score"] == 1.0
    res = run_cli("grade", str(TINY), str(TINY / "public" / "sample_submission.csv"))
    assert res.code == 0 and "score 0.7" in res.out and "medal -" in res.out
    bad = tmp_path / "bad.csv"
    bad.write_text("id,label\nr0120,yes\n")
    res = run_cli("grade", str(TINY), str(bad), "--json")
    assert res.code == 3 and res.json()["valid_submission"] is False and "expected 40 rows" in res.json()["error"]
    res = run_cli("grade", "no-such-env", str(bad))
    assert res.code != 0 and res.err.startswith("error: no environment or folder") and "Traceback" not in res.err


def test_cli_rollout_and_trajectories_export(run_cli, tmp_path):
    res = run_cli("rollout", "--env", str(TINY), "--policy", "scripted", "--scaffold", "react", "--json")
    assert res.code == 0, res.err
    traj = res.json()
    assert traj["grade"]["valid_submission"] and traj["reward"] >= 0.7 and traj["terminated"]
    res = run_cli("rollout", "--env", str(TINY), "--policy", "scripted:strategy=constant", "--scaffold", "oneshot")
    assert res.code == 0 and "reward 0.300" in res.out and "medal -" in res.out
    res = run_cli("trajectories", "list", "--json")
    assert len(res.json()) == 2
    out = tmp_path / "t.jsonl"
    res = run_cli("trajectories", "export", str(out), "--min-reward", "0.5")
    assert res.code == 0 and "wrote 1 trajectories" in res.out
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows[0]["id"] == traj["id"] and rows[0]["messages"][0]["role"] == "system"
    assert rows[0]["messages"][2]["content"].startswith("<think>") and rows[0]["valid"] is True
    pq = tmp_path / "t.parquet"
    assert run_cli("trajectories", "export", str(pq)).code == 0
    import datasets

    ds = datasets.load_dataset("parquet", data_files=str(pq), split="train")
    assert len(ds) == 2 and set(ds["policy"]) == {"scripted:skill=1", "scripted:skill=1,strategy=constant"}
    assert ds[0]["messages"][1]["role"] == "user" and isinstance(ds[0]["grade"], str)
    js = datasets.load_dataset("json", data_files=str(out), split="train")
    assert js[0]["reward"] == pytest.approx(traj["reward"])
    res = run_cli("trajectories", "export", str(tmp_path / "none.jsonl"), "--min-reward", "2")
    assert res.code != 0 and "no trajectory matches" in res.err
    res = run_cli("trajectories", "show", traj["id"])
    assert res.code == 0 and "<tool_call>" in res.out


def test_cli_rollout_bad_inputs_are_one_line_errors(run_cli):
    for args in (["rollout", "--env", str(TINY), "--policy", "magic"],
                 ["rollout", "--env", str(TINY), "--reward", "nope"],
                 ["eval", "--envs", "nothing-here"]):
        res = run_cli(*args)
        assert res.code != 0 and res.err.startswith("error: ") and "Traceback" not in res.err, (args, res.err)


@pytest.mark.slow
def test_cli_eval_json(run_cli):
    res = run_cli("eval", "--policy", "scripted", "--scaffold", "oneshot", "--envs", str(TINY), "--rng-seeds", "2",
                  "--json")
    assert res.code == 0, res.err
    rep = res.json()
    assert rep["n_episodes"] == 2 and rep["rng_seeds"] == [0, 1] and rep["summary"]["valid"]["mean"] == 1.0
    assert rep["per_env"][0]["env_id"] == "tiny-tabular"
    res = run_cli("eval", "--policy", "scripted", "--scaffold", "oneshot", "--envs", str(TINY))
    assert res.code == 0 and "any_medal" in res.out and "tiny-tabular" in res.out


@pytest.mark.slow
def test_eval_on_ray_gives_the_results_of_local(run_cli, local_ray):
    def episodes(executor: str) -> list[tuple]:
        res = run_cli("eval", "--policy", "scripted:skill=0.5", "--scaffold", "oneshot", "--envs",
                      f"{TINY},{DATA / 'mlebench' / 'spooky-mini'}", "--rng-seeds", "3", "--executor", executor,
                      "--workers", "2", "--json")
        assert res.code == 0, res.err
        from store import Store

        with Store() as store:
            run = store.runs.get(res.json()["run_id"])
            assert run["config"]["executor"] == executor and run["status"] == "done"
            rows = store.runs.eval_results(run["id"])
            assert {r["trajectory_id"] for r in rows} == {t.id for t in store.trajectories.list(run_id=run["id"])}
        return sorted((r["env_id"], r["rng_seed"], r["score"], r["valid"], r["reward"]) for r in rows)

    local, ray = episodes("local"), episodes("ray")
    assert len(local) == 6 and len({r[2] for r in local}) > 1  # six episodes, not all alike
    assert ray == local


@pytest.mark.slow
def test_eval_with_the_process_executor(store):
    envs = select_envs(store, str(TINY))
    report = run_eval(store, "scripted:strategy=linear", envs, scaffold="oneshot", rng_seeds=[0, 1], workers=2,
                      executor="process")
    assert report.n_episodes == 2 and report.summary["valid"]["mean"] == 1.0
    assert report.policy == "scripted:strategy=linear"  # the spec: the policy itself lives in the workers
    assert {r["rng_seed"] for r in store.runs.eval_results(report.run_id)} == {0, 1}
    with pytest.raises(SandmleError, match="local executor"):
        run_eval(store, object(), envs, executor="process")
