"""`sandmle train` and `sandmle runs`: flags from the config dataclasses, clear one-line errors, run listing."""

from __future__ import annotations


def test_train_flags_come_from_the_config(run_cli):
    res = run_cli("train", "grpo", "--help")
    assert res.code == 0
    for flag in ("--group-size", "--clip-high", "--kl-coef", "--save-every", "--config", "--equal-group"):
        assert flag in res.out


def test_bad_config_is_one_line(run_cli, tmp_path):
    f = tmp_path / "g.toml"
    f.write_text("group_size = 1\n")
    res = run_cli("train", "grpo", "--config", str(f))
    assert res.code == 2 and res.err.startswith("error: ") and "group_size" in res.err
    assert "Traceback" not in res.err


def test_grpo_without_environments_says_what_to_do(run_cli):
    res = run_cli("train", "grpo", "--steps", "1")
    assert res.code == 1 and "no verified environments" in res.err


def test_sft_without_trajectories_says_what_to_do(run_cli, tmp_path):
    res = run_cli("train", "sft", "--model", str(tmp_path / "nope"))
    assert res.code == 1 and "error:" in res.err


def test_runs_list_show_stop(run_cli, store):
    rid = store.runs.create("grpo", {"steps": 5}, name="demo")
    store.runs.log_metrics(rid, 1, {"reward_mean": 0.25})
    store.runs.log_metrics(rid, 2, {"reward_mean": 0.5})
    res = run_cli("runs", "list", "--json")
    row = [r for r in res.json() if r["id"] == rid][0]
    assert row["step"] == 2 and row["steps"] == 5 and row["status"] == "running"
    show = run_cli("runs", "show", rid, "--json").json()
    assert show["metrics"]["reward_mean"] == [[1, 0.25], [2, 0.5]]
    txt = run_cli("runs", "show", rid)
    assert "reward_mean" in txt.out and "0.5" in txt.out
    # the run was created by this very process: stop only marks it
    res = run_cli("runs", "stop", rid)
    assert res.code == 0 and store.runs.get(rid)["status"] == "stopped"
    again = run_cli("runs", "stop", rid)
    assert again.code == 1 and "not running" in again.err
    missing = run_cli("runs", "show", "nope")
    assert missing.code == 1 and "no run" in missing.err


def test_dead_runs_are_shown_as_dead(run_cli, store):
    rid = store.runs.create("grpo", {"steps": 5})
    store.runs.update(rid, pid=2**22 + 12345)
    row = [r for r in run_cli("runs", "list", "--json").json() if r["id"] == rid][0]
    assert row["status"] == "dead"
