"""Bad values on the command line are click usage errors (exit 2, one `Error:` line naming the option), and
exports never overwrite a file or folder without --force."""

from __future__ import annotations

import json

import pytest

from conftest import DATA

TINY = DATA / "envs" / "tiny-tabular"


@pytest.mark.parametrize("args, option", [
    (("sandbox", "run", "--timeout", "0", "--", "true"), "--timeout"),
    (("sandbox", "run", "--timeout", "-1", "--", "true"), "--timeout"),
    (("rollout", "--env", str(TINY), "--max-turns", "0"), "--max-turns"),
    (("rollout", "--env", str(TINY), "--max-turns", "-1"), "--max-turns"),
    (("rollout", "--env", str(TINY), "--step-timeout", "0"), "--step-timeout"),
    (("eval", "--envs", str(TINY), "--max-turns", "0"), "--max-turns"),
    (("eval", "--envs", str(TINY), "--workers", "0"), "--workers"),
    (("eval", "--envs", str(TINY), "--rng-seeds", "0"), "--rng-seeds"),
    (("eval", "--envs", str(TINY), "--episode-timeout", "-1"), "--episode-timeout"),
    (("synth", "--seed", "forest-cover", "--workers", "0"), "--workers"),
    (("synth", "--seed", "forest-cover", "--count", "0"), "--count"),
    (("sandbox", "runs", "list", "--status", "bogus"), "--status"),
])
def test_bad_option_values_are_usage_errors(run_cli, args, option):
    res = run_cli(*args)
    assert res.code == 2, (args, res.out, res.err)
    assert "Error: Invalid value for" in res.err and option in res.err
    assert "Traceback" not in res.err


def test_dead_is_a_sandbox_run_status_to_filter_on(run_cli):
    res = run_cli("sandbox", "runs", "list", "--status", "dead", "--json")
    assert res.code == 0 and res.json() == []


@pytest.mark.parametrize("tag, why", [("", "cannot be empty"), ("  ", "cannot be empty"),
                                      ("a,b", "cannot contain a comma")])
def test_empty_tags_and_tags_with_commas_are_refused(seeded_store, run_cli, tag, why):
    before = seeded_store.seeds.get("forest-cover")["tags"]
    res = run_cli("seeds", "tag", "forest-cover", tag)
    assert res.code == 2 and why in res.err
    assert seeded_store.seeds.get("forest-cover")["tags"] == before
    ok = run_cli("seeds", "tag", "forest-cover", " curated ")
    assert ok.code == 0 and seeded_store.seeds.get("forest-cover")["tags"] == sorted({*before, "curated"})


def _one_trajectory(run_cli) -> None:
    res = run_cli("rollout", "--env", str(TINY), "--scaffold", "oneshot", "--json")
    assert res.code == 0, res.err


def test_trajectory_export_refuses_unknown_extensions_and_overwrites(run_cli, tmp_path):
    _one_trajectory(run_cli)
    bad = run_cli("trajectories", "export", str(tmp_path / "x.csv"))
    assert bad.code == 2 and "unknown extension '.csv'" in bad.err and not (tmp_path / "x.csv").exists()
    out = tmp_path / "t.jsonl"
    assert run_cli("trajectories", "export", str(out)).code == 0
    first = out.read_text()
    assert json.loads(first.splitlines()[0])["env_id"] == "tiny-tabular"
    out.write_text("mine\n")
    again = run_cli("trajectories", "export", str(out))
    assert again.code == 2 and "add --force" in again.err and out.read_text() == "mine\n"
    forced = run_cli("trajectories", "export", str(out), "--force")
    assert forced.code == 0 and out.read_text() == first
    explicit = run_cli("trajectories", "export", str(tmp_path / "t.data"), "--format", "jsonl")
    assert explicit.code == 0 and (tmp_path / "t.data").read_text() == first


def test_env_export_replaces_only_an_earlier_export_with_force(run_cli, tmp_path):
    _one_trajectory(run_cli)  # registers tiny-tabular in the store
    dest = tmp_path / "export"
    assert run_cli("envs", "export", "tiny-tabular", str(dest)).code == 0
    (dest / "stale.txt").write_text("old")
    refused = run_cli("envs", "export", "tiny-tabular", str(dest))
    assert refused.code == 2 and "add --force" in refused.err and (dest / "stale.txt").exists()
    assert run_cli("envs", "export", "tiny-tabular", str(dest), "--force").code == 0
    assert not (dest / "stale.txt").exists() and (dest / "config.yaml").is_file()
    other = tmp_path / "notes"
    other.mkdir()
    (other / "mine.txt").write_text("keep")
    res = run_cli("envs", "export", "tiny-tabular", str(other), "--force")
    assert res.code == 2 and "does not hold an export" in res.err and (other / "mine.txt").read_text() == "keep"


def test_rollout_and_doctor_validate_the_config(run_cli, home):
    (home / "config.toml").write_text("[sandbox]\nmemory_mb = 12\n")
    res = run_cli("rollout", "--env", str(TINY))
    assert res.code == 2 and "config.toml: key 'sandbox.memory_mb'" in res.err
    assert len(res.err.strip().splitlines()) == 1
    doc = run_cli("doctor", "--json")
    assert doc.code == 2
    config = next(c for c in doc.json() if c["name"] == "config")
    assert config["ok"] is False and "sandbox.memory_mb" in config["detail"]
