"""The sandbox for a user without root, as on a shared GPU server: CI runs as root, so these tests make an ordinary
user (tests/unprivileged.py) and drop to it. As that user: the hostile suite cold and warm (and under bubblewrap),
the cross-workspace probe, `sandbox run --warm --json`, `doctor` and a GRPO step."""

from __future__ import annotations

import json

import pytest

from unprivileged import User, why_not

pytestmark = [pytest.mark.skipif(why_not() is not None, reason=why_not() or ""), pytest.mark.slow]

CONTAINMENT = ["network", "read_private", "write_outside", "signal_parent", "daemon", "fork_bomb", "memory_bomb",
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


def test_sandbox_run_warm_json_says_warm_and_the_isolation_it_has(user, tmp_path):
    step = user.home / "src"
    step.mkdir(exist_ok=True)
    (step / "step.py").write_text("import os, sys\nprint(os.getuid(), 'pandas' in sys.modules)\n")
    import os

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
