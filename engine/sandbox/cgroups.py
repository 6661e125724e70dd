"""Per-run cgroups: a pids limit (RLIMIT_NPROC is ignored for root), a memory limit, CPU accounting, and a
reliable way to kill every process a run started.

Two kinds, the same interface (:class:`RunCgroup`):

- **cgroup v1** (:class:`V1Cgroup`), where its controllers are writable (root, as on CI here): ``pids.max``,
  ``memory.limit_in_bytes``, ``cpuacct``;
- **cgroup v2, delegated** (:class:`V2Cgroup`), where this process's own v2 cgroup is writable by it — what
  systemd gives a user's ``systemd-run --user --scope -p Delegate=yes ...`` (or root on a v2-only machine).
  The process moves itself into a leaf (:data:`HOST_LEAF`) so that its cgroup may enable ``pids``, ``memory`` and
  ``cpu`` for its children, then each run gets a child with ``pids.max`` and ``memory.max`` (the controllers the
  parent offers), ``cpu.stat`` and ``cgroup.kill``.

Where neither is there, runs have no cgroup and the limits are rlimits (see :func:`limits_in_force`)."""

from __future__ import annotations

import functools
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

ROOT = Path("/sys/fs/cgroup")
CONTROLLERS = ("pids", "memory", "cpuacct")
#: the folder name of a run's cgroup is PREFIX + the run's id
PREFIX = "sandmle-"
#: the v2 leaf this process (and everything it starts) moves into, so its parent can enable controllers
HOST_LEAF = "sandmle-host"
#: v2 controllers a run cgroup uses, and the v1 name each stands for
V2_CONTROLLERS = {"pids": "pids", "memory": "memory", "cpu": "cpuacct"}


class RunCgroup(Protocol):
    """The cgroup(s) of one run: created with limits, joined by the jail, killed and removed at the end."""

    name: str
    version: str

    @property
    def procs_files(self) -> list[str]: ...
    def has(self, controller: str) -> bool: ...
    def features(self) -> dict[str, bool]: ...
    def pids(self) -> list[int]: ...
    def pids_limit_hit(self) -> bool: ...
    def memory_limit_hit(self) -> bool: ...
    def cpu_s(self) -> float | None: ...
    def kill_all(self, timeout_s: float = 5.0) -> bool: ...
    def remove(self) -> None: ...


def _write(path: Path, value: str) -> bool:
    try:
        path.write_text(value)
        return True
    except OSError:
        return False


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def _keyed(text: str | None, key: str) -> int:
    """The value of ``key`` in a flat keyed file (``pids.events``, ``memory.events``, ``cpu.stat``)."""
    for line in (text or "").splitlines():
        name, _, value = line.partition(" ")
        if name == key:
            try:
                return int(value)
            except ValueError:
                return 0
    return 0


def _kill_listed(pids_of, timeout_s: float) -> bool:
    """SIGKILL every pid ``pids_of()`` lists until none is left (forks racing the kill included)."""
    deadline = time.monotonic() + timeout_s
    while True:
        pids = pids_of()
        if not pids:
            return True
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        if time.monotonic() > deadline:
            return False
        time.sleep(0.002)


def _rmdir(path: Path) -> None:
    for _ in range(200):
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.005)


# ---------------------------------------------------------------------------------------------------- cgroup v1
def _own_path(controller: str) -> str:
    """This process's cgroup in a v1 hierarchy (runs nest below it, inheriting its limits)."""
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, names, path = line.split(":", 2)
            if controller in names.split(","):
                return path
    except OSError:
        pass
    return "/"


def controller_dir(controller: str) -> Path | None:
    """The writable v1 directory of ``controller`` where runs are created, or None."""
    base = ROOT / controller
    if not (base / "cgroup.procs").exists():
        return None
    parent = base / _own_path(controller).lstrip("/")
    if not parent.is_dir():
        parent = base
    return parent if os.access(parent, os.W_OK) else None


def v1_available() -> dict[str, bool]:
    return {c: controller_dir(c) is not None for c in CONTROLLERS}


