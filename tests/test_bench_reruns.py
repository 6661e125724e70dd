"""`sandmle bench reruns`: the spread of the tiny model's SFT path over reruns of the same commands — the seed rule
(seed 0 until two reruns come out identical), the spread's figures, and a `--quick` run through the CLI that writes
its result file with every field."""

from __future__ import annotations

import json

import pytest

from engine.bench.reruns import VALID_AT, reruns, spread


def _row(i: int, seed: int, loss: float, valid: str, medal: float = 0.0) -> dict:
    rate = valid.count("v") / len(valid)
    return {"rerun": i, "seed": seed, "train_loss": loss, "episodes_valid": valid, "valid_rate": rate,
            "medal_rate": medal, "valid": rate >= VALID_AT}


def test_reruns_repeat_seed_0_then_vary_the_seed():
    rows = reruns(3, 2, lambda i, seed: _row(i, seed, 1.0, "vv.v"))
    assert [(r["rerun"], r["seed"]) for r in rows] == [(1, 0), (2, 0), (3, 0), (4, 1), (5, 2)]
    assert [r["seed"] for r in reruns(1, 0, lambda i, seed: _row(i, seed, 1.0, "v"))] == [0]


def test_spread_reports_min_mean_max_and_whether_every_rerun_was_valid():
    rows = [_row(1, 0, 1.0, "vvvv", 0.5), _row(2, 0, 1.0, "v..."), _row(3, 1, 1.2, "....", 0.25)]
    s = spread(rows)
    assert s["valid_rate"] == {"min": 0.0, "mean": pytest.approx(1.25 / 3, abs=1e-4), "max": 1.0}
    assert s["medal_rate"]["max"] == 0.5 and s["reruns"] == 3
    assert s["all_valid"] is False and s["all_above_0"] is False
    assert s["same_seed_same_loss"] is True and s["same_seed_valid_rate"] == [0.25, 1.0]
    assert spread(rows[:1])["all_valid"] is True
    assert spread([_row(1, 0, 1.0, "vv"), _row(2, 0, 1.1, "vv")])["same_seed_same_loss"] is False


@pytest.mark.slow
def test_bench_reruns_quick_writes_both_recipes_with_their_spread(run_cli, home):
    r = run_cli("bench", "reruns", "--quick", "--json")
    assert r.code == 0, r.err
    data = json.loads((home / "bench" / "reruns.json").read_text())
    assert data["name"] == "reruns" and data["machine"]["cpus"] and data["date"]
    # the load beside the figures, at the start and at the end, and the run's own wall time
    assert len(data["load"]["start"]) == len(data["load"]["end"]) == 3 and data["wall_s"] > 0
    assert [row["recipe"] for row in data["rows"]] == ["quickstart", "skill-0.7"]
    for row in data["rows"]:
        assert row["rerun"] == 1 and row["seed"] == 0 and row["examples"] >= 1
        assert len(row["episodes_valid"]) == row["episodes"] == 2  # one environment per seed, one RNG seed
        assert row["valid_rate"] == row["episodes_valid"].count("v") / row["episodes"]
        assert 0 <= row["medal_rate"] <= row["valid_rate"]
        assert row["valid"] == (row["valid_rate"] >= VALID_AT)
    summary = data["summary"]
    assert summary["k"] == 1 and summary["valid_at"] == VALID_AT
    for name, recipe in summary["recipes"].items():
        assert recipe["reruns"] == 1 and set(recipe["valid_rate"]) == {"min", "mean", "max"}
        assert recipe["teacher_valid"] and all(v == 1.0 for v in recipe["teacher_valid"].values())
        assert set(recipe["runs"]["1"]) == {"sft", "eval"}
    assert summary["all_valid"] == all(row["valid"] for row in data["rows"])
