"""`sandmle bench sandbox --quick` produces every row and headline figure (a smoke run, not a timed test), into
the data dir unless --out names a folder."""

from __future__ import annotations

import json
import os

import pytest

from engine.sandbox.features import bwrap_works, detect

from conftest import ROOT


@pytest.mark.slow
def test_bench_sandbox_quick_writes_its_rows(run_cli, home):
    shipped = ROOT / "benchmarks" / "results" / "sandbox.json"
    before = shipped.read_bytes() if shipped.exists() else None
    r = run_cli("bench", "sandbox", "--quick", "--json")
    assert r.code == 0, r.err
    assert f"wrote {home / 'bench' / 'sandbox.json'}" in r.err
    assert (shipped.read_bytes() if shipped.exists() else None) == before  # only --out benchmarks/results updates it
    data = json.loads((home / "bench" / "sandbox.json").read_text())
    modes = {(row["case"], row["mode"]) for row in data["rows"]}
    assert {("empty step", "bare python -c pass"), ("empty step", "local cold"),
            ("pandas+sklearn step", "bare python"), ("pandas+sklearn step", "local cold")} <= modes
    for row in data["rows"]:
        assert row["p50_ms"] > 0 and row["p90_ms"] >= row["p50_ms"]
    assert data["summary"]["bare_python_p50_ms"] > 0
    if ("empty step", "local warm") in modes:
        assert isinstance(data["summary"]["target_met"], bool)
        assert data["summary"]["ml_step_cold_over_warm"] > 1  # warm skips the ~1 s import
    assert any("docker" in n for n in data["notes"]) or ("empty step", "docker") in modes
    assert {row["user"] for row in data["rows"]} == {"root" if os.geteuid() == 0 else data["summary"]["user"]}
    local = [row for row in data["rows"] if row["mode"].startswith("local")]
    expected = "jail" if detect().namespaces else ("bwrap" if bwrap_works() else "none")
    assert {row["isolation"].split(":")[0] for row in local} == {expected}  # what the runs' records said
