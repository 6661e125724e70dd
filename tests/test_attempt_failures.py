"""One attempt's failure is that attempt's: an exception in a step of one environment (here verification raising
the issue's own ``TypeError``, a column named ``self`` passed as a keyword) rejects that environment with the
step and the error in one line, keeps the traceback in an ``error`` attempt (its log), and the run goes on to
its next environment — visible in ``synth --json``, ``envs show`` (text and ``--json``) and the Seeds screen's
synthesis runs; ``--debug`` prints the traceback. The infrastructure failing (the store cannot be written) ends the
run with one line. The fault is injected where verification is called (``engine.synthesis.pipeline.verify``);
everything else is the real procedural synthesis."""

from __future__ import annotations

import json
import sqlite3

import pandas as pd

import engine.synthesis.pipeline as pipeline

SEED = "tabular-binary-manufacturing"


def _fail_first(monkeypatch, exc: Exception | None = None) -> dict:
    """Verification raises on its first call (the issue's TypeError by default), then runs as it does."""
    real, calls = pipeline.verify, {"n": 0}

    def verify(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 1:
            if exc is not None:
                raise exc
            pd.DataFrame({"a": [1]}).assign(**{"self": [2]})  # TypeError: ... multiple values for argument 'self'
        return real(*args, **kwargs)

    monkeypatch.setattr(pipeline, "verify", verify)
    return calls


def test_a_step_that_raises_rejects_that_attempt_and_the_run_goes_on(run_cli, seeded_store, monkeypatch):
    from workbench.screens.seeds import synthesis_lines

    _fail_first(monkeypatch)
    res = run_cli("synth", "--seed", SEED, "--count", "2", "--rng-seed", "11", "--workers", "1", "--backend",
                  "procedural", "--json")
    assert res.code == 0, res.err
    report = res.json()
    assert report["attempted"] == 2 and report["verified"] == 1 and report["rejected"] == 1, report
    assert report["failed"] == 1 and report["errors"] == 0
    bad = next(o for o in report["environments"] if o["status"] == "rejected")
    assert bad["reason"] == ("verification failed: TypeError: DataFrame.assign() got multiple values for argument "
                             "'self'")
    assert bad["failed_step"] == "verification" and "Traceback (most recent call last)" in bad["traceback"]
    assert "Traceback" not in res.err and "1 attempt(s) rejected because a step raised" in res.err
    # stored: the environment with its reason, the error attempt with the traceback (its log)
    env = seeded_store.envs.get(bad["env_id"])
    assert env["status"] == "rejected" and env["reason"] == bad["reason"]
    errors = [a for a in seeded_store.envs.attempts(env_id=bad["env_id"]) if a["verdict"] == "error"]
    assert len(errors) == 1 and errors[0]["role"] == "verifier" and errors[0]["feedback"] == bad["reason"]
    assert "TypeError" in errors[0]["output"] and 'assign(**{"self"' in errors[0]["output"]
    run = seeded_store.runs.get(report["run_id"])
    assert run["status"] == "done" and run["summary"]["failed"] == 1 and run["summary"]["reasons"] == [bad["reason"]]
    # envs show: the reason, the history row and the traceback's last lines; --json: the whole log
    shown = run_cli("envs", "show", bad["env_id"], "--wide")
    assert f"reason: {bad['reason']}" in shown.out and "verifier #" in shown.out
    assert "TypeError: DataFrame.assign() got multiple values for argument 'self'" in shown.out.splitlines()[-1]
    data = run_cli("envs", "show", bad["env_id"], "--json").json()
    logged = [a for a in data["attempts"] if a["verdict"] == "error"]
    assert logged and "Traceback (most recent call last)" in logged[0]["log"]
    assert all("log" not in a for a in data["attempts"] if a["verdict"] != "error")
    # the Seeds screen's synthesis runs
    line = synthesis_lines(seeded_store, SEED)[0]
    assert "1/2 verified" in line and "1 rejected (1 raised): verification failed: TypeError" in line


def test_debug_prints_the_traceback_of_a_failed_attempt(run_cli, seeded_store, monkeypatch):
    _fail_first(monkeypatch)
    res = run_cli("--debug", "synth", "--seed", SEED, "--count", "1", "--rng-seed", "5", "--backend", "procedural")
    assert res.code == 1  # nothing verified: exit 1, one line says so
    assert "verification raised:\nTraceback (most recent call last)" in res.err
    assert "TypeError: DataFrame.assign() got multiple values for argument 'self'" in res.err
    assert res.err.rstrip().splitlines()[-1].startswith("error: no environment was verified (1 rejected")


def test_the_store_failing_ends_the_run_with_one_line(run_cli, seeded_store, monkeypatch):
    _fail_first(monkeypatch, sqlite3.OperationalError("attempt to write a readonly database"))
    res = run_cli("synth", "--seed", SEED, "--count", "2", "--rng-seed", "5", "--workers", "1", "--backend",
                  "procedural")
    assert res.code == 1 and "Traceback" not in res.err
    lines = [ln for ln in res.err.splitlines() if ln.strip() and not ln.startswith("synth ")]
    assert len(lines) == 1 and lines[0].startswith("error: cannot write the store ") and "readonly" in lines[0]
    (run,) = seeded_store.runs.list(kind="synthesis")
    assert run["status"] == "failed"
    assert json.dumps(run["summary"])  # what was done before it stopped is recorded
