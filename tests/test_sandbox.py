"""The local backend's interface: runs, files, persistence across steps, records in the store, warm/cold."""

from __future__ import annotations

import pytest

from engine.errors import SandboxError
from engine.sandbox import Limits, RunMeta, get_backend
from engine.sandbox.features import detect

from sandbox_cases import check_files_in_and_out, make_host

needs_ns = pytest.mark.skipif(not detect().namespaces, reason="needs namespaces (root)")


@pytest.fixture
def backend(store):
    b = get_backend("local", store=store, limits=Limits(timeout_s=30, max_disk_mb=64))
    yield b
    b.close()


def test_workspace_persists_files_across_steps(backend, tmp_path):
    src = tmp_path / "public"
    src.mkdir()
    (src / "train.csv").write_text("a,b\n1,2\n")
    with backend.open(src) as ws:
        r1 = ws.run_python("open('note.txt','w').write(open('train.csv').read().upper())")
        assert r1.status == "ok", r1.stderr_tail
        r2 = ws.run(["python", "-c", "print(open('note.txt').read().strip())"])
        assert r2.status == "ok" and r2.stdout_tail.strip() == "A,B\n1,2"
        assert ws.read_file("note.txt") == b"A,B\n1,2\n"
        ws.write_file("sub/x.txt", b"host wrote this")
        r3 = ws.run("cat sub/x.txt && echo more >> sub/x.txt")  # a shell string; the run may change host files
        assert r3.status == "ok" and r3.stdout_tail == "host wrote this"
        assert ws.read_file("sub/x.txt") == b"host wrote thismore\n"
        with pytest.raises(SandboxError):
            ws.read_file("../../etc/passwd")
    assert not ws.path.exists()


def test_files_in_and_out(backend, tmp_path):
    host = make_host(tmp_path, tmp_path / "db", tmp_path)
    host.close()  # only its public files are used here
    with backend.open(host.env_dir / "public") as ws:
        check_files_in_and_out(ws, tmp_path / "out")


def test_error_exit_code_and_store_row(backend, store):
    with backend.open() as ws:
        r = ws.run_python("import sys\nprint('out')\nsys.stderr.write('bad thing\\n')\nsys.exit(3)",
                          meta=RunMeta(executor="test"))
    assert (r.status, r.exit_code) == ("error", 3)
    assert r.stdout_tail == "out\n" and "bad thing" in r.stderr_tail
    row = store.sandbox.get(r.run_id)
    assert row["status"] == "error" and row["exit_code"] == 3 and row["executor"] == "test"
    assert row["limits"]["timeout_s"] == 30
    assert row["ended_at"] is not None and row["wall_s"] > 0
    log = open(r.log_path).read()
    assert "bad thing" in log and "out" in log


def test_exception_is_an_error_with_traceback(backend):
    with backend.open() as ws:
        for warm in (False, True):
            r = ws.run_python("raise ValueError('nope')", warm=warm)
            assert r.status == "error" and r.exit_code == 1
            assert "ValueError: nope" in r.stderr_tail


@needs_ns
def test_warm_is_default_for_python_and_fresh_each_run(backend, store):
    with backend.open() as ws:
        first = ws.run_python("import sys\nsys.modules['numpy'].LEAK = 1\nprint('pandas' in sys.modules)")
        second = ws.run_python("import numpy\nprint(hasattr(numpy, 'LEAK'))")
    assert first.isolation["warm"] is True and first.stdout_tail.strip() == "True"  # imported before the run
    assert second.stdout_tail.strip() == "False"  # nothing leaks between runs
    assert store.sandbox.get(first.run_id)["isolation"]["warm"] is True


@needs_ns
def test_warm_and_cold_give_the_same_answers(backend):
    code = ("import os, sys, numpy as np\nnp.random.seed(0)\n"
            "print(os.getuid(), os.getcwd() == os.environ['HOME'], sys.argv[0], round(float(np.random.rand()), 6))")
    with backend.open() as ws:
        warm = ws.run_python(code, warm=True)
        cold = ws.run_python(code, warm=False)
    assert warm.stdout_tail == cold.stdout_tail
    assert warm.stdout_tail.startswith("65534 True _step.py")


def test_without_isolation_warm_falls_back_to_cold_with_warnings(store):
    with get_backend("local", store=store, isolation="none") as backend, backend.open() as ws:
        r = ws.run_python("print('hi')")
    assert r.status == "ok" and r.stdout_tail == "hi\n"
    assert r.isolation["warm"] is False and r.isolation["namespaces"] is False
    assert any("warm worker unavailable" in w for w in r.warnings)
    assert any("NOT hidden" in w for w in r.warnings)
    assert store.sandbox.get(r.run_id)["warnings"] == r.warnings


def test_unknown_backend_and_bad_source(store, tmp_path):
    with pytest.raises(SandboxError, match="unknown sandbox backend"):
        get_backend("nope")
    with get_backend("local", store=store, warm=False) as b, pytest.raises(SandboxError, match="not a folder"):
        b.open(tmp_path / "missing")


