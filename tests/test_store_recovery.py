"""Rows left `running` by a killed process: every row records its owner (pid + start time + host), opening a
store marks those whose owner is gone as `dead`, and `sandbox runs log --follow` ends on one. The migration that
brought the owners keeps every row of an older store."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time

from conftest import ROOT
from store import Store, owners
from store.migrations import LATEST, MIGRATIONS

#: a child that opens the store, starts a run and a sandbox run, prints their ids and waits to be killed
CHILD = """
import sys, time
from store import Store
s = Store(sys.argv[1])
run = s.runs.create("eval", {"envs": []})
s.sandbox.start({"id": "sbx-" + run, "backend": "local", "command": "python x.py", "log_path": sys.argv[2]})
print(run, flush=True)
time.sleep(600)
"""


def _owner_child(db, log):
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(db), str(log)], cwd=ROOT, stdout=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    return proc, proc.stdout.readline().strip()


def test_rows_record_their_owner(store):
    run_id = store.runs.create("bench")
    store.sandbox.start({"id": "sbx-own", "backend": "local", "command": "true"})
    me = owners.owner()
    for row in (store.runs.get(run_id), store.sandbox.get("sbx-own")):
        assert (row["pid"], row["pid_start"], row["host"]) == (os.getpid(), me["pid_start"], me["host"])
    assert me["pid_start"] == owners.start_time(os.getpid()) and me["pid_start"].isdigit()
    assert not owners.gone(store.runs.get(run_id))
    # a reused pid is not the owner: same pid, another start time
    assert owners.gone({**store.runs.get(run_id), "pid_start": "1"})
    # rows of another host, or without an owner, are never judged
    assert not owners.gone({"pid": 2**22 + 7, "host": "elsewhere", "pid_start": "1"})
    assert not owners.gone({"pid": None, "host": me["host"]})


def test_opening_the_store_marks_rows_of_a_killed_process_dead(home, tmp_path):
    db = home / "sandmle.db"
    Store(db).close()
    proc, run_id = _owner_child(db, tmp_path / "x.log")
    with Store(db) as s:
        assert s.recovered == {"runs": [], "sandbox_runs": []}  # the owner is alive
        mine = s.runs.create("bench")
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    with Store(db) as s:
        assert s.recovered == {"runs": [run_id], "sandbox_runs": [f"sbx-{run_id}"]}
        run, sbx = s.runs.get(run_id), s.sandbox.get(f"sbx-{run_id}")
        assert run["status"] == "dead" and run["ended_at"] and f"pid {proc.pid}" in run["error"]
        assert sbx["status"] == "dead" and sbx["ended_at"] and "ended before the run did" in sbx["warnings"][-1]
        assert s.runs.get(mine)["status"] == "running"  # this process is alive
    with Store(db) as s:
        assert s.recovered == {"runs": [], "sandbox_runs": []}  # done once


def test_follow_ends_when_the_runs_process_is_killed(home, tmp_path):
    db = home / "sandmle.db"
    log = tmp_path / "x.log"
    log.write_text("first line\n")
    Store(db).close()
    proc, run_id = _owner_child(db, log)
    follow = subprocess.Popen([sys.executable, "-m", "workbench", "sandbox", "runs", "log", f"sbx-{run_id}",
                               "--follow"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env={**os.environ, "SANDMLE_HOME": str(home), "PYTHONPATH": str(ROOT)})
    assert follow.stdout.readline() == "first line\n"  # it follows the live run
    time.sleep(1)
    assert follow.poll() is None
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    out, err = follow.communicate(timeout=30)
    assert follow.returncode == 0 and out == ""
    assert f"[sbx-{run_id} · dead · exit None]" in err


def test_migration_keeps_rows_and_references_of_a_version_1_store(home):
    db = home / "sandmle.db"
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("CREATE TABLE schema_version (version INTEGER PRIMARY KEY, description TEXT NOT NULL, "
                 "applied_at TEXT NOT NULL)")
    for sql in MIGRATIONS[0][2]:
        conn.execute(sql)
    conn.execute("INSERT INTO schema_version VALUES (1, 'initial schema', '2026-01-01')")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("INSERT INTO runs (id, kind, status, pid, host, created_at) VALUES "
                 "('grpo-1', 'grpo', 'stopped', 12, 'h', '2026-01-01')")
    conn.execute("INSERT INTO metrics VALUES ('grpo-1', 1, 'loss', 0.5, '2026-01-01')")
    conn.execute("INSERT INTO checkpoints (run_id, step, path, sha256, created_at) VALUES "
                 "('grpo-1', 1, '/x', 'ab', '2026-01-01')")
    conn.execute("INSERT INTO eval_results (run_id, policy, scaffold, valid, created_at) VALUES "
                 "('grpo-1', 'p', 'react', 1, '2026-01-01')")
    conn.close()
    with Store(db) as s:
        assert s.schema_version() == LATEST and not s.created
        row = s.runs.get("grpo-1")
        assert (row["status"], row["pid"], row["host"], row["pid_start"]) == ("stopped", 12, "h", None)
        assert s.runs.metrics("grpo-1") == {"loss": [(1, 0.5)]} and len(s.runs.checkpoints("grpo-1")) == 1
        assert s.runs.eval_results("grpo-1")[0]["error"] is None
        assert s.query("PRAGMA foreign_key_check") == [] and s.integrity_check() == "ok"
        s.runs.finish("grpo-1", "dead")  # the new status is allowed
        # foreign keys are on again: deleting the run cascades to its metrics and checkpoints
        s.execute("DELETE FROM runs WHERE id = 'grpo-1'")
        assert s.runs.metrics("grpo-1") == {} and s.runs.checkpoints("grpo-1") == []
    with Store(home / "fresh.db") as fresh:
        assert fresh.created and fresh.recovered == {"runs": [], "sandbox_runs": []}
