"""The sandbox for a user without root, as on a shared GPU server: CI runs as root, so these tests make an ordinary
user (tests/unprivileged.py) and drop to it. As that user: the hostile suite cold and warm (and under bubblewrap),
the cross-workspace probe, `sandbox run --warm --json`, `doctor` and a GRPO step."""

from __future__ import annotations

import json
import os
import time

import pytest

from engine.sandbox.base import isolation_label
from unprivileged import NAME, User, why_not

pytestmark = [pytest.mark.skipif(why_not() is not None, reason=why_not() or ""), pytest.mark.slow]

CONTAINMENT = ["network", "read_data_packages", "read_private", "write_outside", "signal_parent", "daemon", "fork_bomb", "memory_bomb",
               "infinite_loop", "cpu_limit", "output_flood", "disk_fill"]


@pytest.fixture(scope="module")
def user(tmp_path_factory):
    return User(tmp_path_factory.mktemp("unprivileged"))


def test_hostile_suite_and_cross_workspace_probe_pass_as_an_ordinary_user(user):
    """Every case of the suite, cold, warm and under bubblewrap, and the cross-workspace probe: each passed (a
    skip fails here — on a main without the user-namespace jail the cold and warm cases skipped as this user)."""
    outcomes = user.pytest("tests/test_sandbox_containment.py", "tests/test_sandbox_workspaces.py")
    output = outcomes.pop("_output")
    expected = {f"tests.test_sandbox_containment::test_containment[{name}-{mode}]"
                for name in CONTAINMENT for mode in ("cold", "warm", "bwrap")}
    expected.add("tests.test_sandbox_workspaces::test_no_step_sees_another_workspace")
    assert expected <= set(outcomes), (sorted(expected - set(outcomes)), output)
    not_passed = {k: v for k, v in outcomes.items() if v != "passed"}
    assert not not_passed, not_passed


def test_sandbox_run_warm_json_says_warm_and_the_isolation_it_has(user):
    step = user.home / "src"
    step.mkdir(exist_ok=True)
    (step / "step.py").write_text("import os, sys\nprint(os.getuid(), 'pandas' in sys.modules)\n")
    os.chown(step, user.uid, user.gid)
    res = user.sandmle("sandbox", "run", "--workdir", str(step), "--warm", "--json", "--", "python", "step.py")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    iso = out["isolation"]
    assert out["status"] == "ok" and out["stdout_tail"].split() == [str(user.uid), "True"]  # imported before
    assert iso["warm"] is True and iso["mode"] == "jail" and iso["user_namespace"] is True
    assert iso["namespaces"] and iso["network_off"] and iso["private_root"] and iso["unprivileged_uid"]
    assert iso["run_as"].startswith(f"uid {user.uid} ") and "no capabilities" in iso["run_as"]
    assert iso["limits"]["processes"].startswith(("RLIMIT_NPROC (counted in the run's own user namespace)",
                                                  "cgroup v2"))
    assert out["warnings"] == [], out["warnings"]  # nothing missing: every limit has what enforces it
    cold = json.loads(user.sandmle("sandbox", "run", "--workdir", str(step), "--cold", "--json", "--", "python",
                                   "step.py").stdout)
    assert cold["isolation"]["warm"] is False and cold["stdout_tail"].split() == [str(user.uid), "False"]
    # `bench sandbox` as the user: its rows beside root's (another file), its isolation column the label of
    # the very records `sandbox run` prints
    res = user.sandmle("bench", "sandbox", "--quick")
    assert res.returncode == 0, res.stderr[-2000:]
    bench = user.home / "data" / "bench"
    assert sorted(p.name for p in bench.glob("*.json")) == ["sandbox-unprivileged.json"]
    data = json.loads((bench / "sandbox-unprivileged.json").read_text())
    rows = {(r["case"], r["mode"]): r for r in data["rows"]}
    assert rows[("pandas+sklearn step", "local warm")]["isolation"] == isolation_label(iso)
    assert rows[("pandas+sklearn step", "local cold")]["isolation"] == isolation_label(cold["isolation"])
    assert rows[("empty step", "local warm")]["isolation"] == isolation_label(iso)
    assert {r["user"] for r in data["rows"]} == {f"{NAME} (uid {user.uid}, no root)"} == {data["summary"]["user"]}
    assert data["summary"]["ml_step_cold_over_warm"] > 1


