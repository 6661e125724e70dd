"""A run's tasks counted without a pids cgroup, so that a run at its process limit ends ``killed`` ("process limit
reached") rather than spinning on failed forks until its wall time.

RLIMIT_NPROC already stops the forks; this only sees it. The count walks the process tree down from the run's
first process through ``/proc/PID/task/TID/children`` and adds up every task (threads included, as RLIMIT_NPROC
counts them). A run cannot leave that tree: it lives in its own pid namespace, whose init adopts its orphans (double
forks, setsid daemons). Where the kernel has no ``children`` files (CONFIG_PROC_CHILDREN off) nothing is counted and
the limit is RLIMIT_NPROC's alone."""

from __future__ import annotations

import os

AVAILABLE = os.path.exists(f"/proc/self/task/{os.getpid()}/children")


def _tasks(pid: int) -> list[str]:
    try:
        return os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []  # gone meanwhile


def _children(pid: int, tid: str) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{tid}/children") as f:
            return [int(c) for c in f.read().split()]
    except (OSError, ValueError):
        return []


class RunTasks:
    """The tasks of the run whose first process is ``pid``, less ``extra`` of the jail's own (the cold launcher and
    the run's init; bubblewrap and its init as well)."""

    def __init__(self, pid: int, *, extra: int = 0):
        self.pid = pid
        self.extra = extra

    def count(self) -> int:
        total, queue, seen = 0, [self.pid], set()
        while queue:
            pid = queue.pop()
            if pid in seen:
                continue
            seen.add(pid)
            tids = _tasks(pid)
            total += len(tids)
            for tid in tids:
                queue += _children(pid, tid)
        return max(0, total - self.extra)
