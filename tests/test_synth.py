"""Synthesis end to end with the procedural backend: CLI, stored rows and files, reproducible generator, export,
delete, and the verifier's rejections."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from conftest import cli_runner, store_at


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory):
    """One store with two tabular environments made through the CLI (shared by the tests of this module)."""
    from workbench.cli import main

    home = tmp_path_factory.mktemp("synth-home")
    with pytest.MonkeyPatch.context() as env:  # monkeypatch itself is function-scoped
        env.setenv("SANDMLE_HOME", str(home))
        from engine.seeds.load import load_shipped
        from store import Store

        with Store(home / "sandmle.db") as s:
            load_shipped(s)
        import contextlib
        import io

        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            try:
                main(["synth", "--seed", "tabular-binary-manufacturing", "--count", "2", "--rng-seed", "11",
                      "--workers", "2", "--backend", "procedural", "--json"])
            except SystemExit as exc:
                assert not exc.code
        yield home, json.loads(out.getvalue())


@pytest.fixture
def synth_store(synthesized, monkeypatch):
    home, report = synthesized
    with store_at(home, monkeypatch) as s:
        yield s, report


def test_cli_synth_yields_verified_environments(synth_store):
    store, report = synth_store
    assert report["attempted"] == 2 and report["verified"] == 2, report
    run = store.runs.get(report["run_id"])
    assert run["kind"] == "synthesis" and run["status"] == "done"
    assert run["summary"]["verified"] == 2 and run["config"]["rng_seed"] == 11
    for o in report["environments"]:
        env = store.envs.get(o["env_id"])
        assert env["status"] == "verified" and env["reason"] is None
        assert 50 <= env["n_train"] <= 200 and env["n_test"] >= 100
        assert env["metric"] == "roc_auc" and env["run_id"] == report["run_id"]
        # strong beats the constant, which sits at 0.5 AUC
        assert o["trivial"] == pytest.approx(0.5) and o["strong"] > 0.6


def test_environment_layout_and_grade_spec(synth_store):
    from engine.envs.layout import EnvSpec

    store, report = synth_store
    env_id = report["environments"][0]["env_id"]
    spec = EnvSpec.from_store(store, env_id)
    d = spec.dir
    for rel in ("public/description.md", "public/train.csv", "public/test.csv", "public/sample_submission.csv",
                "private/answers.csv", "private/grade.json", "generator.py", "env.json"):
        assert (d / rel).is_file(), rel
    train, test = pd.read_csv(d / "public/train.csv"), pd.read_csv(d / "public/test.csv")
    sample, answers = pd.read_csv(d / "public/sample_submission.csv"), pd.read_csv(d / "private/answers.csv")
    g = spec.grade
    assert g.target_columns[0] in train.columns and g.target_columns[0] not in test.columns
    assert list(answers.columns) == list(sample.columns) == [g.id_column, *g.prediction_columns]
    assert answers[g.id_column].tolist() == test[g.id_column].tolist()
    assert set(answers[g.prediction_columns[0]]) <= {0, 1}
    assert spec.thresholds["gold"] >= spec.thresholds["bronze"] > 0.5
    files = {f["path"]: f for f in store.envs.files(env_id)}
    assert files["private/answers.csv"]["role"] == "private" and files["generator.py"]["role"] == "generator"
    assert len(files["public/train.csv"]["sha256"]) == 64


def test_leaderboard_attempts_and_verification_report(synth_store):
    store, report = synth_store
    env_id = report["environments"][0]["env_id"]
    board = store.envs.leaderboard(env_id)
    # the board is the population of independent solutions, never the verifier's own ladder
    assert len(board) >= 40 and {e["source"] for e in board} == {"population"}
    assert not any(e["name"].startswith("reference-") for e in board)
    env = store.envs.get(env_id)
    ladder = env["verification"]["report"]["ladder"]  # the ladder still ran, twice per rung, and gated
    assert sorted((r["name"], r["seed"]) for r in ladder) == [(t, s) for t in ("simple", "strong", "trivial")
                                                              for s in (0, 1)]
    roles = [a["role"] for a in store.envs.attempts(env_id=env_id)]
    for role in ("analyst", "designer", "grader", "engineer", "verifier", "reviewer"):
        assert role in roles
    rep = env["verification"]["report"]
    assert all(v == "invalid" or v.startswith("score") for v in rep["fuzz"].values())
    for case in ("missing_row", "extra_row", "unknown_id", "renamed_column", "nan_value", "inf_value",
                 "wrong_dtype", "label_column_copied", "header_only", "no_id_column"):
        assert rep["fuzz"][case] == "invalid", case
    assert rep["leakage"]["id_label_corr"] < 0.45
    proof = env["verification"]["proof"]
    assert proof["perfect"] == pytest.approx(1.0) and proof["random"] < proof["perfect"]


def test_regenerating_reproduces_identical_hashes(synth_store, tmp_path):
    from engine.envs.storage import regenerate

    store, report = synth_store
    env_id = report["environments"][0]["env_id"]
    env = store.envs.get(env_id)
    got = regenerate(env["dir"], tmp_path / "again")
    assert got == stored_hashes(store, env_id)
    other = regenerate(env["dir"], tmp_path / "other", rng_seed=env["rng_seed"] + 1)
    assert other["public/train.csv"] != got["public/train.csv"]


def test_envs_cli_list_show_export_delete(synth_store, capsys, tmp_path):
    store, report = synth_store
    run_cli = cli_runner(capsys)
    env_id = report["environments"][1]["env_id"]
    listed = run_cli("envs", "list", "--json").json()
    assert {e["id"] for e in listed} >= {o["env_id"] for o in report["environments"]}
    shown = run_cli("envs", "show", env_id, "--json").json()
    assert shown["id"] == env_id and len(shown["leaderboard"]) >= 6 and shown["attempts"]
    text = run_cli("envs", "show", env_id)
    assert "leaderboard:" in text.out and "synthesis history:" in text.out
    dest = tmp_path / "export"
    res = run_cli("envs", "export", env_id, str(dest), "--json")
    assert res.code == 0, res.err
    cfg = yaml.safe_load((dest / "config.yaml").read_text())
    assert cfg["id"] == env_id and cfg["dataset"]["answers"] == "prepared/private/answers.csv"
    assert (dest / "prepared/public/train.csv").is_file() and (dest / "prepared/private/answers.csv").is_file()
    lb = pd.read_csv(dest / "leaderboard.csv")
    assert len(lb) == len(shown["leaderboard"]) and "score" in lb.columns
    again = run_cli("envs", "export", env_id, str(dest))
    assert again.code != 0 and "not empty" in again.err
    env_dir = Path(store.envs.get(env_id)["dir"])
    res = run_cli("envs", "delete", env_id, "--json")
    assert res.code == 0 and res.json()["deleted"]
    assert store.envs.find(env_id) is None and not env_dir.exists()
    missing = run_cli("envs", "show", env_id)
    assert missing.code != 0 and "no environment" in missing.err and "Traceback" not in missing.err


def test_synth_user_errors_are_one_line(run_cli, seeded_store):
    res = run_cli("synth", "--seed", "no-such-seed", "--count", "1")
    assert res.code != 0 and "no-such-seed" in res.err and "Traceback" not in res.err
    res = run_cli("synth", "--seed", "taxi-fare", "--count", "0")
    assert res.code != 0 and "--count" in res.err


def _make_env(tmp_path, seed_id: str, knobs: dict, rng_seed: int = 3):
    """Generate one environment directly (no store), returning (dir, spec, scenario)."""
    import subprocess
    import sys

    from engine.seeds.load import SHIPPED_SEEDS
    from engine.seeds.seed import load_seed_folder
    from engine.synthesis.blueprint import analyze
    from engine.synthesis.designer import design
    from engine.synthesis.engineer import build_config, render_program
    from engine.synthesis.grader import grade_spec

    seed = load_seed_folder(SHIPPED_SEEDS / seed_id).to_row()
    bp = analyze(seed)
    sc = design(bp, seed, np.random.default_rng(rng_seed))
    spec = grade_spec(bp, sc)
    cfg = build_config(bp, sc, spec, {"noise": 0.4, "label_noise": 0.0, "missing_rate": 0.0, "shift": 0.0, **knobs})
    d = tmp_path / seed_id
    d.mkdir()
    (d / "generator.py").write_text(render_program(cfg))
    subprocess.run([sys.executable, "generator.py", "--out", ".", "--seed", str(rng_seed)], cwd=d, check=True,
                   capture_output=True)
    return d, spec, sc


def test_verifier_rejects_unlearnable_and_leaky_data(tmp_path):
    from engine.sandbox import get_backend
    from engine.synthesis.verifier import verify

    with get_backend("local", root=tmp_path / "sbx") as sandbox:
        d, spec, sc = _make_env(tmp_path, "tabular-binary-manufacturing", {"signal": 0.0})
        v = verify(sandbox, d, spec)
        assert not v.ok and v.reason.startswith("not learnable") and v.send_to == "engineer" and v.signal_factor > 1
        (tmp_path / "b").mkdir()
        d2, spec2, _ = _make_env(tmp_path / "b", "tabular-binary-manufacturing", {"signal": 1.2})
        target = spec2.target_columns[0]
        train = pd.read_csv(d2 / "public/train.csv")
        test = pd.read_csv(d2 / "public/test.csv")
        answers = pd.read_csv(d2 / "private/answers.csv")
        # plant a leak: a column that is the label plus a constant
        train["leak_score"] = train[target] * 10 + 3
        test["leak_score"] = answers[target] * 10 + 3
        train.to_csv(d2 / "public/train.csv", index=False)
        test.to_csv(d2 / "public/test.csv", index=False)
        v2 = verify(sandbox, d2, spec2)
        assert not v2.ok
        assert "leakage" in v2.reason or "saturated" in v2.reason


def test_reviewer_catches_a_description_that_disagrees(tmp_path):
    from engine.synthesis.reviewer import review

    d, spec, _ = _make_env(tmp_path, "taxi-fare", {"signal": 1.2})
    assert review(d, spec) == []
    desc = d / "public/description.md"
    desc.write_text(desc.read_text().replace(f"`{spec.target_columns[0]}`", "the target").replace(spec.metric, "a metric"))
    problems = review(d, spec)
    assert any(spec.target_columns[0] in p for p in problems) and any("metric" in p for p in problems)


@pytest.mark.slow
def test_same_rng_seed_same_environment(tmp_path):
    """Deterministic per --rng-seed: two fresh stores give the same scenario and identical data hashes."""
    from engine.seeds.load import load_shipped
    from engine.synthesis.pipeline import synthesize
    from store import Store

    hashes = []
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        with Store(tmp_path / name / "sandmle.db") as s:
            load_shipped(s)
            rep = synthesize(s, "author-style", 1, rng_seed=42)
            (o,) = rep.outcomes
            assert o.status == "verified", o.reason
            env = s.envs.get(o.env_id)
            hashes.append((o.env_id, env["scenario"]["title"], stored_hashes(s, o.env_id)))
    assert hashes[0] == hashes[1]


@pytest.mark.slow
def test_synth_on_ray_gives_the_results_of_local(run_cli, local_ray, tmp_path, monkeypatch):
    """`synth --executor ray`: Ray actors, each with its own store connection, sandbox and Synthesizer, make the
    environments the local executor's threads make for the same seeds (ids, verdicts, scores, every file's hash)."""
    from store import Store

    def made(executor: str) -> list[tuple]:
        monkeypatch.setenv("SANDMLE_HOME", str(tmp_path / executor))
        res = run_cli("synth", "--seed", "tabular-binary-manufacturing", "--count", "2", "--rng-seed", "5",
                      "--workers", "2", "--executor", executor, "--backend", "procedural", "--json")
        assert res.code == 0, res.err
        report = res.json()
        with Store() as store:
            run = store.runs.get(report["run_id"])
            assert run["config"]["executor"] == executor and run["status"] == "done"
            assert {r["executor"] for r in store.sandbox.list(limit=1000)} == {executor}
            return sorted((o["env_id"], o["status"], o["trivial"], o["strong"],
                           store.envs.get(o["env_id"])["scenario"]["title"], stored_hashes(store, o["env_id"]))
                          for o in report["environments"])

    local, ray = made("local"), made("ray")
    assert len(local) == 2 and {row[1] for row in local} == {"verified"}
    assert ray == local


# every shipped seed yields verified environments of its kind: tests/test_boards.py (one sweep of 2 per seed)


def stored_hashes(store, env_id: str) -> dict[str, str]:
    """{relative path: sha256} of the stored data files the generator wrote (what regenerating must reproduce)."""
    from engine.envs.storage import PIPELINE_FILES

    return {f["path"]: f["sha256"] for f in store.envs.files(env_id)
            if f["role"] in ("public", "private") and f["path"] not in PIPELINE_FILES}
