"""Failures are failures: an unreachable policy endpoint or synthesis backend is counted apart (`errors`), left out
of the rates and makes the command exit 1 when nothing could run; a changed seed is not silently replaced under the
environments made from it; a bad config stops every command with one line."""

from __future__ import annotations

import json
import socket

import pytest

from conftest import DATA, ROOT

TINY = str(DATA / "envs" / "tiny-tabular")


def _closed_port() -> int:
    """A local port nothing listens on (connections are refused at once)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_aggregate_leaves_episodes_that_could_not_run_out_of_the_rates():
    from engine.eval.report import aggregate, left_out

    def row(seed, medal, error=None):
        return {"env_id": "a", "rng_seed": seed, "valid": not error, "gold": medal, "silver": False,
                "bronze": False, "above_median": medal, "rank": 1.0 if medal else 0.5, "reward": 0.9,
                "score": 0.8, "has_leaderboard": True, "error": error}

    summary, table = aggregate([row(0, True), row(1, False, error="PolicyError: connection refused")])
    assert summary["any_medal"] == {"mean": 1.0, "sem": 0.0} and summary["valid"]["mean"] == 1.0
    assert [(r["env_id"], r["episodes"], r["any_medal"], r["mean_score"]) for r in table] == [("a", 1, 1.0, 0.8)]
    summary, table = aggregate([row(1, False, error="x")])
    assert summary["any_medal"] == {"mean": None, "sem": None} and table == []
    assert left_out([{**row(1, False, error="x"), "has_leaderboard": False}]) == {"episodes": 0, "envs": []}


@pytest.mark.slow
def test_eval_against_an_unreachable_policy_endpoint_is_an_error_not_a_zero(run_cli, store, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    spec = f"openai:m,base_url=http://127.0.0.1:{_closed_port()}/v1"
    res = run_cli("eval", "--policy", spec, "--envs", TINY, "--rng-seeds", "2", "--workers", "2", "--json")
    assert res.code == 1
    report = json.loads(res.out)
    assert report["errors"] == 2 and report["n_episodes"] == 0 and report["status"] == "failed"
    assert report["summary"]["any_medal"]["mean"] is None  # no medal rate of 0.000 from episodes never run
    assert "Connection error" in report["error"] or "connect" in report["error"].lower()
    assert res.err.strip().splitlines()[-1].startswith(f"error: every episode of eval run {report['run_id']} failed")
    run = store.runs.get(report["run_id"])
    assert run["status"] == "failed" and run["summary"]["errors"] == 2
    assert all(r["error"] for r in store.runs.eval_results(report["run_id"]))


@pytest.mark.slow
def test_synth_against_an_unreachable_backend_stores_nothing_and_exits_1(seeded_store, run_cli, home, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    monkeypatch.setenv("SANDMLE_OPENAI__BASE_URL", f"http://127.0.0.1:{_closed_port()}/v1")
    res = run_cli("synth", "--seed", "forest-cover", "--count", "2", "--backend", "openai", "--json")
    assert res.code == 1
    report = json.loads(res.out)
    assert (report["verified"], report["rejected"], report["errors"]) == (0, 0, 2)
    assert all(e["status"] == "error" and "cannot reach" in e["reason"] for e in report["environments"])
    assert "error: no environment was verified (0 rejected, 2 could not run)" in res.err
    assert seeded_store.envs.count() == 0  # no 'rejected' environment for an attempt that never ran
    assert not [p for p in (home / "envs").iterdir()]  # and no folder
    run = seeded_store.runs.get(report["run_id"])
    assert run["status"] == "failed" and "every attempt failed to run" in run["error"]


@pytest.mark.slow
def test_synth_exits_1_when_nothing_was_verified(seeded_store, run_cli, monkeypatch):
    first = run_cli("synth", "--seed", "tabular-binary-manufacturing", "--count", "1", "--rng-seed", "3",
                    "--backend", "procedural", "--json")
    assert first.code == 0 and first.json()["verified"] == 1
    # the same RNG seed proposes the same scenario again: a near-duplicate, and no retry is allowed
    monkeypatch.setenv("SANDMLE_SYNTHESIS__MAX_RETRIES", "0")
    again = run_cli("synth", "--seed", "tabular-binary-manufacturing", "--count", "1", "--rng-seed", "3",
                    "--backend", "procedural", "--json")
    assert again.code == 1 and "error: no environment was verified (1 rejected, 0 could not run)" in again.err
    [outcome] = again.json()["environments"]
    assert outcome["status"] == "rejected" and "near-duplicate" in outcome["reason"]
    assert seeded_store.envs.get(outcome["env_id"])["status"] == "rejected"


def test_reimporting_a_changed_seed_says_what_changed_and_needs_force_while_envs_depend_on_it(
        store, run_cli, seed_copy):
    folder = seed_copy("author-style")
    assert run_cli("seeds", "import", str(folder)).code == 0
    toml = folder / "seed.toml"
    toml.write_text(toml.read_text().replace('title = "', 'title = "Renamed: ', 1))
    (folder / "description.md").write_text("A new description.\n")
    # no environment depends on it yet: replaced, and the change is said
    res = run_cli("seeds", "import", str(folder))
    assert res.code == 0 and "author-style: replaced the stored version (changed: title, description)" in res.out
    store.envs.add({"id": "author-env", "seed_id": "author-style", "title": "t", "status": "verified",
                    "modality": "text", "task_type": "multiclass", "metric": "log_loss", "lower_is_better": 1,
                    "id_column": "id", "target_columns": ["author"]})
    (folder / "description.md").write_text("Yet another description.\n")
    refused = run_cli("seeds", "import", str(folder))
    assert refused.code == 2
    assert refused.err.strip() == (f"error: {folder}: seed 'author-style' changed (description) and 1 environment(s) "
                                   "were synthesized from the stored version (--force replaces it; those "
                                   "environments keep the data they were made from)")
    assert store.seeds.get("author-style")["description"] == "A new description.\n"
    unchanged = run_cli("seeds", "import", str(ROOT / "seeds" / "forest-cover"))
    assert unchanged.code == 0 and "replaced" not in unchanged.out
    forced = run_cli("seeds", "import", str(folder), "--force", "--json")
    assert forced.code == 0 and forced.json()[0]["changed"] == ["description"]
    assert store.seeds.get("author-style")["description"] == "Yet another description.\n"


@pytest.mark.parametrize("config, message", [
    ('[sandbox]\nwarm = "yes"\n', "key 'sandbox.warm': Input should be a valid boolean"),
    ("[sandbox]\nmemory_mb = 512\n", "key 'sandbox.memory_mb'"),
    ("[sandbox]\nwarmth = true\n", "unknown key 'sandbox.warmth'"),
])
def test_a_bad_config_stops_every_command_with_one_line(run_cli, home, config, message):
    (home / "config.toml").write_text(config)
    for args in (("seeds", "list"), ("envs", "list"), ("runs", "list"), ("doctor",)):
        res = run_cli(*args)
        assert res.code == 2, (args, res.err)
        line = res.err.strip() or res.out.strip()
        assert len(line.splitlines()) == 1 and message in line and str(home / "config.toml") in line, args


def test_sandmle_config_naming_a_missing_file_is_an_error(run_cli, home, monkeypatch, tmp_path):
    monkeypatch.setenv("SANDMLE_CONFIG", str(tmp_path / "nope.toml"))
    res = run_cli("seeds", "list")
    assert res.code == 2
    assert res.err.strip() == (f"error: SANDMLE_CONFIG names {tmp_path / 'nope.toml'}, which is not a file (create "
                               "it, or unset SANDMLE_CONFIG to use <data dir>/config.toml)")
    # variables still override a good file, as text
    (tmp_path / "nope.toml").write_text("[sandbox]\nwarm = true\n")
    monkeypatch.setenv("SANDMLE_SANDBOX__WARM", "false")
    from engine.config import load_settings

    assert load_settings().sandbox.warm is False