def test_doctor_states_what_is_in_force_for_the_user(user):
    res = user.sandmle("doctor", "--json")
    checks = {c["name"]: c for c in json.loads(res.stdout)}
    sandbox = {k: v for k, v in checks.items() if k.startswith("sandbox: ")}
    failed = [k for k, v in sandbox.items() if not v["ok"] and not v["optional"]]
    assert failed == [], {k: sandbox[k]["detail"] for k in failed}  # no FAIL: nothing is really missing
    assert "user namespaces of its own" in sandbox["sandbox: namespaces"]["detail"]
    assert sandbox["sandbox: unprivileged uid"]["detail"].startswith(f"uid {user.uid} ")
    assert sandbox["sandbox: warm worker"]["ok"] is True
    limits = sandbox["sandbox: limits"]["detail"]
    assert sandbox["sandbox: limits"]["ok"] and "processes: RLIMIT_NPROC (counted in the run's own user namespace)" \
        in limits and "memory: RLIMIT_AS" in limits
    cg = sandbox["sandbox: cgroups"]
    assert cg["optional"] and not cg["ok"] and "systemd-run --user --scope -p Delegate=yes" in cg["fix"]
    docker = checks["docker daemon"]  # a daemon root uses answers here, but its socket is not this user's
    assert docker["ok"] or "usermod -aG docker" in docker["fix"] or "no daemon answers" in docker["detail"]


