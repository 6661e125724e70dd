"""Executors: many sandbox jobs at once through the local pool and through Ray, all recorded in the store
(each process opens its own Store: no "database is locked"); the containment suite under Ray."""

from __future__ import annotations

import dataclasses
import os

import pytest

from engine.errors import SandboxError
from engine.executors import SandboxJob, get_executor
from engine.sandbox import Limits
from engine.sandbox.features import detect

from sandbox_cases import cases, host_pid, make_host, verify

JOB_CODE = "import os, pandas as pd\nprint(pd.DataFrame({'x': [%d]}).x.sum() * 2)\n"


def _check_recorded(store, results, executor):
    assert [r.status for r in results] == ["ok"] * len(results), [r.stderr_tail for r in results]
    assert [r.stdout_tail.strip() for r in results] == [str(2 * i) for i in range(len(results))]
    rows = {r["id"]: r for r in store.sandbox.list(limit=None)}
    for r in results:
        row = rows[r.run_id]
        assert row["status"] == "ok" and row["executor"] == executor and row["ended_at"] is not None
        assert os.path.isfile(row["log_path"])
    assert store.integrity_check() == "ok"


def test_job_needs_exactly_one_of_command_and_code():
    with pytest.raises(SandboxError):
        SandboxJob()
    with pytest.raises(SandboxError):
        SandboxJob(command=["true"], code="pass")


def test_unknown_executor(store):
    with pytest.raises(SandboxError, match="unknown executor"):
        get_executor("nope", store=store)


@pytest.mark.slow
def test_local_pool_runs_8_concurrent_jobs_all_recorded(store, tmp_path):
    src = tmp_path / "public"
    src.mkdir()
    (src / "train.csv").write_text("a\n1\n")
    jobs = [SandboxJob(code=JOB_CODE % i, source=str(src), meta={"trajectory_id": f"t{i}"}) for i in range(8)]
    seen = []
    with get_executor("local", store=store, workers=4) as ex:
        results = ex.map(jobs, progress=lambda n, total: seen.append((n, total)))
    _check_recorded(store, results, "local")
    assert seen[-1] == (8, 8)
    assert {store.sandbox.get(r.run_id)["trajectory_id"] for r in results} == {f"t{i}" for i in range(8)}


@pytest.fixture(scope="module")
def ray_world(tmp_path_factory):
    pytest.importorskip("ray")
    from store import Store

    tmp = tmp_path_factory.mktemp("ray")
    (tmp / "home").mkdir()
    store = Store(tmp / "home" / "sandmle.db")
    ex = get_executor("ray", store=store, workers=2)
    yield store, ex, tmp
    ex.close()
    store.close()


@pytest.mark.slow
def test_ray_runs_8_concurrent_jobs_all_recorded(ray_world):
    store, ex, _ = ray_world
    results = ex.map([SandboxJob(code=JOB_CODE % i) for i in range(8)])
    _check_recorded(store, results, "ray")


@pytest.mark.slow
@pytest.mark.skipif(not detect().namespaces, reason="needs namespaces (root)")
def test_containment_suite_under_ray(ray_world):
    store, ex, tmp = ray_world
    host = make_host(tmp, store.path, store.data_dir)
    base = Limits(timeout_s=30, cpu_s=60, memory_mb=2048, max_procs=64, max_disk_mb=2048, max_output_kb=1024)
    try:
        suite = [c for c in cases(host, host_pid()) if c.name != "disk_fill"]  # disk quota: per workspace, below
        jobs = [SandboxJob(code=c.code, source=str(host.env_dir / "public"),
                           limits=dataclasses.replace(base, **c.limits)) for c in suite]
        results = ex.map(jobs)
        for case, result in zip(suite, results):
            verify(case, result.to_dict(), None, host)
            assert result.isolation["warm"] is True and result.isolation["namespaces"] is True
        # the disk quota is the workspace's size (set when it is opened): the polled limit stops it the same way
        fill = [c for c in cases(host, host_pid()) if c.name == "disk_fill"][0]
        [result] = ex.map([SandboxJob(code=fill.code, limits=dataclasses.replace(base, max_disk_mb=48))])
        assert result.status == "killed" and any("disk" in w for w in result.warnings)
    finally:
        host.close()
    assert store.integrity_check() == "ok"
