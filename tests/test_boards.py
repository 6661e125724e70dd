"""Population boards: every synthesized environment's medals come from a population of independent solutions run
in the sandbox, with three real tiers that a constant reaches none of; no scripted option reproduces an entry;
every reward tier is reachable; the exploit audit judges at bronze with no false alarm on two environments of every
shipped seed; old 9-entry boards are found by `doctor --deep` and rebuilt in place by `envs reboard` (boards of
distinct entries and old population-1 boards: tests/test_board_distinct.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import cli_runner, store_at
from engine.agents.templates import MODELS, TEXTS, Choice
from engine.envs.layout import EnvSpec
from engine.grading import compute_reward, grade
from engine.grading.audit import Bar
from engine.grading.score import read_frame
from engine.grading.thresholds import Thresholds, rank_name, ranks_name, thresholds
from engine.sandbox import get_backend
from engine.synthesis.population import BOARD_VERSION, MIN_ENTRIES, POPULATION, RESERVE, run_population
from engine.synthesis.solutions import with_solution_imports
from engine.synthesis.verifier import run_ladder
from engine.config import load_settings


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    """Two procedural environments of every shipped seed (RNG seed 7), in a data dir of the module's."""
    from engine.seeds.load import load_shipped
    from engine.synthesis.pipeline import synthesize
    from store import Store

    home = tmp_path_factory.mktemp("boards")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SANDMLE_HOME", str(home))
        mp.delenv("SANDMLE_CONFIG", raising=False)
        with Store(home / "sandmle.db") as store:
            load_shipped(store)
            outcomes = {s["id"]: synthesize(store, s["id"], 2, backend="procedural", rng_seed=7).outcomes
                        for s in store.seeds.list()}
    return home, outcomes


@pytest.fixture(scope="module")
def box():
    b = get_backend(settings=with_solution_imports(load_settings().sandbox))
    yield b
    b.close()


def tiers(th: Thresholds, scores: list[float]) -> dict[str | None, int]:
    out: dict[str | None, int] = {}
    for s in scores:
        out[th.medal(s)] = out.get(th.medal(s), 0) + 1
    return out


@pytest.mark.slow
def test_every_shipped_seed_gets_a_population_board_of_three_tiers(sweep, monkeypatch):
    home, outcomes = sweep
    assert len(outcomes) == 12
    assert {k: [o.status for o in v] for k, v in outcomes.items()} == {k: ["verified"] * 2 for k in outcomes}, \
        {k: [o.reason for o in v] for k, v in outcomes.items()}
    with store_at(home, monkeypatch) as store:
        for env in store.envs.list(status="verified"):
            board = store.envs.leaderboard(env["id"])
            scores = [e["score"] for e in board]
            th = Thresholds.from_dict(env["thresholds"], bool(env["lower_is_better"]))
            assert th.board == "population" and th.entries == len(board) >= MIN_ENTRIES, env["id"]
            # entries are distinct solutions, counted by the board's current version
            population = env["verification"]["report"]["population"]
            assert env["thresholds"]["version"] == population["version"] == BOARD_VERSION
            assert population["distinct"] == len(board) and "cv-select" not in {e["name"] for e in board}
            assert len({e["name"] for e in board}) >= 8 and {e["source"] for e in board} == {"population"}
            assert all(e["family"] and e["params"] for e in board)
            # three distinct scores, each reached by some entries; the constant reaches none
            assert th.distinct(), (env["id"], th)
            counts = tiers(th, scores)
            assert all(counts.get(t, 0) >= 1 for t in ("gold", "silver", "bronze")), (env["id"], counts)
            trivial = env["verification"]["report"]["means"]["trivial"]
            assert th.medal(trivial) is None and not th.above_median(trivial), env["id"]
            assert th == thresholds(scores, th.lower_is_better, "population")  # the stored ones are the board's


@pytest.mark.slow
def test_every_shipped_seed_yields_verified_environments_of_its_kind(sweep, monkeypatch):
    home, outcomes = sweep
    with store_at(home, monkeypatch) as store:
        for seed_id, made in outcomes.items():
            seed = store.seeds.get(seed_id)
            for o in made:
                env = store.envs.get(o.env_id)
                assert env["modality"] == seed["modality"] and env["task_type"] == seed["task_type"]
                assert env["metric"] == seed["metric"] and 50 <= env["n_train"] <= 200
                d = Path(env["dir"])
                if seed["modality"] == "image":
                    assert list((d / "public/train").glob("*.png"))
                if seed["modality"] in ("audio", "timeseries"):
                    arr = np.load(next((d / "public/test").glob("*.npy")))
                    assert arr.ndim == 1 and arr.dtype == np.float32
                sign = -1 if env["lower_is_better"] else 1
                assert sign * (o.strong - o.trivial) > 0


