"""Per-run cgroups (v1 here; v2 where it is the only hierarchy): a pids limit (RLIMIT_NPROC is ignored for root),
a memory limit, CPU accounting, and a reliable way to kill every process a run started."""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
CONTROLLERS = ("pids", "memory", "cpuacct")
#: the folder name of a run's cgroup is PREFIX + the run's id
PREFIX = "sandmle-"


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


def available() -> dict[str, bool]:
    return {c: controller_dir(c) is not None for c in CONTROLLERS}


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


@dataclass
class RunCgroup:
    """The cgroups of one run: created with limits, joined by the jail, killed and removed at the end."""

    name: str
    dirs: dict[str, Path] = field(default_factory=dict)

    @classmethod
    def create(cls, name: str, *, max_procs: int, memory_mb: int) -> "RunCgroup":
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
    def existing(cls, name: str) -> "RunCgroup":
        """The cgroups of run ``name`` that exist now (made by another process, maybe one that was killed)."""
        group = cls(name)
        for controller in CONTROLLERS:
            parent = controller_dir(controller)
            if parent is not None and (parent / f"{PREFIX}{name}").is_dir():
                group.dirs[controller] = parent / f"{PREFIX}{name}"
        return group

    @property
    def procs_files(self) -> list[str]:
        return [str(folder / "cgroup.procs") for folder in self.dirs.values()]

    def features(self) -> dict[str, bool]:
        return {f"cgroup_{c}": c in self.dirs for c in CONTROLLERS}

    def pids(self) -> list[int]:
        folder = self.dirs.get("pids") or self.dirs.get("memory") or self.dirs.get("cpuacct")
        text = _read(folder / "cgroup.procs") if folder else None
        return [int(p) for p in text.split()] if text else []

    def pids_limit_hit(self) -> bool:
        folder = self.dirs.get("pids")
        text = _read(folder / "pids.events") if folder else None
        if not text:
            return False
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "max" and int(value or 0) > 0:
                return True
        return False

    def memory_limit_hit(self) -> bool:
        d = self.dirs.get("memory")
        if not d:
            return False
        text = _read(d / "memory.oom_control") or ""
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill" and int(value or 0) > 0:
                return True
        return int((_read(d / "memory.failcnt") or "0").strip() or 0) > 0

    def cpu_s(self) -> float | None:
        d = self.dirs.get("cpuacct")
        text = _read(d / "cpuacct.usage") if d else None
        return int(text) / 1e9 if text else None

    def kill_all(self, timeout_s: float = 5.0) -> bool:
        """SIGKILL every process in the run's cgroup until none is left (forks racing the kill included)."""
        deadline = time.monotonic() + timeout_s
        while True:
            pids = self.pids()
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

    def remove(self) -> None:
        self.kill_all()
        for path in self.dirs.values():
            _rmdir(path)
        self.dirs.clear()


def run_cgroup_names() -> list[str]:
    """The names of every run cgroup present (in this process's part of the hierarchy), whoever made it."""
    names: set[str] = set()
    for controller in CONTROLLERS:
        parent = controller_dir(controller)
        if parent is not None:
            names.update(p.name[len(PREFIX):] for p in parent.glob(f"{PREFIX}*") if p.is_dir())
    return sorted(names)


def _rmdir(path: Path) -> None:
    for _ in range(200):
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.005)
