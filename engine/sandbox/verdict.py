"""How a finished run is classified: the status (one of :data:`~engine.sandbox.base.STATUSES`) and the reason,
the same way for every backend."""

from __future__ import annotations

import signal


#: what a refused fork (EAGAIN: the process limit) leaves in stderr: Python's exception, the shells' messages
FORK_REFUSED = ("BlockingIOError: [Errno 11] Resource temporarily unavailable", "fork: Resource temporarily unavailable",
                "Cannot fork", "fork: retry: Resource temporarily unavailable")


def classify(code: int | None, stderr: str, *, mem_hit: bool, pids_hit: bool, disk_full: bool,
             cpu_over: bool) -> tuple[str, str | None]:
    """``code``: the exit code, negative for a signal. The ``*_hit`` flags come from the backend's counters."""
    if code == 0:
        return "ok", None
    if code == -signal.SIGXCPU or cpu_over:
        return "timeout", "CPU time limit reached"
    if mem_hit or "MemoryError" in stderr or "Cannot allocate memory" in stderr:
        return "memory", "memory limit reached"
    if pids_hit or any(hint in stderr for hint in FORK_REFUSED):
        return "killed", "process limit reached"
    if disk_full or code == -signal.SIGXFSZ or "File too large" in stderr or "No space left on device" in stderr:
        return "killed", "disk limit reached"
    if code is None or code < 0:
        return "killed", f"killed by signal {-code}" if code is not None else "ended without an exit status"
    return "error", None