@pytest.mark.slow
def test_the_audit_judges_at_bronze_with_no_false_alarm_on_every_shipped_seed(sweep, monkeypatch, capsys):
    home, _ = sweep
    with store_at(home, monkeypatch) as store:
        envs = store.envs.list(status="verified")
        assert len(envs) == 24
        for env in envs:
            audit = env["verification"]["report"]["audit"]
            assert audit["findings"] == [] and audit["attempts"] > 0 and audit["candidates"] > 0, env["id"]
            assert audit["bar"]["medal"] == env["thresholds"]["bronze"] and audit["bar"]["tier"] == "bronze"
        res = cli_runner(capsys)("envs", "audit")
    lines = res.out.strip().splitlines()
    assert res.code == 0 and lines[-1] == "audited 24 environments: 0 with findings (0 in all)"
    # one lookup line per environment: agent code in its sandbox reads no data package and finds no test row
    assert sorted(line.split(":")[0] for line in lines[:-1]) == sorted(env["id"] for env in envs)
    for line in lines[:-1]:
        assert ": lookup probe: 0 datasets readable from data packages" in line and "found in none" in line, line


def test_a_bar_at_bronze_finds_what_a_bar_at_gold_lets_through():
    th = thresholds([0.9, 0.85, 0.8, 0.78, 0.75, 0.7, 0.69, 0.68, 0.66, 0.64] * 4 + [0.6], False)
    between = (th.bronze + th.silver) / 2
    assert th.medal(between) == "bronze"
    assert Bar(0.5, False, medal=th.bronze).reached(between)
    assert not Bar(0.5, False, medal=th.gold).reached(between)
    assert "bronze" in Bar(0.5, False, medal=th.bronze).describe()


def _population_and_options(env: EnvSpec, box) -> tuple[dict[int, pd.DataFrame], dict[str, pd.DataFrame]]:
    answers = read_frame(env.answers, env.grade.id_column)
    pop = run_population(box, env.public, env.grade, answers)
    options = {c.key: c for c in (Choice(m, t, r, ch) for m in MODELS for t in TEXTS for r in (True, False)
                                  for ch in (True, False))}
    files = {k.replace("/", "_").replace("+", "-"): k for k in options}  # the ladder names files after them
    runs, subs, _ = run_ladder(box, env.public, env.grade, (0,),
                               ladder={f: options[k].strategy() for f, k in files.items()})
    assert all(r.status == "ok" for r in runs), [(r.name, r.error[-200:]) for r in runs if r.status != "ok"]
    return pop.submissions, {files[name]: sub for (name, _), sub in subs.items()}


def _same(spec, a: pd.DataFrame, b: pd.DataFrame) -> bool:
    a, b = a.sort_values(spec.id_column).reset_index(drop=True), b.sort_values(spec.id_column).reset_index(drop=True)
    for c in spec.prediction_columns:
        x, y = pd.to_numeric(a[c], errors="coerce"), pd.to_numeric(b[c], errors="coerce")
        if x.isna().any() or y.isna().any():
            if not (a[c].astype(str) == b[c].astype(str)).all():
                return False
        elif not np.allclose(x, y, rtol=0, atol=1e-9):
            return False
    return True


@pytest.mark.slow
@pytest.mark.parametrize("seed_id", ["forest-cover", "author-style"])
def test_no_scripted_option_reproduces_a_board_entry(sweep, monkeypatch, box, seed_id):
    home, outcomes = sweep
    with store_at(home, monkeypatch) as store:
        env = EnvSpec.from_store(store, outcomes[seed_id][0].env_id)
    entries, options = _population_and_options(env, box)
    assert len(entries) >= MIN_ENTRIES and len(options) == 32
    same = [(key, (*POPULATION, *RESERVE)[i].label()) for key, sub in options.items() for i, e in entries.items()
            if _same(env.grade, sub, e)]
    assert same == []


