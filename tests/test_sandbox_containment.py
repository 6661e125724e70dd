"""The containment suite, cold and warm: every case ends with its specific status, nothing escapes, and the
host and the store stay healthy. As root (CI) the jail runs as uid nobody; as an ordinary user (run by
tests/test_sandbox_unprivileged.py as a user it makes) the same jail runs in user namespaces of its own."""

from __future__ import annotations

import dataclasses
import os

import pytest

from engine.sandbox import Limits, get_backend
from engine.sandbox.features import bwrap_works, detect

from sandbox_cases import cases, host_pid, make_host, verify

pytestmark = pytest.mark.skipif(not detect().namespaces, reason="needs namespaces (root): " + detect().namespaces_error)

BASE = Limits(timeout_s=30, cpu_s=60, memory_mb=2048, max_procs=64, max_disk_mb=64, max_output_kb=1024)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    from store import Store

    tmp = tmp_path_factory.mktemp("containment")
    home = tmp / "home"
    home.mkdir()
    store = Store(home / "sandmle.db")
    backend = get_backend("local", store=store, limits=BASE, warm=True)
    bwrap = get_backend("local", store=store, limits=BASE, isolation="bwrap") if bwrap_works() else None
    host = make_host(tmp, store.path, store.data_dir)
    yield store, {"jail": backend, "bwrap": bwrap}, host, tmp
    backend.close()
    host.close()
    store.close()


NAMES = ["network", "read_data_packages", "read_private", "write_outside", "signal_parent", "daemon", "fork_bomb", "memory_bomb",
         "infinite_loop", "cpu_limit", "output_flood", "disk_fill"]


@pytest.mark.parametrize("mode", ["cold", "warm", "bwrap"])
@pytest.mark.parametrize("name", NAMES)
def test_containment(world, mode, name):
    """cold and warm: our jail; bwrap: what a machine without root gets (bubblewrap around a cold run)."""
    store, backends, host, tmp = world
    backend = backends["bwrap" if mode == "bwrap" else "jail"]
    if backend is None:
        pytest.skip("bubblewrap is missing or cannot make namespaces here")
    case = {c.name: c for c in cases(host, host_pid())}[name]
    limits = dataclasses.replace(BASE, **case.limits)
    with backend.open(host.env_dir / "public") as ws:
        rel = os.path.relpath(tmp, ws.path)
        suite = cases(host, host_pid(), workspace_parent_hint=rel, loopback_up=mode == "bwrap")
        case = {c.name: c for c in suite}[name]
        result = ws.run_python(case.code, limits=limits, warm=(mode == "warm"))
        verify(case, result.to_dict(), ws, host, parent=ws.path.parent)
        iso = result.isolation
        assert iso["warm"] is (mode == "warm")
        assert iso["namespaces"] and iso["network_off"] and iso["private_root"]
        assert iso["unprivileged_uid"] or (mode == "bwrap" and detect().root)  # bubblewrap keeps root's uid
        assert "NOT enforced" not in iso["limits"]["processes"]  # a pids cgroup, or RLIMIT_NPROC where it counts
        assert iso["cgroup_pids"] or not detect().cgroups["pids"]  # the cgroup wherever there is one
        assert iso["user_namespace"] is (not detect().root)  # the jail's, or the one bubblewrap makes
        assert iso["mode"] == ("bwrap" if mode == "bwrap" else "jail")
        # the host and the store stay healthy: the row is final and a next run works
        row = store.sandbox.get(result.run_id)
        assert row["status"] == case.status and row["isolation"]["namespaces"] is True
        assert store.integrity_check() == "ok"
        ws.run("rm -f fill*.bin")
        after = ws.run_python("print(6 * 7)", warm=(mode == "warm"))
        assert after.status == "ok" and after.stdout_tail.strip() == "42"
