"""The docker backend against a real daemon (started for the session where dockerd is installed, see
tests/dockerd.py): the containment suite, files in and out through the archive API, and stale containers."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys

import pytest

from engine.errors import SandboxError
from engine.sandbox import Limits, get_backend

from sandbox_cases import cases, check_files_in_and_out, host_pid, make_host, verify

BASE = Limits(timeout_s=30, cpu_s=60, memory_mb=2048, max_procs=64, max_disk_mb=64, max_output_kb=1024)
NAMES = ["network", "read_data_packages", "read_private", "write_outside", "signal_parent", "daemon", "fork_bomb", "memory_bomb",
         "infinite_loop", "cpu_limit", "output_flood", "disk_fill"]


def test_no_daemon_is_a_one_line_error(monkeypatch, tmp_path):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/nothing.sock")
    with pytest.raises(SandboxError) as err:
        get_backend("docker")
    assert "no Docker daemon answers" in str(err.value) and "\n" not in str(err.value)


@pytest.fixture(scope="module")
def world(tmp_path_factory, docker_daemon):
    from store import Store

    tmp = tmp_path_factory.mktemp("docker")
    store = Store(tmp / "home" / "sandmle.db")
    backend = get_backend("docker", store=store, limits=BASE)
    host = make_host(tmp, store.path, store.data_dir)
    yield store, backend, host
    backend.close()
    host.close()
    store.close()


@pytest.mark.parametrize("name", NAMES)
def test_containment(world, name):
    store, backend, host = world
    case = {c.name: c for c in cases(host, host_pid(), loopback_up=True)}[name]
    with backend.open(host.env_dir / "public") as ws:
        result = ws.run_python(case.code, limits=dataclasses.replace(BASE, **case.limits))
        verify(case, result.to_dict(), ws, host)
        assert result.isolation["mode"] == "docker" and result.isolation["network_off"]
        row = store.sandbox.get(result.run_id)
        assert row["status"] == case.status and row["backend"] == "docker"
        ws.run("rm -f fill*.bin")
        after = ws.run_python("print(6 * 7)")
        assert after.status == "ok" and after.stdout_tail.strip() == "42"


def test_files_in_and_out(world, tmp_path):
    _, backend, host = world
    with backend.open(host.env_dir / "public") as ws:
        check_files_in_and_out(ws, tmp_path)


def _killed_with_a_workspace_open(tmp_path) -> tuple[str, str]:
    """The container and volume names of a workspace whose process was killed (kill -9) with it open."""
    code = ("import os; from engine.sandbox import get_backend\n"
            f"ws = get_backend('docker', root={str(tmp_path)!r}).open(None, label='orphan')\n"
            "print(ws.container.name, ws.volume.name, flush=True); os.kill(os.getpid(), 9)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=os.environ)
    container, volume = out.stdout.split()
    return container, volume


def _exists(backend, container: str, volume: str) -> tuple[bool, bool]:
    return (any(c.name == container for c in backend.client.containers.list(all=True)),
            any(v.name == volume for v in backend.client.volumes.list()))


def test_killed_owner_leaves_no_container(world, tmp_path):
    """A process killed with its workspace open: the next backend removes the container and its volume."""
    store, backend, host = world
    container, volume = _killed_with_a_workspace_open(tmp_path)
    assert _exists(backend, container, volume) == (True, True)
    get_backend("docker", root=tmp_path).close()
    assert _exists(backend, container, volume) == (False, False)


def test_doctor_deep_lists_and_repair_removes_what_a_killed_owner_left(world, tmp_path, run_cli):
    """`doctor --deep` lists the container and volume of a workspace whose process was killed (not those of a live
    one); `--repair` removes them."""
    _, backend, host = world
    container, volume = _killed_with_a_workspace_open(tmp_path)
    with backend.open(None, label="live") as live:
        res = run_cli("doctor", "--deep", "--json")
        assert res.code == 1, res.err
        found = {p["subject"]: p for p in res.json()["problems"] if p["check"] == "docker leftovers"}
        assert {f"container {container}", f"volume {volume}"} <= set(found)
        assert not found[f"container {container}"]["repaired"]
        assert f"container {live.container.name}" not in found and f"volume {live.volume.name}" not in found

        res = run_cli("doctor", "--deep", "--repair", "--json")
        repaired = {p["subject"]: p["action"] for p in res.json()["problems"] if p["check"] == "docker leftovers"}
        assert repaired[f"container {container}"] == repaired[f"volume {volume}"] == "removed it"
        assert _exists(backend, container, volume) == (False, False)
        assert live.run("echo alive").stdout_tail.strip() == "alive"  # the live workspace is untouched
        res = run_cli("doctor", "--deep", "--json")
        assert not {f"container {container}", f"volume {volume}"} & {p["subject"] for p in res.json()["problems"]}
