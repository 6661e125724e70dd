"""A data dir that cannot be written gives every command one line naming the path and the cause, and a non-zero
exit: a read-only bind mount (in a private mount namespace: root ignores file modes), a full tmpfs, and a data
dir that cannot be created."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from conftest import DATA, ROOT

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None,
                                reason="needs root and unshare(1) to make a private mount namespace")

#: a command of every family: reads, writes, sandbox, synthesis, eval
COMMANDS = [
    "seeds list", "seeds tag forest-cover curated", "doctor", "envs list", "runs list", "sandbox runs list",
    "trajectories list", "synth --seed forest-cover --count 1", "sandbox run -- true",
    f"eval --envs {DATA / 'envs' / 'tiny-tabular'} --scaffold oneshot", f"seeds import {ROOT / 'seeds'}",
]
#: the commands that only read: on a full disk they may still work
READS = {"seeds list", "doctor", "envs list", "runs list", "sandbox runs list", "trajectories list"}
SANDMLE = f"{sys.executable} -m workbench"


def _in_namespace(script: str, home) -> list[tuple[str, int, str]]:
    """Run ``script`` (which makes the mount) then every command, in a private mount namespace; returns
    (command, exit code, stderr) for each."""
    lines = [f"( {script} ) || exit 3"]
    for i, cmd in enumerate(COMMANDS):
        lines.append(f"SANDMLE_HOME={home} {SANDMLE} {cmd} >/dev/null 2>{home.parent}/err{i}; echo $? >{home.parent}/rc{i}")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DOCKER_HOST": "unix:///nonexistent"}
    proc = subprocess.run(["unshare", "-m", "sh", "-c", "\n".join(lines)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return [(cmd, int((home.parent / f"rc{i}").read_text()), (home.parent / f"err{i}").read_text())
            for i, cmd in enumerate(COMMANDS)]


def _seeded(home) -> None:
    env = {**os.environ, "SANDMLE_HOME": str(home), "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-m", "workbench", "seeds", "import", str(ROOT / "seeds")], env=env, check=True,
                   capture_output=True, timeout=120)


def _one_line(err: str, *needles: str) -> bool:
    lines = [line for line in err.splitlines() if line.strip() and not line.startswith("synth ")]
    return len(lines) == 1 and lines[0].startswith("error: ") and all(n in lines[0] for n in needles)


@pytest.mark.slow
def test_read_only_data_dir(tmp_path):
    home = tmp_path / "home"
    _seeded(home)
    results = _in_namespace(f"mount --bind {home} {home} && mount -o remount,bind,ro {home}", home)
    for cmd, code, err in results:
        assert code == 1, (cmd, err)
        assert _one_line(err, str(home), "read-only file system"), (cmd, err)


@pytest.mark.slow
def test_full_disk_data_dir(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    fill = f"dd if=/dev/zero of={home}/fill bs=4k 2>/dev/null"
    # a store with the shipped seeds, then not one free block
    results = _in_namespace(f"mount -t tmpfs -o size=4m none {home} && SANDMLE_HOME={home} {SANDMLE} seeds list "
                            f">/dev/null && ({fill}; test $(df --output=avail {home} | tail -1) -eq 0)", home)
    for cmd, code, err in results:
        if code == 0:  # reading needs no space
            assert cmd in READS, (cmd, err)
        else:
            assert code == 1 and _one_line(err, str(home), "no space left"), (cmd, err)
    assert sum(code == 1 for _, code, _ in results) >= len(COMMANDS) - len(READS)


def test_data_dir_that_cannot_be_created(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    env = {**os.environ, "SANDMLE_HOME": str(blocker / "home"), "PYTHONPATH": str(ROOT)}
    for cmd in ("seeds list", "doctor", "envs list"):
        proc = subprocess.run([sys.executable, "-m", "workbench", *cmd.split()], env=env, capture_output=True,
                              text=True, timeout=120)
        assert proc.returncode == 1
        assert proc.stderr.strip() == f"error: cannot create the data dir {blocker / 'home'}: Not a directory"