def test_a_grpo_step_as_the_user(user):
    """`sandmle train grpo` as the user: one step on the tiny model; then the GRPO rollout workers' sandboxes
    (the trainer's own executor) run a step warm, in the user's jail."""
    reg = user.run([str(user.bin / "python"), "tests/unprivileged_work.py", "register"], timeout=120)
    assert reg.returncode == 0, reg.stderr[-2000:]
    res = user.sandmle("train", "grpo", "--model", "tiny", "--env-ids", "tiny-tabular", "--steps", "1",
                       "--envs-per-step", "1", "--group-size", "2", "--max-turns", "1", "--max-new-tokens", "16",
                       "--rollout-workers", "2", "--json", timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    summary = json.loads(res.stdout)
    assert summary["run_id"].startswith("grpo-")
    workers = user.run([str(user.bin / "python"), "tests/unprivileged_work.py", "workers"], timeout=300)
    assert workers.returncode == 0, workers.stderr[-3000:]
    for iso, out in json.loads(workers.stdout.strip().splitlines()[-1]):
        assert out.strip() == "True"  # pandas came imported: the warm worker ran it
        assert iso["warm"] and iso["user_namespace"] and iso["namespaces"] and iso["network_off"]


@pytest.fixture
def delegated(user):
    """A cgroup v2 folder delegated to the user, as systemd's Delegate=yes makes one: the folder and its
    cgroup.procs, cgroup.subtree_control and cgroup.threads are the user's. Removed after the test."""
    from engine.sandbox.cgroups import v2_mount

    mount = v2_mount()
    if mount is None or not os.access(mount, os.W_OK):
        pytest.skip("no writable cgroup v2 hierarchy to delegate from")
    path = mount / f"sandmle-test-{os.getpid()}"
    path.mkdir()
    for name in ("", "cgroup.procs", "cgroup.subtree_control", "cgroup.threads"):
        os.chown(path / name if name else path, user.uid, user.gid)
    yield path
    for folder in sorted((p for p in path.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)) + [path]:
        (folder / "cgroup.kill").write_text("1")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                folder.rmdir()
                break
            except OSError:
                time.sleep(0.05)


def test_a_delegated_cgroup_v2_is_used_for_every_run(tmp_path_factory, delegated):
    """Started in a delegated v2 cgroup, sandmle moves into its leaf and gives each run a cgroup: its CPU time from
    cpu.stat, every process killed at the end by cgroup.kill, pids.max and memory.max where the folder offers
    those controllers (the rlimits otherwise), all of it in the run's isolation and in doctor."""
    from engine.sandbox.cgroups import HOST_LEAF
    from sandbox_cases import processes_with_cmdline

    u = User(tmp_path_factory.mktemp("delegated"), cgroup=delegated)
    step = u.home / "src"
    step.mkdir()
    token = f"{400 + os.getpid() % 500}.{os.getpid() % 991}"
    (step / "step.py").write_text(
        "import os, time\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
        f"        os.execv('/bin/sleep', ['sleep', '{token}'])\n    os._exit(0)\n"
        "t = time.process_time()\nwhile time.process_time() - t < 0.3:\n    pass\nprint('busy')\n")
    os.chown(step, u.uid, u.gid)
    offered = set((delegated / "cgroup.controllers").read_text().split())
    for mode in ("--warm", "--cold"):
        res = u.sandmle("sandbox", "run", "--workdir", str(step), mode, "--json", "--", "python", "step.py")
        assert res.returncode == 0, res.stderr
        out = json.loads(res.stdout)
        iso = out["isolation"]
        assert iso["warm"] is (mode == "--warm") and iso["cgroup"] == "v2", iso
        assert iso["limits"]["cpu_time"] == "cgroup v2 cpu.stat" and out["cpu_s"] >= 0.25
        assert iso["limits"]["memory"] == ("cgroup v2 memory.max" if "memory" in offered else "RLIMIT_AS")
        assert iso["limits"]["processes"].startswith("cgroup v2 pids.max" if "pids" in offered else "RLIMIT_NPROC")
        assert not processes_with_cmdline(["sleep", token]), "the setsid daemon outlived its run"
    left = sorted(p.name for p in delegated.iterdir() if p.is_dir())
    assert left == [HOST_LEAF]  # every run's cgroup removed; sandmle itself moved into the leaf
    doctor = {c["name"]: c for c in json.loads(u.sandmle("doctor", "--json").stdout)}
    assert doctor["sandbox: cgroups"]["detail"].startswith("cgroup v2: ")


def test_docker_backend_for_a_user_in_the_docker_group(tmp_path_factory, docker_daemon):
    """A user in the group that owns the daemon's socket (the `docker` group) runs the docker backend's hostile
    suite against the same daemon (which root started, or found running)."""
    import stat as stat_mod

    host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    sock = host.removeprefix("unix://")
    if not host.startswith("unix://") or not stat_mod.S_ISSOCK(os.stat(sock).st_mode):
        pytest.skip(f"the daemon is not on a local socket ({host})")
    gid = os.stat(sock).st_gid
    if gid == 0 or os.stat(sock).st_mode & 0o060 != 0o060:
        pytest.skip(f"{sock} has no group that may use it")
    u = User(tmp_path_factory.mktemp("docker-group"), groups=(gid,))
    state = u.home / "dockerd-state"  # the user's own: it never starts or stops a daemon
    outcomes = u.pytest("tests/test_sandbox_docker.py::test_containment", SANDMLE_TEST_DOCKERD_STATE=str(state))
    output = outcomes.pop("_output")
    expected = {f"tests.test_sandbox_docker::test_containment[{name}]" for name in CONTAINMENT}
    assert expected <= set(outcomes), (sorted(expected - set(outcomes)), output)
    not_passed = {k: v for k, v in outcomes.items() if v != "passed"}
    assert not not_passed, not_passed
