"""`sandmle sandbox run` and `sandmle sandbox runs list|show|log`, through the real CLI."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from conftest import ROOT


def test_run_prints_a_json_result_and_records_it(run_cli, tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "data.txt").write_text("seven\n")
    r = run_cli("sandbox", "run", "--workdir", str(tmp_path / "src"), "--timeout", "20", "--json", "--",
                "python", "-c", "print(open('data.txt').read().strip().upper())")
    assert r.code == 0, r.err
    data = r.json()
    assert set(data) >= {"run_id", "exit_code", "status", "wall_s", "cpu_s", "peak_rss_mb", "stdout_tail",
                         "stderr_tail", "log_path"}
    assert data["status"] == "ok" and data["exit_code"] == 0 and data["stdout_tail"] == "SEVEN\n"
    listed = run_cli("sandbox", "runs", "list", "--json").json()
    assert [row["id"] for row in listed] == [data["run_id"]]
    shown = run_cli("sandbox", "runs", "show", data["run_id"][:10])
    assert shown.code == 0 and "status       ok" in shown.out and "isolation" in shown.out
    log = run_cli("sandbox", "runs", "log", data["run_id"])
    assert "SEVEN" in log.out


def test_run_failure_statuses_and_exit_code(run_cli):
    r = run_cli("sandbox", "run", "--timeout", "1", "--json", "--", "python", "-c", "while True: pass")
    assert r.code == 1 and r.json()["status"] == "timeout"
    r = run_cli("sandbox", "run", "--", "sh", "-c", "echo oops >&2; exit 4")
    assert r.code == 1 and "oops" in r.err and "error · exit 4" in r.err


def test_user_mistakes_are_one_line_errors(run_cli, tmp_path):
    r = run_cli("sandbox", "run", "--memory-mb", "512", "--", "true")
    assert r.code == 2 and "Invalid value for '--memory-mb': 512 is not in the range x>=1024" in r.err
    r = run_cli("sandbox", "run", "--env", "nope", "--", "true")
    assert r.code != 0 and "nope" in r.err and "Traceback" not in r.err
    r = run_cli("sandbox", "run", "--workdir", str(tmp_path), "--", "true")  # holds the data dir itself
    assert r.code != 0 and "workspaces" in r.err
    r = run_cli("sandbox", "runs", "show", "sbx-missing")
    assert r.code != 0 and "no sandbox run" in r.err


def test_log_follow_streams_a_running_run(home, tmp_path):
    """A run in one process, `runs log --follow` in another: the follower sees output while the run goes on (the
    run ticks until the test drops a `stop` file into its workspace), then the end."""
    env = {"SANDMLE_HOME": str(home), "PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}
    code = ("import os, time\ni = 0\nwhile not os.path.exists('stop'):\n    print('tick', i, flush=True)\n"
            "    i += 1\n    time.sleep(0.1)\nprint('stopped', flush=True)\n")
    runner = subprocess.Popen([sys.executable, "-m", "workbench", "sandbox", "run", "--timeout", "120", "--json",
                               "--", "python", "-c", code], env=env, stdout=subprocess.PIPE, text=True, cwd=ROOT)
    from store import Store

    row = None
    deadline = time.monotonic() + 60
    while row is None and time.monotonic() < deadline:
        with Store(home / "sandmle.db") as s:
            rows = s.sandbox.list(status="running")
            row = rows[0] if rows else None
        time.sleep(0.05)
    assert row, "the run never showed up as running"
    follow = subprocess.Popen([sys.executable, "-m", "workbench", "sandbox", "runs", "log", row["id"], "--follow"],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    first = follow.stdout.readline()  # arrives while the run is still going
    assert first.startswith("tick"), first
    (Path(row["workdir"]) / "stop").write_text("")
    rest, err = follow.communicate(timeout=60)
    result = json.loads(runner.communicate(timeout=60)[0])
    assert follow.returncode == 0 and result["status"] == "ok"
    lines = [first.strip()] + rest.splitlines()
    assert lines[-1] == "stopped" and all(line.startswith("tick") for line in lines[:-1])
    assert f"[{row['id']} · ok · exit 0]" in err


def test_run_through_the_local_pool_records_every_job(run_cli):
    r = run_cli("sandbox", "run", "--executor", "local", "--repeat", "3", "--workers", "2", "--json", "--",
                "python", "-c", "print('x' * 3)")
    assert r.code == 0, r.err
    results = r.json()
    assert [x["status"] for x in results] == ["ok"] * 3 and {x["stdout_tail"] for x in results} == {"xxx\n"}
    rows = run_cli("sandbox", "runs", "list", "--json").json()
    assert {row["id"] for row in rows} == {x["run_id"] for x in results}
    assert {row["executor"] for row in rows} == {"local"}


def test_a_command_line_longer_than_one_argument_may_be(run_cli):
    """`sandbox run -- echo $(seq 1 20000)`: ~110 KB of arguments (one argv string is capped at 128 KB)."""
    numbers = [str(i) for i in range(1, 20001)]
    res = run_cli("sandbox", "run", "--json", "--", "echo", *numbers)
    assert res.code == 0, res.err
    out = res.json()
    assert out["status"] == "ok" and out["stdout_tail"].rstrip().endswith("19999 20000")


def test_warm_that_cannot_be_honoured_says_why(run_cli, tmp_path):
    """`--warm` on a command the warm worker does not run (`python -c`, a file that is not in the workspace, a
    non-Python command) runs cold and says so in its warnings; `--workdir DIR -- python FILE` runs warm."""
    from engine.sandbox.features import detect

    probe = "import sys; print('pandas' in sys.modules)"
    cases = [(["python", "-c", probe], "has options"), (["python", "step.py"], "step.py is not a file in the workspace"),
             (["sh", "-c", "true"], "not a Python command")]
    for argv, why in cases:
        data = run_cli("sandbox", "run", "--warm", "--json", "--", *argv).json()
        assert data["isolation"]["warm"] is False
        said = [w for w in data["warnings"] if w.startswith("--warm:")]
        assert len(said) == 1 and why in said[0] and said[0].endswith("ran cold"), data["warnings"]
        assert run_cli("sandbox", "runs", "show", data["run_id"], "--json").json()["warnings"] == data["warnings"]
    assert run_cli("sandbox", "run", "--warm", "--json", "--", "python", "-c", probe).json()["stdout_tail"] == \
        "False\n"
    cold = run_cli("sandbox", "run", "--cold", "--json", "--", "python", "-c", probe).json()
    assert not any(w.startswith("--warm") for w in cold["warnings"])  # not asked: nothing to say
    if not detect().namespaces:
        return  # no warm worker here: what it says instead is "warm worker unavailable"
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "step.py").write_text(probe + "\n")
    warm = run_cli("sandbox", "run", "--workdir", str(tmp_path / "src"), "--warm", "--json", "--", "python",
                   "step.py").json()
    assert warm["isolation"]["warm"] is True and warm["stdout_tail"] == "True\n" and warm["warnings"] == []
