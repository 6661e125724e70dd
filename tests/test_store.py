"""The SQLite store: schema, transactions, repositories, crash safety."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import ROOT
from store.trajectories import Trajectory, Turn


def _seed_row(seed_id="s1", **over):
    row = dict(id=seed_id, title="T", modality="tabular", task_type="binary", metric="roc_auc", lower_is_better=0,
               id_column="id", target_columns=["y"], columns=[{"name": "id", "dtype": "int", "role": "id"}],
               train_size=10, test_size=5, description="d", content_hash="h")
    row.update(over)
    return row


def test_schema_version_wal_and_foreign_keys(store):
    from store.migrations import LATEST

    assert store.schema_version() == LATEST >= 1
    assert store.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store.conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    tables = set(store.db.table_names())
    for t in ("seeds", "environments", "env_files", "leaderboard", "synthesis_attempts", "sandbox_runs",
              "trajectories", "turns", "runs", "metrics", "checkpoints", "eval_results", "schema_version"):
        assert t in tables
    # every list the UI shows has an index
    indexes = {r["name"] for r in store.query("SELECT name FROM sqlite_master WHERE type='index'")}
    for name in ("idx_envs_status", "idx_sandbox_started", "idx_runs_kind_created", "idx_traj_run"):
        assert name in indexes


def test_reopen_does_not_migrate_twice(home):
    from store import Store

    with Store(home / "a.db") as s1:
        v = s1.schema_version()
    with Store(home / "a.db") as s2:
        assert s2.schema_version() == v
        assert s2.db["schema_version"].count == v


def test_newer_schema_is_a_clear_error(home):
    from store import Store, StoreError

    with Store(home / "b.db") as s:
        s.execute("INSERT INTO schema_version VALUES (999, 'future', 'now')")
    with pytest.raises(StoreError, match="newer than this sandmle"):
        Store(home / "b.db")


def test_transaction_rolls_back_everything(store):
    with pytest.raises(RuntimeError):
        with store.transaction():
            store.seeds.upsert(_seed_row("a"))
            store.seeds.upsert(_seed_row("b"))
            raise RuntimeError("boom")
    assert store.seeds.count() == 0


def test_seed_upsert_keeps_enabled_and_tags(store):
    store.seeds.upsert(_seed_row("a", tags=["x"]))
    store.seeds.set_enabled("a", False)
    store.seeds.tag("a", "y")
    store.seeds.upsert(_seed_row("a", title="New", tags=["z"]))
    seed = store.seeds.get("a")
    assert seed["title"] == "New"
    assert seed["enabled"] is False
    assert seed["tags"] == ["x", "y", "z"]
    assert store.seeds.tag("a", "y", remove=True) == ["x", "z"]


def test_environment_with_files_and_leaderboard_is_one_unit(store):
    from store import NotFound

    store.seeds.upsert(_seed_row("s"))
    env = dict(id="e1", seed_id="s", title="E", modality="tabular", task_type="binary", metric="roc_auc",
               lower_is_better=0, id_column="id", target_columns=["y"], status="verified")
    store.envs.add(env, files=[{"path": "public/train.csv", "role": "public", "sha256": "ab", "size": 3}],
                   leaderboard=[{"name": "strong", "score": 0.9}, {"name": "trivial", "score": 0.5}])
    assert [r["name"] for r in store.envs.leaderboard("e1")] == ["strong", "trivial"]
    # a duplicate id fails as a whole: no extra files or leaderboard rows
    with pytest.raises(Exception):
        store.envs.add(env, leaderboard=[{"name": "x", "score": 1.0}])
    assert len(store.envs.leaderboard("e1")) == 2
    store.envs.delete("e1")
    assert store.db["env_files"].count == 0 and store.db["leaderboard"].count == 0  # cascade
    with pytest.raises(NotFound):
        store.envs.get("e1")


def test_runs_metrics_checkpoints(store):
    run = store.runs.create("grpo", {"lr": 1e-5}, name="t")
    store.runs.log_metrics(run, 0, {"reward_mean": 0.1, "loss": 2.0})
    store.runs.log_metrics(run, 1, {"reward_mean": 0.3})
    store.runs.log_metrics(run, 1, {"reward_mean": 0.4})  # a step logged twice replaces, never duplicates
    assert store.runs.metrics(run)["reward_mean"] == [(0, 0.1), (1, 0.4)]
    assert store.runs.last_step(run) == 1
    store.runs.add_checkpoint(run, 1, "/x/step-1", "abc")
    assert store.runs.latest_checkpoint(run)["step"] == 1
    store.runs.finish(run, "done", summary={"best": 0.4})
    got = store.runs.get(run[:8])  # unique prefix
    assert got["status"] == "done" and got["summary"] == {"best": 0.4} and got["config"] == {"lr": 1e-5}
    with pytest.raises(ValueError):
        store.runs.create("nonsense")


def test_trajectory_and_turns_atomic(store):
    turns = [Turn("assistant", "hi", token_ids=[1, 2], logprobs=[-0.1, -0.2], well_formed=True), Turn("tool", "obs")]
    store.trajectories.add(Trajectory(id="t1", policy="scripted", scaffold="react", reward=0.7, turns=turns,
                                      reward_breakdown={"valid": 0.2, "medal": 0.5}, sandbox_s=1.5,
                                      state={"steps": 1}, error="boom"))
    t = store.trajectories.get("t1")
    assert t.n_turns == 2 and t.turns == turns and t.reward_breakdown == {"valid": 0.2, "medal": 0.5}
    assert (t.sandbox_s, t.state, t.error, t.reward) == (1.5, {"steps": 1}, "boom", 0.7)
    assert [r.id for r in store.trajectories.list()] == ["t1"] and store.trajectories.list()[0].turns == []
    with pytest.raises(Exception):  # a turn without text breaks the NOT NULL constraint after the row went in
        store.trajectories.add(Trajectory(id="t2", policy="p", scaffold="react",
                                          turns=[Turn("assistant", "a"), Turn("assistant", None)]))
    assert store.db["trajectories"].count == 1  # the failed one left nothing


WRITER = r"""
import sys, itertools
from store import Store
from store.trajectories import Trajectory, Turn
s = Store(sys.argv[1])
print("ready", flush=True)
for i in itertools.count():
    s.trajectories.add(Trajectory(id=f"t{i}", policy="p", scaffold="react",
                                  turns=[Turn("assistant", "x" * 2000) for _ in range(50)]))
