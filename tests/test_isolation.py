"""Fail closed (issue 33): where the local sandbox can confine nothing (no namespaces, no bubblewrap), agent code,
generator programs and imported evaluators are refused with one line naming what is missing and how to get it —
unless ``isolation = "none"`` was asked for by name, and then every run record, `doctor` and the workbench's
status line say "unisolated". The machine without isolation is made for real (tests/no_isolation.py)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from conftest import DATA, ROOT
from no_isolation import sandmle, why_not

pytestmark = pytest.mark.skipif(why_not() is not None, reason=why_not() or "")

TINY = DATA / "envs" / "tiny-tabular"
EVALUATOR = '''import argparse, json
import pandas as pd
p = argparse.ArgumentParser(); p.add_argument("--submission_path", required=True); a = p.parse_args()
ans = pd.read_csv("answer.csv"); sub = pd.read_csv(a.submission_path)
m = ans.merge(sub, on=ans.columns[0], suffixes=("", "_p"))
print(json.dumps({"score": float((m.iloc[:, 1] == m.iloc[:, 2]).mean()), "is_lower_better": False}))
'''


def _refused(res, home: Path) -> str:
    """The one-line refusal, and nothing stored: no run, no environment, no sandbox run."""
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert res.returncode != 0, (res.stdout[-500:], res.stderr[-1500:])
    assert len(lines) == 1 and lines[0].startswith("error: no sandbox isolation here:"), res.stderr[-1500:]
    line = lines[0]
    assert "no user namespaces for this user" in line and "bubblewrap cannot make its namespaces here" in line
    for how in ("apt-get install -y bubblewrap", "user.max_user_namespaces", "--sandbox-backend docker",
                "--isolation none"):
        assert how in line, how
    assert "Traceback" not in res.stderr
    db = home / "sandmle.db"
    if db.exists():
        with sqlite3.connect(db) as con:
            counts = {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
                      for t in ("runs", "environments", "sandbox_runs", "trajectories")}
        assert counts == {"runs": 0, "environments": 0, "sandbox_runs": 0, "trajectories": 0}, counts
    return line


def _paper_task(where: Path) -> Path:
    task = where / "tiny-paper"
    public = task / "prepared" / "public"
    shutil.copytree(TINY / "public", public)
    shutil.copy(TINY / "private" / "answers.csv", public / "answer.csv")
    (public / "evaluator.py").write_text(EVALUATOR)
    return task


def test_isolation_probed_as_absent_refuses_agent_code_generators_and_evaluators(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    _refused(sandmle(home, "sandbox", "run", "--", "python", "-c", "print(1)"), home)
    _refused(sandmle(home, "rollout", "--env", str(TINY), "--policy", "scripted", "--scaffold", "oneshot"), home)
    _refused(sandmle(home, "eval", "--policy", "scripted", "--scaffold", "oneshot", "--envs", str(TINY)), home)
    _refused(sandmle(home, "envs", "add", "--seed", "forest-cover", "--program",
                     str(TINY / "generator.py")), home)
    _refused(sandmle(home, "envs", "import", str(_paper_task(tmp_path))), home)
    # the environment variable and the option say "auto" as plainly as the default does
    _refused(sandmle(home, "sandbox", "run", "--isolation", "auto", "--", "true"), home)
    # asking for one kind by name that cannot be had: refused too
    res = sandmle(home, "sandbox", "run", "--isolation", "bwrap", "--", "true")
    assert res.returncode != 0 and "error: bubblewrap is missing or cannot make namespaces here" in res.stderr


def test_doctor_says_runs_are_refused_where_nothing_can_confine_them(tmp_path):
    res = sandmle(tmp_path, "doctor", "--json")
    checks = {c["name"]: c for c in json.loads(res.stdout)}
    iso = checks["sandbox: isolation"]
    assert res.returncode == 1 and not iso["ok"] and not iso["optional"]
    assert iso["detail"].startswith("auto: no sandbox isolation here") and "refusing" in iso["detail"]
    assert "apt-get install -y bubblewrap" in iso["fix"]
    assert "refused" in checks["sandbox: namespaces"]["detail"]


def test_isolation_none_by_name_runs_and_every_record_says_unisolated(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    res = sandmle(home, "sandbox", "run", "--isolation", "none", "--json", "--", "python", "-c", "print(6 * 7)")
    assert res.returncode == 0, res.stderr[-1500:]
    out = json.loads(res.stdout)
    assert out["stdout_tail"] == "42\n" and out["isolation"]["mode"] == "none"
    assert out["isolation"]["unisolated"] is True
    assert out["warnings"][0].startswith("unisolated (isolation = none, asked for by name)")
    shown = sandmle(home, "sandbox", "runs", "show", out["run_id"], "--json")
    row = json.loads(shown.stdout)
    assert row["isolation"]["unisolated"] is True and row["warnings"][0].startswith("unisolated")
    # the settings' key does the same; the eval run's record says it too
    env = {"SANDMLE_SANDBOX__ISOLATION": "none"}
    ev = sandmle(home, "eval", "--policy", "scripted", "--scaffold", "oneshot", "--envs", str(TINY), "--json",
                 env=env)
    assert ev.returncode == 0, ev.stderr[-1500:]
    run_id = json.loads(ev.stdout)["run_id"]
    run = json.loads(sandmle(home, "runs", "show", run_id, "--json").stdout)
    assert run["config"]["isolation"] == "unisolated"
    doctor = {c["name"]: c for c in json.loads(sandmle(home, "doctor", "--json", env=env).stdout)}
    assert not doctor["sandbox: isolation"]["ok"] and "UNISOLATED" in doctor["sandbox: isolation"]["detail"]


def test_isolated_runs_say_nothing_of_the_kind(store):
    """Where isolation can be had (this machine), auto takes it: nothing says unisolated."""
    from engine.sandbox import get_backend
    from engine.sandbox.features import bwrap_works, detect

    if not (detect().namespaces or bwrap_works()):
        pytest.skip("this machine has no isolation (the refusal is tested above)")
    with get_backend("local", store=store, warm=False) as backend, backend.open() as ws:
        r = ws.run(["true"])
    assert r.ok and r.isolation["unisolated"] is False and r.isolation["mode"] in ("jail", "bwrap")
    assert not any("unisolated" in w for w in r.warnings) and backend.isolation_note in ("jail", "bwrap")


async def test_the_workbench_status_line_says_unisolated(store):
    from engine.config import Settings
    from workbench.app import Workbench
    from workbench.widgets.nav_bar import NavBar

    for isolation, shown in (("none", True), ("auto", False)):
        settings = Settings()
        settings.sandbox.isolation = isolation  # type: ignore[assignment]
        app = Workbench(store=store, settings=settings)
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            bar = app.screen.query_one(NavBar)
            text = str(bar.render())
            assert ("UNISOLATED" in text) is shown, text
            assert len(text) <= 80