@pytest.mark.slow
def test_every_reward_tier_is_reachable(sweep, monkeypatch, box, tmp_path):
    home, outcomes = sweep
    with store_at(home, monkeypatch) as store:
        env = EnvSpec.from_store(store, outcomes["pizza-requests"][0].env_id)
    th = Thresholds.from_dict(env.thresholds or {}, env.grade.lower_is_better)
    answers = read_frame(env.answers, env.grade.id_column)
    pop = run_population(box, env.public, env.grade, answers)
    by_tier: dict[str, pd.DataFrame] = {}
    for i, e in enumerate(pop.entries):  # in the plan's order: entry i wrote submission i
        if e.score is None:
            continue
        tier = th.medal(e.score) or ("above median" if th.above_median(e.score) else "below median")
        by_tier.setdefault(tier, pop.submissions[i])
    assert set(by_tier) == {"gold", "silver", "bronze", "above median", "below median"}
    rewards = {}
    for tier, sub in by_tier.items():
        path = tmp_path / f"{tier}.csv"
        sub.to_csv(path, index=False)
        report = grade(env, path)
        assert report.valid_submission and (report.medal or ("above median" if report.above_median
                                                             else "below median")) == tier
        assert report.board == "population" and report.rank_name == f"rank among {len(env.leaderboard)} reference solutions"
        rewards[tier] = compute_reward(report, [], "milestone")[0]
    assert rewards == pytest.approx({"gold": 0.9, "silver": 0.8, "bronze": 0.7, "above median": 0.3,
                                     "below median": 0.2})


def test_the_rank_is_named_for_its_board():
    assert rank_name("human", 1200) == "HumanRank"
    assert rank_name("population", 46) == "rank among 46 reference solutions"
    assert rank_name("ladder", 9).startswith("rank among 9 ladder entries")
    assert ranks_name([("population", 46), ("population", 46)]) == "rank among 46 reference solutions"
    assert ranks_name([("population", 46), ("population", 42)]) == "rank among reference solutions"
    assert ranks_name([("population", 46), ("human", 900)]) == "rank (HumanRank on real leaderboards)"


@pytest.mark.slow
def test_doctor_finds_a_9_entry_board_and_reboard_rebuilds_it_in_place(run_cli, seeded_store):
    from engine.synthesis.pipeline import synthesize

    (old,) = synthesize(seeded_store, "forest-cover", 1, backend="procedural", rng_seed=3, board="ladder").outcomes
    assert old.status == "verified", old.reason
    before = seeded_store.envs.get(old.env_id)
    assert len(seeded_store.envs.leaderboard(old.env_id)) == 9
    deep = run_cli("doctor", "--deep", "--json").json()
    boards = [f for f in deep["problems"] if f["check"] == "environment boards"]
    assert [f["subject"] for f in boards] == [old.env_id] and "envs reboard" in boards[0]["problem"]

    res = run_cli("envs", "reboard", "--json")
    assert res.code == 0, res.err
    (done,) = res.json()
    assert done["status"] == "rebuilt" and done["before"]["board"] == "ladder" and done["before"]["entries"] == 9
    after = seeded_store.envs.get(old.env_id)
    board = seeded_store.envs.leaderboard(old.env_id)
    assert len(board) >= MIN_ENTRIES and after["thresholds"]["board"] == "population"
    assert Thresholds.from_dict(after["thresholds"], False).distinct()
    # provenance, the verification report and the files stay; the reboard is recorded beside them
    for key in ("seed_id", "run_id", "backend", "rng_seed", "fingerprint", "created_at"):
        assert after[key] == before[key], key
    assert after["verification"]["report"]["ladder"] == before["verification"]["report"]["ladder"]
    assert after["verification"]["reboard"]["from"]["board"] == "ladder"
    assert sorted(EnvSpec.from_dir(after["dir"]).leaderboard) == sorted(e["score"] for e in board)  # env.json too
    deep = run_cli("doctor", "--deep", "--json").json()
    assert [f for f in deep["problems"] if f["subject"] == old.env_id] == []  # env.json's stored hash follows too
    # an eval records which board it was graded on, and names the rank for it
    ev = run_cli("eval", "--policy", "scripted", "--envs", old.env_id, "--max-turns", "6", "--json")
    assert ev.code == 0, ev.err
    assert ev.json()["rank_label"] == f"rank among {len(board)} reference solutions"
    (row,) = seeded_store.runs.eval_results(ev.json()["run_id"])
    assert row["board"] == "population" and row["board_entries"] == len(board)
