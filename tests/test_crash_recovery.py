"""Concurrency and crashes leave nothing half-done: two synths with one RNG seed at once, kill -9 of a synth and of
an eval, then `doctor --deep`, `runs resume` and a clean state. Everything goes through real `sandmle` processes."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import DATA, ROOT

SEED = "tabular-binary-manufacturing"


def _sandmle(home: Path, *args: str) -> subprocess.Popen:
    env = {**os.environ, "SANDMLE_HOME": str(home), "PYTHONPATH": str(ROOT), "DOCKER_HOST": "unix:///nonexistent"}
    return subprocess.Popen([sys.executable, "-m", "workbench", *args], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _run(home: Path, *args: str, timeout: float = 600) -> tuple[int, str, str]:
    proc = _sandmle(home, *args)
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err


def _peek(home: Path, sql: str) -> list[tuple]:
    """Read the store without opening a Store (which would already repair what a crash left)."""
    conn = sqlite3.connect(f"file:{home / 'sandmle.db'}?mode=ro", uri=True, timeout=30)
    try:
        return conn.execute(sql).fetchall()
    except sqlite3.OperationalError:  # the schema is not there yet
        return []
    finally:
        conn.close()


def _wait_for(predicate, what: str, proc: subprocess.Popen, timeout: float = 240) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        assert proc.poll() is None, f"ended before {what}: {proc.communicate()[1][-2000:]}"
        if predicate():
            return
        time.sleep(0.05)
    pytest.fail(f"never saw {what}")


def _kill9(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL


def _deep(home: Path, *extra: str) -> tuple[int, dict]:
    code, out, err = _run(home, "doctor", "--deep", "--json", *extra)
    return code, json.loads(out)


def _mounted_under(path: Path) -> list[str]:
    return [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines()
            if line.split()[1].startswith(str(path))]


@pytest.fixture
def seeded_home(home):
    code, _, err = _run(home, "seeds", "list")  # the first command on an empty store loads the shipped seeds
    assert code == 0, err
    return home


@pytest.mark.slow
def test_two_synths_with_the_same_rng_seed_at_once(seeded_home):
    home = seeded_home
    procs = [_sandmle(home, "synth", "--seed", SEED, "--count", "2", "--rng-seed", "5", "--workers", "1",
                     "--backend", "procedural", "--json")
             for _ in range(2)]
    results = [(p.wait(timeout=900), *p.communicate()) for p in procs]
    made = []
    for code, out, err in results:
        if code == 0:
            made += [e["env_id"] for e in json.loads(out)["environments"] if e["status"] == "verified"]
        else:  # a run may fail, but only with one line
            assert len(err.strip().splitlines()) == 1 and err.startswith("error: "), err
    assert any(code == 0 for code, _, _ in results)
    assert len(made) == len(set(made)) >= 2
    rows = _peek(home, "SELECT id, status, dir FROM environments")
    assert {r[0] for r in rows if r[1] == "verified"} == set(made)
    assert all(Path(d).name == i for i, _, d in rows)  # each env in its own folder, named by its id
    code, report = _deep(home)
    assert code == 0 and report["problems"] == [], report


@pytest.mark.slow
def test_kill9_of_synth_then_doctor_deep_and_any_command_leave_a_clean_state(seeded_home):
    home = seeded_home
    proc = _sandmle(home, "synth", "--seed", SEED, "--count", "3", "--workers", "1", "--backend", "procedural")
    builds = home / "envs"

    def mid_build() -> bool:
        running = _peek(home, "SELECT COUNT(*) FROM sandbox_runs WHERE status = 'running'")
        return bool(running and running[0][0]) and any(builds.glob(".build-*"))

    _wait_for(mid_build, "a sandbox run inside an environment build", proc)
    _kill9(proc)
    assert _peek(home, "SELECT status FROM runs WHERE kind = 'synthesis'") == [("running",)]

    code, report = _deep(home)
    assert code == 1
    kinds = {p["check"] for p in report["problems"]}
    assert {"stuck runs", "leftover build folders", "pending environments"} <= kinds, report
    assert all(not p["repaired"] for p in report["problems"])

    code, out, err = _run(home, "envs", "list", "--json")  # any command repairs what a crash left
    assert code == 0, err
    assert all(e["status"] in ("verified", "rejected") for e in json.loads(out))
    assert _peek(home, "SELECT status FROM runs WHERE kind = 'synthesis'") == [("dead",)]
    assert _peek(home, "SELECT COUNT(*) FROM sandbox_runs WHERE status = 'running'") == [(0,)]
    assert not list(builds.glob(".build-*"))
    stored = {Path(d).resolve() for (d,) in _peek(home, "SELECT dir FROM environments")}
    answers = {p.parent.parent.resolve() for p in builds.rglob("answers.csv")}
    assert answers <= stored  # no private answers outside a stored environment
    assert not list((home / "workspaces").glob("ws-*")) and not _mounted_under(home)
    code, report = _deep(home)
    assert code == 0 and report["problems"] == [], report


@pytest.mark.slow
def test_doctor_deep_repair_says_what_it_fixed(seeded_home, tmp_path):
    home = seeded_home
    # what a killed process leaves: a run and a sandbox run still 'running', a workspace, a build folder
    child = ("import sys, os, tempfile\nfrom pathlib import Path\nfrom store import Store\n"
             "s = Store(sys.argv[1] + '/sandmle.db')\n"
             "s.runs.create('synthesis', {})\n"
             "s.sandbox.start({'id': 'sbx-left', 'backend': 'local', 'command': 'true'})\n"
             "tag = f\"{os.getpid()} {Path(f'/proc/{os.getpid()}/stat').read_text().rsplit(')', 1)[1].split()[19]}\"\n"
             "for d in (Path(sys.argv[1]) / 'workspaces' / 'ws-left', Path(sys.argv[1]) / 'envs' / '.build-x-1'):\n"
             "    (d / 'private').mkdir(parents=True)\n"
             "    (d / 'private' / 'answers.csv').write_text('id,y\\n1,0\\n')\n"
             "(Path(sys.argv[1]) / 'workspaces' / 'ws-left.owner').write_text(tag)\n"
             "(Path(sys.argv[1]) / 'envs' / '.build-x-1' / '.owner').write_text(tag)\n")
    subprocess.run([sys.executable, "-c", child, str(home)], cwd=ROOT, check=True, timeout=60,
                   env={**os.environ, "PYTHONPATH": str(ROOT)})
    (home / "envs" / "orphan-env" / "private").mkdir(parents=True)
    (home / "envs" / "orphan-env" / "private" / "answers.csv").write_text("id,y\n1,0\n")

    code, report = _deep(home)
    assert code == 1
    found = {(p["check"], p["subject"]) for p in report["problems"]}
    assert ("stuck runs", "sbx-left") in found
    assert ("leftover workspaces", str(home / "workspaces" / "ws-left")) in found
    assert ("leftover build folders", str(home / "envs" / ".build-x-1")) in found
    assert ("orphan folders", str(home / "envs" / "orphan-env")) in found

    code, report = _deep(home, "--repair")
    assert code == 0, report
    assert all(p["repaired"] and p["action"] for p in report["problems"]), report
    assert not list((home / "workspaces").glob("ws-left*")) and not (home / "envs" / ".build-x-1").exists()
    assert not (home / "envs" / "orphan-env").exists()
    assert _peek(home, "SELECT status FROM sandbox_runs WHERE id = 'sbx-left'") == [("dead",)]
    code, text, _ = _run(home, "doctor", "--deep")
    assert code == 0 and "deep: nothing wrong" in text


@pytest.mark.slow
def test_doctor_deep_follows_a_moved_data_dir_and_finds_a_changed_environment_file(seeded_home, tmp_path):
    code, out, err = _run(seeded_home, "synth", "--seed", SEED, "--count", "1", "--rng-seed", "2",
                            "--backend", "procedural", "--json")
    assert code == 0, err
    env_id = json.loads(out)["environments"][0]["env_id"]
    home = tmp_path / "moved"
    shutil.move(seeded_home, home)  # the user moves the data dir: rows still name the old folders
    code, report = _deep(home)
    assert code == 1
    [moved] = report["problems"]
    assert (moved["check"], moved["subject"]) == ("environment files", env_id) and "data dir moved" in moved["problem"]
    code, report = _deep(home, "--repair")  # the row is pointed at envs/<id> here, never deleted as an orphan
    assert code == 0 and report["problems"][0]["action"] == f"the row points at {home / 'envs' / env_id} now"
    train = home / "envs" / env_id / "public" / "train.csv"
    train.write_text(train.read_text().replace("\n", "\n\n", 1))
    code, report = _deep(home, "--repair")
    assert code == 1
    [problem] = report["problems"]
    assert problem["check"] == "environment files" and problem["subject"] == env_id
    assert "public/train.csv" in problem["problem"] and not problem["repaired"]


@pytest.mark.slow
def test_kill9_of_eval_then_runs_resume_finishes_the_missing_episodes_with_the_same_seeds(seeded_home):
    home = seeded_home
    tiny = str(DATA / "envs" / "tiny-tabular")
    args = ("eval", "--policy", "scripted:skill=0.5", "--scaffold", "react", "--envs", tiny, "--rng-seeds", "4",
            "--workers", "1", "--json")
    proc = _sandmle(home, *args)

    def one_done_and_one_running() -> bool:
        done = _peek(home, "SELECT COUNT(*) FROM eval_results")
        running = _peek(home, "SELECT COUNT(*) FROM sandbox_runs WHERE status = 'running'")
        return bool(done and done[0][0] >= 1 and running and running[0][0] >= 1)

    _wait_for(one_done_and_one_running, "a finished episode and one in flight", proc)
    _kill9(proc)
    [(run_id,)] = _peek(home, "SELECT id FROM runs WHERE kind = 'eval'")
    kept = _peek(home, "SELECT id, rng_seed, score FROM eval_results")
    assert 1 <= len(kept) < 4

    code, out, err = _run(home, "runs", "list", "--json")
    assert [r["status"] for r in json.loads(out) if r["id"] == run_id] == ["dead"]
    code, out, err = _run(home, "runs", "resume", run_id, "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["run_id"] == run_id and report["n_episodes"] == 4 and report["errors"] == 0
    rows = _peek(home, "SELECT id, rng_seed, score FROM eval_results ORDER BY rng_seed")
    assert sorted(r[1] for r in rows) == [0, 1, 2, 3]  # every seed once
    assert set(kept) <= set(rows)  # the episodes finished before the kill are kept as they were
    assert _peek(home, f"SELECT status FROM runs WHERE id = '{run_id}'") == [("done",)]

    # the same seeds: an uninterrupted run scores every episode the same
    code, out, err = _run(home, *args)
    assert code == 0, err
    clean = json.loads(out)
    fresh = _peek(home, f"SELECT rng_seed, score FROM eval_results WHERE run_id = '{clean['run_id']}' "
                        "ORDER BY rng_seed")
    assert fresh == [(seed, score) for _, seed, score in rows]
    assert clean["summary"] == report["summary"]
    code, deep = _deep(home)
    assert code == 0 and deep["problems"] == [], deep


def test_a_workspace_killed_while_its_tmpfs_was_mounting_is_unmounted_by_the_next_command(seeded_home):
    """The owner file sits beside the workspace (written before the mount), so a process killed between mounting
    the workspace's tmpfs and writing into it leaves nothing the next command cannot judge and remove."""
    home = seeded_home
    dead = subprocess.run([sys.executable, "-c", "from store import owners; print(owners.tag())"], cwd=ROOT,
                          capture_output=True, text=True, check=True, timeout=60).stdout.strip()
    holder = home / "workspaces" / "ws-mounting"
    holder.mkdir(parents=True)
    (home / "workspaces" / "ws-mounting.owner").write_text(dead)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "sandmle-ws", str(holder)]).returncode != 0:
        shutil.rmtree(home / "workspaces")
        pytest.skip("cannot mount a tmpfs here (not root)")
    assert _mounted_under(home) == [str(holder)] and list(holder.iterdir()) == []  # empty: killed right there

    code, report = _deep(home)
    assert code == 1 and ("leftover workspaces", str(holder)) in {(p["check"], p["subject"]) for p in report["problems"]}
    code, out, err = _run(home, "seeds", "list", "--json")  # any command clears what a crash left
    assert code == 0, err
    assert _mounted_under(home) == [] and list((home / "workspaces").iterdir()) == []