@dataclass
class V1Cgroup:
    name: str
    dirs: dict[str, Path] = field(default_factory=dict)
    version: str = "v1"

    @classmethod
    def create(cls, name: str, *, max_procs: int, memory_mb: int) -> "V1Cgroup":
        group = cls(name)
        for controller in CONTROLLERS:
            parent = controller_dir(controller)
            if parent is None:
                continue
            path = parent / f"{PREFIX}{name}"
            try:
                path.mkdir(exist_ok=True)
            except OSError:
                continue
            ok = True
            if controller == "pids":
                ok = _write(path / "pids.max", str(max_procs))
            elif controller == "memory":
                limit = str(memory_mb * 1024 * 1024)
                ok = _write(path / "memory.limit_in_bytes", limit)
                _write(path / "memory.memsw.limit_in_bytes", limit)
            if ok:
                group.dirs[controller] = path
            else:
                _rmdir(path)
        return group

    @classmethod
    def existing(cls, name: str) -> "V1Cgroup":
        group = cls(name)
        for controller in CONTROLLERS:
            parent = controller_dir(controller)
            if parent is not None and (parent / f"{PREFIX}{name}").is_dir():
                group.dirs[controller] = parent / f"{PREFIX}{name}"
        return group

    @property
    def procs_files(self) -> list[str]:
        return [str(folder / "cgroup.procs") for folder in self.dirs.values()]

    def has(self, controller: str) -> bool:
        return controller in self.dirs

    def features(self) -> dict[str, bool]:
        return {f"cgroup_{c}": c in self.dirs for c in CONTROLLERS}

    def pids(self) -> list[int]:
        folder = self.dirs.get("pids") or self.dirs.get("memory") or self.dirs.get("cpuacct")
        text = _read(folder / "cgroup.procs") if folder else None
        return [int(p) for p in text.split()] if text else []

    def pids_limit_hit(self) -> bool:
        folder = self.dirs.get("pids")
        return folder is not None and _keyed(_read(folder / "pids.events"), "max") > 0

    def memory_limit_hit(self) -> bool:
        d = self.dirs.get("memory")
        if not d:
            return False
        if _keyed(_read(d / "memory.oom_control"), "oom_kill") > 0:
            return True
        return int((_read(d / "memory.failcnt") or "0").strip() or 0) > 0

    def cpu_s(self) -> float | None:
        d = self.dirs.get("cpuacct")
        text = _read(d / "cpuacct.usage") if d else None
        return int(text) / 1e9 if text else None

    def kill_all(self, timeout_s: float = 5.0) -> bool:
        return _kill_listed(self.pids, timeout_s)

    def remove(self) -> None:
        self.kill_all()
        for path in self.dirs.values():
            _rmdir(path)
        self.dirs.clear()


# ---------------------------------------------------------------------------------------------------- cgroup v2
def v2_mount() -> Path | None:
    """Where the cgroup v2 hierarchy is mounted: /sys/fs/cgroup (v2 only) or /sys/fs/cgroup/unified (hybrid)."""
    for path in (ROOT, ROOT / "unified"):
        if (path / "cgroup.controllers").exists():
            return path
    return None


def _own_v2() -> str | None:
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            if line.startswith("0::"):
                return line[3:]
    except OSError:
        pass
    return None


def v2_base() -> Path | None:
    """The delegated v2 cgroup run cgroups are made in: this process's own (or the parent of its
    :data:`HOST_LEAF`), when this process may write it; None otherwise."""
    mount, own = v2_mount(), _own_v2()
    if mount is None or own is None:
        return None
    path = mount / own.lstrip("/")
    if path.name == HOST_LEAF:
        path = path.parent
    if not (path.is_dir() and os.access(path, os.W_OK) and os.access(path / "cgroup.procs", os.W_OK)):
        return None
    return path


def v2_offered(base: Path) -> set[str]:
    """The controllers ``base`` can hand to its children (its ``cgroup.controllers``)."""
    return set((_read(base / "cgroup.controllers") or "").split()) & set(V2_CONTROLLERS)


@functools.lru_cache(maxsize=1)
def prepare_v2() -> tuple[str, frozenset[str]] | None:
    """Once per process: move it into the leaf and enable what ``base`` offers for its children. Returns (base,
    the controllers the run cgroups get), or None where there is no delegated v2 cgroup."""
    base = v2_base()
    if base is None:
        return None
    own = v2_mount() / (_own_v2() or "/").lstrip("/")  # type: ignore[operator]  # v2_base found a mount
    if own == base and base != v2_mount():
        leaf = base / HOST_LEAF
        try:
            leaf.mkdir(exist_ok=True)
        except OSError:
            return None
        if not _write(leaf / "cgroup.procs", str(os.getpid())):
            return None
    enabled = set((_read(base / "cgroup.subtree_control") or "").split())
    for controller in sorted(v2_offered(base) - enabled):
        if _write(base / "cgroup.subtree_control", f"+{controller}"):
            enabled.add(controller)
    return str(base), frozenset(enabled & set(V2_CONTROLLERS))


