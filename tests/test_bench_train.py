"""`sandmle bench train --quick`: both modes' rows (steps per hour, staleness) and reward curves, the speedup and
the plot (a smoke run, not a timed test)."""

from __future__ import annotations

import json

import pytest


@pytest.mark.slow
def test_bench_train_quick_measures_both_modes_side_by_side(run_cli, home):
    r = run_cli("bench", "train", "--quick", "--json")
    assert r.code == 0, r.err
    data = json.loads((home / "bench" / "train.json").read_text())
    on, over = data["rows"]
    assert on["mode"].startswith("on-policy") and over["mode"].startswith("overlapped")
    assert on["steps_per_hour"] > 0 and over["steps_per_hour"] > 0
    assert on["staleness_mean"] == 0 and on["stale_share"] == 0  # on-policy: never behind
    assert 0 < over["staleness_mean"] <= 1 and over["refused"] == 0  # one update behind at most, all trained on
    summary = data["summary"]
    assert summary["speedup"] == pytest.approx(over["steps_per_hour"] / on["steps_per_hour"])
    assert isinstance(summary["met"], bool) and summary["target_speedup"] == 1.5
    curves = summary["reward_curves"]
    assert [len(c) for c in curves.values()] == [summary["steps"]] * 2
    assert (home / "bench" / summary["plot"]).is_file()
