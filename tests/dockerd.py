"""A Docker daemon for the tests of the docker backend.

A daemon that already answers is used as it is. Where none answers but ``dockerd`` is installed and we are root
(``make test`` installs docker.io with apt-get), the first test session that needs one starts it; test sessions
that overlap (several checkouts on one machine) share it. Each session registers in :data:`STATE` while it
uses the daemon, and the last one to leave stops a daemon that a test session started — never one it found
running.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

STATE = Path(os.environ.get("SANDMLE_TEST_DOCKERD_STATE", "/run/sandmle-test-dockerd"))
SOCKET = "/var/run/docker.sock"
START_TIMEOUT_S = 60.0


def answers() -> str | None:
    """None when a daemon answers, else why not (one line)."""
    try:
        import docker  # optional dependency, as in the backend
    except ImportError:
        return "the docker SDK is not installed"
    try:
        client = docker.from_env(timeout=3)
        client.ping()
        client.close()
        return None
    except Exception as exc:  # the SDK raises several kinds when no daemon answers
        return str(exc).splitlines()[0][:160]


def _tag(pid: int) -> str:
    """pid and start time, so that a reused pid does not pass for a live session."""
    try:
        return f"{pid}-{Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()[19]}"
    except (OSError, IndexError):
        return f"{pid}-gone"


def _alive(tag: str) -> bool:
    pid = tag.split("-", 1)[0]
    return pid.isdigit() and _tag(int(pid)) == tag


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    if state != "Z":
        return True
    try:
        os.waitpid(pid, os.WNOHANG)  # reap it when it is this process's own child
    except ChildProcessError:
        pass
    return False


class Daemon:
    """``acquire()`` before the docker tests, ``release()`` after them (from a session fixture)."""

    def __init__(self) -> None:
        self.me = _tag(os.getpid())
        self.registered = False

    def _locked(self) -> int:
        STATE.mkdir(parents=True, exist_ok=True)
        (STATE / "users").mkdir(exist_ok=True)
        fd = os.open(STATE / "lock", os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
        return fd

    def acquire(self) -> str | None:
        """None when a daemon answers (started here if needed), else why the docker tests must skip."""
        reason = answers()
        if reason is None and not (STATE / "started").exists():
            return None  # a daemon we did not start: use it, never stop it
        if reason is not None and (os.geteuid() != 0 or shutil.which("dockerd") is None):
            return f"no Docker daemon ({reason}); dockerd is not installed or we are not root to start it"
        fd = self._locked()
        try:
            (STATE / "users" / self.me).touch()
            self.registered = True
            if answers() is None:
                return None
            log = open(STATE / "dockerd.log", "ab")
            proc = subprocess.Popen(["dockerd", "--host", f"unix://{SOCKET}", "--pidfile", str(STATE / "dockerd.pid")],
                                    stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
            log.close()
            (STATE / "started").write_text(str(proc.pid))
            deadline = time.monotonic() + START_TIMEOUT_S
            while (reason := answers()) is not None and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.5)
            if reason is not None:
                return f"dockerd did not start ({reason}); see {STATE / 'dockerd.log'}"
            return None
        finally:
            os.close(fd)

    def release(self) -> None:
        """Leave; the last session out stops a daemon that a test session started."""
        if not self.registered:
            return
        fd = self._locked()
        try:
            (STATE / "users" / self.me).unlink(missing_ok=True)
            self.registered = False
            users = [p for p in (STATE / "users").iterdir() if _alive(p.name)]
            started = STATE / "started"
            if users or not started.exists():
                return
            pid = int(started.read_text())
            try:
                os.kill(pid, signal.SIGTERM)
                deadline = time.monotonic() + 30
                while _running(pid) and time.monotonic() < deadline:
                    time.sleep(0.2)
                if _running(pid):
                    os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            started.unlink()
            for stale in (STATE / "users").iterdir():
                stale.unlink()
        finally:
            os.close(fd)
