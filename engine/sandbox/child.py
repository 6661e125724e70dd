"""The processes a local run is made of: the interpreter untrusted Python runs with, the environment it gets, and
a handle on a started run (cold: our own child; warm: a fork of the warm worker)."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import threading
import time
from pathlib import Path

#: threads that numeric libraries may start per process (the pids limit counts threads)
THREAD_ENV = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
              "NUMEXPR_NUM_THREADS": "1", "VECLIB_MAXIMUM_THREADS": "1"}


def venv_python() -> str:
    """The interpreter untrusted Python runs with: this virtual env's, by a path the jail mounts."""
    prefix = os.path.realpath(sys.prefix)
    cand = os.path.join(prefix, "bin", "python")
    return cand if os.path.exists(cand) else os.path.realpath(sys.executable)


def run_env(workspace: Path) -> dict[str, str]:
    py_bin = os.path.dirname(venv_python())
    return {"PATH": f"{py_bin}:/usr/local/bin:/usr/bin:/bin", "HOME": str(workspace), "PYTHONUNBUFFERED": "1",
            "LANG": "C.UTF-8", "TMPDIR": "/tmp", "MPLBACKEND": "Agg", "PYTHONDONTWRITEBYTECODE": "1", **THREAD_ENV}


class RunHandle:
    """A started run: the session leader's pid, and a way to wait for its end."""

    def __init__(self, pid: int, *, proc: subprocess.Popen | None = None, done: threading.Event | None = None):
        self.pid = pid
        self.proc = proc
        self.done_event = done or threading.Event()  # set by whoever sees a warm run end
        self._pidfd: int | None = None
        if proc is not None:
            try:
                self._pidfd = os.pidfd_open(pid)
            except (OSError, AttributeError):
                self._pidfd = None

    def wait(self, timeout: float) -> bool:
        """True once the run has ended (waits at most ``timeout`` seconds)."""
        if self.proc is not None:
            if self._pidfd is not None:
                select.select([self._pidfd], [], [], timeout)
            elif self.proc.poll() is None:
                time.sleep(timeout)
            return self.proc.poll() is not None
        return self.done_event.wait(timeout)

    def close(self) -> None:
        if self.proc is not None:
            self.proc.wait()
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None