@needs_ns
def test_workspace_of_a_killed_process_is_swept(tmp_path):
    """A process killed before it closed its workspace leaves a mounted tmpfs; the next backend removes it."""
    import os
    import subprocess
    import sys

    from conftest import ROOT

    code = (f"import os\nfrom engine.sandbox import get_backend\n"
            f"ws = get_backend('local', root={str(tmp_path)!r}, warm=False).open(None)\n"
            "print(ws.holder, flush=True)\nos.kill(os.getpid(), 9)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT).stdout.strip()
    holder = __import__("pathlib").Path(out)
    assert holder.is_dir() and os.path.ismount(holder)
    with get_backend("local", root=tmp_path, warm=False):
        assert not holder.exists() and not os.path.ismount(holder)


@needs_ns
def test_warm_worker_that_dies_is_restarted(backend):
    with backend.open() as ws:
        first = ws.run_python("print(1)")
        worker = backend.warm_worker()
        worker.proc.kill()
        worker.proc.wait()
        second = ws.run_python("print(2)")
    assert first.isolation["warm"] and second.status == "ok" and second.stdout_tail == "2\n"
    assert second.isolation["warm"] is True and backend.warm_worker() is not worker  # a fresh worker took over


@needs_ns
def test_one_backend_serves_concurrent_threads(backend, store):
    from concurrent.futures import ThreadPoolExecutor

    workspaces = [backend.open() for _ in range(6)]
    try:
        def job(i):
            return workspaces[i].run_python(f"import time\ntime.sleep(0.2)\nprint({i} * 3)")

        with ThreadPoolExecutor(6) as pool:
            results = list(pool.map(job, range(6)))
    finally:
        for ws in workspaces:
            ws.close()
    assert [r.stdout_tail.strip() for r in results] == [str(i * 3) for i in range(6)]
    assert all(r.status == "ok" and r.isolation["warm"] for r in results)
    assert len({r.run_id for r in results}) == 6 and store.integrity_check() == "ok"


def test_doctor_lists_each_isolation_feature(run_cli):
    from engine.sandbox.features import bwrap_works

    checks = {c["name"]: c for c in run_cli("doctor", "--json").json()}
    for name in ("sandbox: namespaces", "sandbox: unprivileged uid", "sandbox: warm worker", "sandbox: limits",
                 "sandbox: cgroups", "sandbox: disk quota", "sandbox: bwrap"):
        assert name in checks and isinstance(checks[name]["ok"], bool)
    ns = checks["sandbox: namespaces"]
    assert ns["ok"] == (detect().namespaces or bwrap_works()) and not ns["optional"]
    assert ns["ok"] or ("NOT hidden" in ns["detail"] and ns["fix"])
    assert checks["sandbox: warm worker"]["ok"] == detect().namespaces  # it really started one
    limits = checks["sandbox: limits"]["detail"]
    assert "processes: " in limits and "memory: " in limits and "cpu time: " in limits
    if detect().cgroups["pids"]:
        assert "pids.max" in limits and checks["sandbox: cgroups"]["ok"]
    else:
        assert checks["sandbox: cgroups"]["optional"] and "systemd-run --user --scope" in checks["sandbox: cgroups"]["fix"]


@needs_ns
def test_warm_run_ends_like_a_fresh_interpreter(backend):
    """Non-daemon threads are joined and executors (joblib/loky) shut down before the run exits, as at the end of
    a normal interpreter — warm and cold alike."""
    code = ("import threading, time\nfrom joblib import Parallel, delayed\n"
            "print(sum(Parallel(n_jobs=2)(delayed(abs)(-i) for i in range(6))), flush=True)\n"
            "threading.Thread(target=lambda: (time.sleep(0.3), print('late'))).start()\n")
    with backend.open() as ws:
        for warm in (True, False):
            r = ws.run_python(code, warm=warm, limits=Limits(timeout_s=60))
            assert (r.status, r.stdout_tail) == ("ok", "15\nlate\n"), (warm, r.status, r.stderr_tail[-500:])


def test_ctrl_c_during_a_run_kills_it_and_records_it(store, tmp_path):
    """An interrupt while a run is going: the run's processes die and its row says so (nothing left 'running')."""
    import signal

    from sandbox_cases import processes_with_cmdline

    token = ["sleep", "471.3"]
    # other tests (Ray, Textual) may leave their own SIGINT handler installed: use Python's default here
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        _interrupt_a_run(store, token)
    finally:
        signal.signal(signal.SIGINT, previous)
    [row] = store.sandbox.list()
    assert row["status"] == "killed" and row["stderr_tail"] == "interrupted" and row["ended_at"]
    assert not processes_with_cmdline(token)


def _interrupt_a_run(store, token):
    import signal
    import threading

    with get_backend("local", store=store, warm=False) as backend, backend.open() as ws:
        timer = threading.Timer(1.0, lambda: signal.raise_signal(signal.SIGINT))
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            ws.run(token, limits=Limits(timeout_s=60))
        timer.cancel()