"""


def test_sigkill_mid_write_leaves_store_consistent(home):
    from store import Store

    db = home / "kill.db"
    Store(db).close()
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(db)], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    time.sleep(1.5)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    with Store(db) as s:
        assert s.integrity_check() == "ok"
        n = s.db["trajectories"].count
        assert n > 0
        # every stored trajectory has all its 50 turns: no half-written unit of work
        counts = s.query("SELECT trajectory_id, COUNT(*) AS n FROM turns GROUP BY trajectory_id")
        assert len(counts) == n and all(c["n"] == 50 for c in counts)


def test_concurrent_writers_never_hit_locked(home):
    from store import Store

    db = home / "conc.db"
    Store(db).close()
    code = (
        "import sys\nfrom store import Store\ns = Store(sys.argv[1])\n"
        "for i in range(60):\n    r = s.runs.create('bench', {'w': sys.argv[2]})\n    s.runs.log_metrics(r, i, {'x': i})\n"
    )
    procs = [subprocess.Popen([sys.executable, "-c", code, str(db), str(w)], cwd=ROOT, stderr=subprocess.PIPE, text=True)
             for w in range(4)]
    errs = [p.communicate(timeout=120)[1] for p in procs]
    assert all(p.returncode == 0 for p in procs), errs
    with Store(db) as s:
        assert s.db["runs"].count == 240