@dataclass
class V2Cgroup:
    name: str
    path: Path
    controllers: frozenset[str]  #: v2 names: pids, memory, cpu
    version: str = "v2"

    @classmethod
    def create(cls, name: str, *, max_procs: int, memory_mb: int) -> "V2Cgroup | None":
        prepared = prepare_v2()
        if prepared is None:
            return None
        base, controllers = prepared
        path = Path(base) / f"{PREFIX}{name}"
        try:
            path.mkdir(exist_ok=True)
        except OSError:
            return None
        ok = set(controllers)
        if "pids" in ok and not _write(path / "pids.max", str(max_procs)):
            ok.discard("pids")
        if "memory" in ok:
            if not _write(path / "memory.max", str(memory_mb * 1024 * 1024)):
                ok.discard("memory")
            _write(path / "memory.swap.max", "0")  # absent without swap accounting: the limit then is RAM only
        return cls(name, path, frozenset(ok))

    @classmethod
    def existing(cls, name: str) -> "V2Cgroup | None":
        base = v2_base()
        if base is None or not (base / f"{PREFIX}{name}").is_dir():
            return None
        return cls(name, base / f"{PREFIX}{name}", frozenset())

    @property
    def procs_files(self) -> list[str]:
        return [str(self.path / "cgroup.procs")]

    def has(self, controller: str) -> bool:
        """``controller`` by its v1 name; CPU time (cpu.stat) is accounted in every v2 cgroup."""
        return controller == "cpuacct" or controller in self.controllers

    def features(self) -> dict[str, bool]:
        # cpu.stat is there whether or not the cpu controller is: CPU time is always accounted
        return {"cgroup_pids": "pids" in self.controllers, "cgroup_memory": "memory" in self.controllers,
                "cgroup_cpuacct": True}

    def pids(self) -> list[int]:
        text = _read(self.path / "cgroup.procs")
        return [int(p) for p in text.split()] if text else []

    def pids_limit_hit(self) -> bool:
        return "pids" in self.controllers and _keyed(_read(self.path / "pids.events"), "max") > 0

    def memory_limit_hit(self) -> bool:
        if "memory" not in self.controllers:
            return False
        events = _read(self.path / "memory.events")
        return _keyed(events, "oom_kill") > 0 or _keyed(events, "oom") > 0

    def cpu_s(self) -> float | None:
        text = _read(self.path / "cpu.stat")
        return _keyed(text, "usage_usec") / 1e6 if text else None

    def kill_all(self, timeout_s: float = 5.0) -> bool:
        """``cgroup.kill``: the kernel kills every process of the run at once (forks racing it included)."""
        _write(self.path / "cgroup.kill", "1")
        return _kill_listed(self.pids, timeout_s)

    def remove(self) -> None:
        self.kill_all()
        _rmdir(self.path)


# ---------------------------------------------------------------------------------------------------- choice
def version() -> str | None:
    """Which cgroups runs get here: ``v1`` (writable v1 controllers), ``v2`` (a delegated v2 cgroup) or None."""
    if any(v1_available().values()):
        return "v1"
    return "v2" if v2_base() is not None else None


def available() -> dict[str, bool]:
    """Controller (v1 names) -> whether runs get it here."""
    v = version()
    if v == "v1":
        return v1_available()
    if v == "v2":
        offered = v2_offered(v2_base())  # type: ignore[arg-type]  # version() found it
        return {"pids": "pids" in offered, "memory": "memory" in offered, "cpuacct": True}
    return {c: False for c in CONTROLLERS}


def create(name: str, *, max_procs: int, memory_mb: int) -> RunCgroup | None:
    """The cgroup of run ``name`` with its limits, of the kind :func:`version` says; None where there is none."""
    v = version()
    if v == "v1":
        return V1Cgroup.create(name, max_procs=max_procs, memory_mb=memory_mb)
    if v == "v2":
        return V2Cgroup.create(name, max_procs=max_procs, memory_mb=memory_mb)
    return None


def existing(name: str) -> RunCgroup | None:
    """The cgroups of run ``name`` that exist now (made by another process, maybe one that was killed)."""
    group = V1Cgroup.existing(name)
    if group.dirs:
        return group
    return V2Cgroup.existing(name)


def run_cgroup_names() -> list[str]:
    """The names of every run cgroup present (in this process's part of the hierarchies), whoever made it."""
    names: set[str] = set()
    parents = [controller_dir(c) for c in CONTROLLERS] + [v2_base()]
    for parent in parents:
        if parent is not None:
            names.update(p.name[len(PREFIX):] for p in parent.glob(f"{PREFIX}*")
                         if p.is_dir() and p.name != HOST_LEAF)
    return sorted(names)


def limits_in_force(cg: RunCgroup | None, *, root: bool, userns: bool) -> dict[str, str]:
    """What enforces each limit of a run: a cgroup file, or the rlimit it falls back to (always set as well)."""
    return _limits(cg.has if cg is not None else None, cg.version if cg is not None else None, root, userns)


def limits_here(*, root: bool, userns: bool) -> dict[str, str]:
    """What would enforce each limit of a run started now (what ``sandmle doctor`` states)."""
    v, offered = version(), available()
    return _limits((lambda c: offered.get(c, False)) if v else None, v, root, userns)


def _limits(has, v: str | None, root: bool, userns: bool) -> dict[str, str]:
    files = {"v1": {"pids": "pids.max", "memory": "memory.limit_in_bytes", "cpuacct": "cpuacct.usage"},
             "v2": {"pids": "pids.max", "memory": "memory.max", "cpuacct": "cpu.stat"}}

    def by(controller: str, rlimit: str) -> str:
        return f"cgroup {v} {files[v][controller]}" if has is not None and v and has(controller) else rlimit

    nproc = ("RLIMIT_NPROC (counted in the run's own user namespace)" if userns else
             "RLIMIT_NPROC (ignored for root: NOT enforced)" if root else "RLIMIT_NPROC")
    return {"processes": by("pids", nproc), "memory": by("memory", "RLIMIT_AS"),
            "cpu_time": by("cpuacct", "RLIMIT_CPU (per process)")}
