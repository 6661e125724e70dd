"""An ordinary user for the tests that must see the product without root (CI runs as root).

:func:`ensure_user` makes the system user :data:`NAME` once (no home, no login shell) and leaves it for later
sessions: several test sessions may share a machine, and one must not delete a user another is running as
(``userdel sandmle-test`` removes it). :class:`User` runs commands as that user through ``tests/as_user.py``: a
home of its own under the test's tmp folder, this checkout and this interpreter reachable at their own paths, the
rest of root's files out of reach, and optionally supplementary groups (the docker socket's) or a delegated cgroup
v2 folder to start in."""

from __future__ import annotations

import fcntl
import json
import os
import pwd
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conftest import ROOT

NAME = "sandmle-test"
LOCK = Path("/run/sandmle-test-user.lock")
AS_USER = ROOT / "tests" / "as_user.py"


def why_not() -> str | None:
    """None when these tests can run here, else why they skip."""
    if os.geteuid() != 0:
        return "needs root to make the test user (as an ordinary user the whole suite already runs without root)"
    if not shutil.which("useradd") and not _exists():
        return "no useradd to make the test user"
    return None


def _exists() -> bool:
    try:
        pwd.getpwnam(NAME)
        return True
    except KeyError:
        return False


def ensure_user() -> tuple[int, int]:
    """The test user's uid and gid, made on first use (under a lock: test sessions may overlap)."""
    with open(LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _exists():
            subprocess.run(["useradd", "--system", "--user-group", "--no-create-home", "--home-dir", "/nonexistent",
                            "--shell", "/usr/sbin/nologin", NAME], check=True, capture_output=True)
    entry = pwd.getpwnam(NAME)
    return entry.pw_uid, entry.pw_gid


def interpreter_paths() -> list[str]:
    """What the user needs to run this checkout's ``.venv``: the checkout, the venv and its base interpreter."""
    paths = {str(ROOT), os.path.realpath(sys.prefix), os.path.realpath(sys.base_prefix),
             os.path.dirname(os.path.realpath(sys.executable))}
    return sorted(paths)


class User:
    """The test user with a home in ``tmp`` (a folder only it can write)."""

    def __init__(self, tmp: Path, *, groups: tuple[int, ...] = (), cgroup: Path | None = None):
        self.uid, self.gid = ensure_user()
        self.tmp = Path(tmp)
        self.home = self.tmp / "home"
        for sub in ("", "tmp", "data"):
            (self.home / sub).mkdir(parents=True, exist_ok=True)
            os.chown(self.home / sub, self.uid, self.gid)
        os.chmod(self.home, 0o700)
        self.groups = list(groups)
        self.cgroup = cgroup
        self.bin = Path(sys.prefix) / "bin"

    def env(self, **extra: str) -> dict[str, str]:
        env = {"PATH": f"{self.bin}:/usr/local/bin:/usr/bin:/bin", "HOME": str(self.home), "USER": NAME,
               "LOGNAME": NAME, "TMPDIR": str(self.home / "tmp"), "SANDMLE_HOME": str(self.home / "data"),
               "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1", "OMP_NUM_THREADS": "1",
               "PYTHONPATH": str(ROOT)}  # this checkout's code, whichever the venv was installed from
        for passed in ("PIP_FIND_LINKS", "DOCKER_HOST"):  # root's local wheels (CPU torch), the daemon
            if passed in os.environ:
                env[passed] = os.environ[passed]
        env.update(extra)
        return env

    def run(self, argv: list[str], *, timeout: float = 600, env: dict[str, str] | None = None,
            cwd: Path = ROOT) -> subprocess.CompletedProcess:
        spec = {"uid": self.uid, "gid": self.gid, "groups": self.groups, "cwd": str(cwd),
                "expose": interpreter_paths() + [str(self.home)], "env": env or self.env(),
                "cgroup": str(self.cgroup) if self.cgroup else None}
        spec_path = self.tmp / "as-user.json"
        spec_path.write_text(json.dumps(spec))
        return subprocess.run([sys.executable, "-S", str(AS_USER), str(spec_path), "--", *argv], cwd=ROOT,
                              capture_output=True, text=True, timeout=timeout)

    def sandmle(self, *args: str, timeout: float = 600, **extra_env: str) -> subprocess.CompletedProcess:
        """The installed console script, as this user."""
        return self.run([str(self.bin / "sandmle"), *args], timeout=timeout, env=self.env(**extra_env))

    def pytest(self, *targets: str, timeout: float = 900, **extra_env: str) -> dict[str, str]:
        """Run tests as this user; each test's outcome (passed, failed, error, skipped) by its id."""
        report = self.home / "junit.xml"
        proc = self.run([str(self.bin / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider",
                         "--basetemp", str(self.home / "pytest"), "--junitxml", str(report), *targets],
                        timeout=timeout, env=self.env(**extra_env))
        if not report.exists():
            pytest.fail(f"pytest as {NAME} wrote no report (exit {proc.returncode}): {proc.stdout[-3000:]}"
                        f"{proc.stderr[-2000:]}")
        outcomes = {}
        for case in ET.parse(report).getroot().iter("testcase"):
            name = f"{case.get('classname', '')}::{case.get('name', '')}"
            kinds = [child.tag for child in case if child.tag in ("failure", "error", "skipped")]
            outcomes[name] = kinds[0] if kinds else "passed"
            if kinds:
                detail = case.find(kinds[0])
                outcomes[name] += ": " + ((detail.get("message") or "") if detail is not None else "")[:300]
        outcomes["_output"] = proc.stdout[-3000:]
        return outcomes


def main(argv: list[str]) -> int:
    """``python tests/unprivileged.py [--copy-to DIR] SANDMLE_ARGS...`` (as root): run the installed ``sandmle``
    as the test user, with a fresh home; ``--copy-to`` copies the result files its ``bench`` wrote (in the
    user's data dir) to DIR. How benchmarks/results/sandbox-unprivileged.json is made on a machine where we are
    root: ``.venv/bin/python tests/unprivileged.py --copy-to benchmarks/results bench sandbox``."""
    import tempfile

    copy_to = None
    if argv[:1] == ["--copy-to"]:
        copy_to, argv = Path(argv[1]), argv[2:]
    reason = why_not()
    if reason:
        print(f"error: {reason}", file=sys.stderr)
        return 2
    tmp = Path(tempfile.mkdtemp(prefix="sandmle-as-user-"))
    try:
        user = User(tmp)
        proc = user.run([str(user.bin / "sandmle"), *argv], timeout=7200)
        sys.stdout.write(proc.stdout)
        sys.stderr.write(proc.stderr)
        if copy_to is not None:
            for result in sorted((user.home / "data" / "bench").glob("*")):
                shutil.copy(result, copy_to / result.name)
                print(f"copied {result.name} to {copy_to}", file=sys.stderr)
        return proc.returncode
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
