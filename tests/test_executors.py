"""Executors: many sandbox jobs at once through worker threads, worker processes and Ray, all recorded in the store
(each process opens its own Store: no "database is locked"); the containment suite under Ray; results stream in
as they finish; a worker that dies is reported, replaced and its item retried once (never counted twice)."""

from __future__ import annotations

import dataclasses
import os

import pytest

from engine.errors import SandboxError
from engine.executors import SandboxJob, WorkerLost, get_executor, run_sandbox_job
from engine.sandbox import Limits, RunMeta
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
@pytest.mark.parametrize("kind", ["local", "process"])
def test_local_workers_run_8_concurrent_jobs_all_recorded(store, tmp_path, kind):
    src = tmp_path / "public"
    src.mkdir()
    (src / "train.csv").write_text("a\n1\n")
    jobs = [SandboxJob(code=JOB_CODE % i, source=str(src), meta=RunMeta(trajectory_id=f"t{i}")) for i in range(8)]
    seen = []
    with get_executor(kind, store=store, workers=4) as ex:
        results = ex.map(run_sandbox_job, jobs, on_result=lambda i, r: seen.append(i))
    _check_recorded(store, results, kind)
    assert sorted(seen) == list(range(8))
    assert {store.sandbox.get(r.run_id)["trajectory_id"] for r in results} == {f"t{i}" for i in range(8)}


@pytest.fixture(scope="module")
def ray_world(tmp_path_factory, local_ray):
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
    results = ex.map(run_sandbox_job, [SandboxJob(code=JOB_CODE % i) for i in range(8)])
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
        results = ex.map(run_sandbox_job, jobs)
        for case, result in zip(suite, results):
            verify(case, result.to_dict(), None, host)
            assert result.isolation["warm"] is True and result.isolation["namespaces"] is True
        # the disk quota is the workspace's size (set when it is opened): the polled limit stops it the same way
        fill = [c for c in cases(host, host_pid()) if c.name == "disk_fill"][0]
        [result] = ex.map(run_sandbox_job, [SandboxJob(code=fill.code, limits=dataclasses.replace(base, max_disk_mb=48))])
        assert result.status == "killed" and any("disk" in w for w in result.warnings)
    finally:
        host.close()
    assert store.integrity_check() == "ok"


# ------------------------------------------------------------------ streaming, worker resources, dead workers
@pytest.fixture
def by_value():
    """Ray actors import work functions by name from this project only: ship the test module's by value."""
    import executor_work

    cloudpickle = pytest.importorskip("ray.cloudpickle")
    cloudpickle.register_pickle_by_value(executor_work)
    yield executor_work
    cloudpickle.unregister_pickle_by_value(executor_work)


def test_results_stream_in_as_they_finish(store):
    from executor_work import echo_after

    with get_executor("local", store=store, workers=2) as ex:
        order = [i for i, _ in ex.stream(echo_after, [(0, 0.6), (1, 0.0), (2, 0.0)])]
    assert order[0] == 1 and order[-1] == 0 and sorted(order) == [0, 1, 2]


@pytest.mark.parametrize("kind", ["local", "process"])
def test_each_worker_keeps_one_sandbox_backend(store, kind):
    from executor_work import whose_backend

    with get_executor(kind, store=store, workers=2) as ex:
        seen = ex.map(whose_backend, range(6))
    assert {name for name, _, _ in seen} == {f"{kind}-0", f"{kind}-1"}
    backends = {name: {(pid, b) for n, pid, b in seen if n == name} for name, _, _ in seen}
    assert all(len(v) == 1 for v in backends.values())  # one backend per worker, reused for every item


def test_a_failing_item_raises_its_own_error(store):
    from executor_work import fail

    with get_executor("local", store=store, workers=2) as ex, pytest.raises(ValueError, match="bad item 1"):
        ex.map(fail, [1])


def _dead_worker_is_retried_once(ex, tmp_path, module):
    lines = []
    ex.on_lost = lines.append
    items = [(str(tmp_path / f"marker-{i}"), i) if i == 2 else (str(tmp_path / "never"), i) for i in range(4)]
    (tmp_path / "never").write_text("present: these items do not die")
    results = ex.map(module.die_once, items)
    assert results == [0, 2, 4, 6]  # the killed item ran again and is counted once
    assert len(ex.lost) == 1 and "died running item 2" in ex.lost[0]
    assert lines == [ex.lost[0] + "; retrying it once"]
    with pytest.raises(WorkerLost, match="item 0 killed its worker twice"):
        ex.map(module.always_die, [None])
    assert len(ex.lost) == 3
    assert ex.map(module.die_once, items[:2]) == [0, 2]  # the replaced workers still work


@pytest.mark.slow
def test_process_worker_that_dies_is_replaced_and_its_item_retried_once(store, tmp_path):
    import executor_work

    with get_executor("process", store=store, workers=2) as ex:
        _dead_worker_is_retried_once(ex, tmp_path, executor_work)


@pytest.mark.slow
def test_ray_actor_that_dies_is_replaced_and_its_item_retried_once(ray_world, by_value, tmp_path):
    _, ex, _ = ray_world
    ex.lost.clear()
    _dead_worker_is_retried_once(ex, tmp_path, by_value)
