"""A run's tasks counted without a pids cgroup: every task (threads included, as RLIMIT_NPROC counts them) whose
pid namespace is the run's. A run cannot leave its pid namespace, so daemons and double forks are counted too."""

from __future__ import annotations

import os


def _ns_id(link: str) -> tuple[int, int] | None:
    try:
        st = os.stat(link)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _ppid(pid: str) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return int(f.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


class RunTasks:
    """The tasks of the run whose first process is ``pid``, by ``kind``: ``warm``, the run's pid 1 itself;
    ``cold``, the jail launcher (its children are the run's pid namespace once it has made it); ``bwrap``, the
    launcher of bubblewrap (the namespace is that of the first of its descendants outside the host's)."""

    def __init__(self, pid: int, *, kind: str, extra: int = 0):
        """``extra``: tasks of the jail itself in the namespace, left out of the count (a cold run's init)."""
        self.pid = pid
        self.kind = kind
        self.extra = extra
        self.ns: tuple[int, int] | None = None
        self._host = _ns_id("/proc/self/ns/pid")

    def namespace(self) -> tuple[int, int] | None:
        if self.ns is None:
            if self.kind == "bwrap":
                ns = self._below()
            else:
                ns = _ns_id(f"/proc/{self.pid}/ns/" + ("pid_for_children" if self.kind == "cold" else "pid"))
            if ns is not None and ns != self._host:  # not made yet while it is the host's
                self.ns = ns
        return self.ns

    def _below(self) -> tuple[int, int] | None:
        """The pid namespace of the nearest descendant of ``pid`` that is not in the host's."""
        children: dict[int, list[str]] = {}
        for name in os.listdir("/proc"):
            if name.isdigit() and (parent := _ppid(name)) is not None:
                children.setdefault(parent, []).append(name)
        queue = [str(self.pid)]
        while queue:
            pid = queue.pop(0)
            ns = _ns_id(f"/proc/{pid}/ns/pid")
            if ns is not None and ns != self._host:
                return ns
            queue += children.get(int(pid), [])
        return None

    def count(self) -> int:
        ns = self.namespace()
        if ns is None:
            return 0
        total = 0
        for name in os.listdir("/proc"):
            if name.isdigit() and _ns_id(f"/proc/{name}/ns/pid") == ns:
                try:
                    total += len(os.listdir(f"/proc/{name}/task"))
                except OSError:
                    pass  # gone meanwhile
        return max(0, total - self.extra)
