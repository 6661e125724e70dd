"""The sandbox interface (in the spirit of SWE-ReX): lifecycle (open a workspace, close it) and operations
(run a command or a Python snippet with limits; read and write workspace files).

A :class:`Workspace` is a private working copy of an environment's ``public/`` files that persists across the
steps of one episode. Backends live one per module (``local``, ``docker``) with their own config model and are
imported lazily by :func:`get_backend`.
"""

from __future__ import annotations

import abc
import errno
import shutil
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Self, Sequence

from store import Store
from store.common import JSON

from ..config import SandboxSettings
from ..errors import FileTooLarge, SandboxError, WorkspaceFault
from .text import head_tail

#: the isolation features a run had (namespaces, cgroups, warm, ...): on/off, or a name (mode, image)
Isolation = dict[str, JSON]

#: run statuses, most specific cause first
STATUSES = ("ok", "error", "timeout", "memory", "killed", "output_limit")


@dataclass
class Limits:
    timeout_s: float = 300.0  #: wall time
    cpu_s: float = 600.0  #: CPU time (all threads)
    memory_mb: int = 4096  #: address space / memory (>= 1024: pandas and sklearn need it to import)
    max_procs: int = 64  #: processes + threads
    max_file_mb: int = 512  #: largest file written
    max_output_kb: int = 4096  #: output kept in the log; past it the run is stopped with status output_limit
    max_disk_mb: int = 2048  #: disk a workspace may fill (a size-limited tmpfs where the machine allows)
    tail_chars: int = 4000  #: characters of stdout/stderr kept for the agent (head + tail)

    def to_dict(self) -> dict[str, float]:
        return asdict(self)

    @classmethod
    def from_settings(cls, s: SandboxSettings) -> Limits:
        return cls(timeout_s=s.timeout_s, cpu_s=s.cpu_s, memory_mb=s.memory_mb, max_procs=s.max_procs,
                   max_file_mb=s.max_file_mb, max_output_kb=s.max_output_kb, max_disk_mb=s.max_disk_mb)


@dataclass
class RunResult:
    run_id: str
    status: str  #: one of STATUSES
    exit_code: int | None
    wall_s: float
    cpu_s: float = 0.0
    peak_rss_mb: float = 0.0
    stdout_tail: str = ""
    stderr_tail: str = ""
    log_path: str | None = None
    warnings: list[str] = field(default_factory=list)
    #: isolation features active during the run (namespaces, cgroups, warm, ...)
    isolation: Isolation = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def to_dict(self) -> dict[str, JSON]:
        return asdict(self)

    def observation(self, max_chars: int = 4000) -> str:
        """What an agent sees: status line plus the tails of stdout and stderr."""
        parts = [f"[exit {self.exit_code} · {self.status} · {self.wall_s:.2f}s]"]
        if self.stdout_tail:
            parts.append(self.stdout_tail)
        if self.stderr_tail:
            parts.append("[stderr]\n" + self.stderr_tail)
        return head_tail("\n".join(parts), max_chars)


def isolation_label(iso: Isolation) -> str:
    """One line for a run's isolation record (the bench table's column, the same record `sandbox run` prints)."""
    if iso.get("mode") == "docker":
        return "docker: container, network none" + (", own uid" if iso.get("unprivileged_uid") else "")
    parts = ["namespaces" if iso.get("namespaces") else "UNISOLATED (no namespaces)"]
    if iso.get("user_namespace"):
        parts[0] += " in a user namespace"
    run_as = str(iso.get("run_as", ""))
    parts.append("uid nobody" if "nobody" in run_as else "own uid" if iso.get("unprivileged_uid") else "uid kept")
    limits = iso.get("limits")
    kinds = set()
    for key in ("processes", "memory"):
        how = str(limits.get(key, "")) if isinstance(limits, dict) else ""
        kinds.add(" ".join(how.split()[:2]) if how.startswith("cgroup") else "rlimits")
    label = " + ".join(sorted(kinds))
    if iso.get("cgroup") and kinds == {"rlimits"}:
        label += f" + cgroup {iso['cgroup']} (kill, CPU time)"
    parts.append(label)
    parts.append("warm" if iso.get("warm") else "cold")
    return f"{iso.get('mode', '?')}: " + ", ".join(parts)


def new_run_id() -> str:
    return f"sbx-{uuid.uuid4().hex[:12]}"


@dataclass(frozen=True)
class RunMeta:
    """What a run is recorded with besides its command: where it belongs."""

    env_id: str | None = None
    run_id: str | None = None  #: the training, eval or synthesis run
    trajectory_id: str | None = None
    executor: str | None = None  #: inline, local, ray, cli


def record_start(store: Store | None, *, run_id: str, backend: str, argv: Sequence[str], limits: Limits,
                 isolation: Isolation, warnings: list[str], log_path: Path, workdir: str,
                 meta: RunMeta | None) -> None:
    """The run's row, status ``running``, with the limits and isolation it runs under."""
    if store is None:
        return
    meta = meta or RunMeta()
    store.sandbox.start({"id": run_id, "backend": backend, "command": " ".join(argv), "limits": limits.to_dict(),
                         "isolation": isolation, "warnings": warnings, "log_path": str(log_path), "workdir": workdir,
                         "env_id": meta.env_id, "run_id": meta.run_id, "trajectory_id": meta.trajectory_id,
                         "executor": meta.executor})


def record_finish(store: Store | None, result: RunResult) -> None:
    if store is not None:
        store.sandbox.finish(result.run_id, status=result.status, exit_code=result.exit_code, wall_s=result.wall_s,
                             cpu_s=result.cpu_s, peak_rss_mb=result.peak_rss_mb, stdout_tail=result.stdout_tail,
                             stderr_tail=result.stderr_tail, warnings=result.warnings)


class Workspace(abc.ABC):
    """A working copy that persists across the steps of an episode. Callers reach its files only through these
    methods (paths relative to the workspace, never a host path), so a backend may keep it anywhere."""

    @abc.abstractmethod
    def run(self, command: Sequence[str] | str, *, limits: Limits | None = None, meta: RunMeta | None = None,
            warm: bool | None = None) -> RunResult:
        """Run a command (argv list, or a shell string run by ``/bin/sh -c``) inside the workspace. ``warm`` asks
        for a pre-started interpreter where the backend keeps one (a hint: others run every command cold)."""

    def run_python(self, code: str, *, limits: Limits | None = None, meta: RunMeta | None = None,
                   filename: str = "_step.py", warm: bool | None = None) -> RunResult:
        self.write_file(filename, code.encode())
        return self.run(["python", filename], limits=limits, meta=meta, warm=warm)

    @abc.abstractmethod
    def size(self, relpath: str) -> int | None:
        """Bytes of a regular file (following links that stay inside); None when there is none."""

    @abc.abstractmethod
    def read_file(self, relpath: str, *, max_bytes: int | None = None) -> bytes:
        """A file's content; :class:`FileTooLarge` (before reading) when it is over ``max_bytes``."""

    @abc.abstractmethod
    def write_file(self, relpath: str, data: bytes) -> None: ...

    @abc.abstractmethod
    def link(self, relpath: str, target: str) -> None:
        """A symbolic link at ``relpath`` to ``target``, relative to the link's folder and inside the workspace."""

    @abc.abstractmethod
    def copy_in(self, source: Path, relpath: str = ".") -> None:
        """Copy a host file, or a folder's contents, to ``relpath``."""

    @abc.abstractmethod
    def copy_out(self, relpath: str, dest: Path, *, max_bytes: int | None = None) -> None:
        """Copy a file or folder to the host path ``dest``, streaming; regular files only (a link or device in it
        is refused); :class:`FileTooLarge` when the total passes ``max_bytes``."""

    @abc.abstractmethod
    def remove(self, relpath: str) -> None:
        """Delete a file or folder (nothing when it does not exist)."""

    @abc.abstractmethod
    def close(self) -> None: ...

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class HostFolderFiles:
    """The file operations of workspaces whose files live in a host folder (``self.path``): paths are resolved and
    must stay inside it. ``_after_write`` lets a backend fix ownership or modes."""

    path: Path

    def _safe(self, relpath: str) -> Path:
        root = self.path.resolve()
        target = (self.path / relpath).resolve()
        if target != root and root not in target.parents:
            raise WorkspaceFault(f"path {relpath!r} is outside the workspace"
                                 + (" (a link made in it leads out)" if ".." not in Path(relpath).parts else ""))
        return target

    def size(self, relpath: str) -> int | None:
        try:
            target = self._safe(relpath)
        except SandboxError:
            return None
        return target.stat().st_size if target.is_file() else None

    def read_file(self, relpath: str, *, max_bytes: int | None = None) -> bytes:
        size = self.size(relpath)
        if size is None:
            raise SandboxError(f"{relpath}: no such file in the workspace")
        if max_bytes is not None and size > max_bytes:
            raise FileTooLarge(relpath, size, max_bytes)
        with open(self._safe(relpath), "rb") as f:
            return f.read(size if max_bytes is None else max_bytes + 1)

    def write_file(self, relpath: str, data: bytes) -> None:
        target = self._safe(relpath)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        except OSError as exc:  # what a run left there: a folder in the file's place, a file in a folder's, ...
            if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EROFS) and not getattr(self, "quota", False):
                raise SandboxError(f"cannot write {relpath}: {exc.strerror or exc} (the host's disk)") from None
            raise WorkspaceFault(f"cannot write {relpath}: {exc.strerror or exc}"
                                 + (" (a folder is in its place)" if target.is_dir() else "")) from None
        self._after_write(target)

    def link(self, relpath: str, target: str) -> None:
        where = self.path / relpath
        self._safe(str(Path(relpath).parent / target))  # the target must stay inside
        self._safe(str(Path(relpath).parent))
        try:
            where.parent.mkdir(parents=True, exist_ok=True)
            if not where.is_symlink():
                where.symlink_to(target)
        except OSError as exc:
            raise WorkspaceFault(f"cannot link {relpath}: {exc.strerror or exc}") from None
        self._after_write(where)

    def copy_in(self, source: Path, relpath: str = ".") -> None:
        target = self._safe(relpath)
        if Path(source).is_dir():
            shutil.copytree(source, target, symlinks=True, dirs_exist_ok=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
        self._after_write(target)

    def copy_out(self, relpath: str, dest: Path, *, max_bytes: int | None = None) -> None:
        source = self._safe(relpath)  # a link to a file inside the workspace is followed
        if not (source.is_file() or source.is_dir()):
            raise SandboxError(f"{relpath}: no regular file or folder in the workspace")
        files = [source] if source.is_file() else sorted(source.rglob("*"))
        total = 0
        for f in files:
            if f.is_symlink() or not (f.is_file() or f.is_dir()):
                raise SandboxError(f"{relpath}: {f.relative_to(source)} is not a regular file")
            total += f.stat().st_size if f.is_file() else 0
            if max_bytes is not None and total > max_bytes:
                raise FileTooLarge(relpath, total, max_bytes)
        dest = Path(dest)
        for f in files:
            out = dest if f == source else dest / f.relative_to(source)
            if f.is_dir():
                out.mkdir(parents=True, exist_ok=True)
                continue
            out.parent.mkdir(parents=True, exist_ok=True)
            with open(f, "rb") as src, open(out, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
        if source.is_dir():
            dest.mkdir(parents=True, exist_ok=True)

    def remove(self, relpath: str) -> None:
        target = self.path / relpath
        self._safe(str(Path(relpath).parent))
        try:
            if target.is_dir() and not target.is_symlink():
                if self._safe(relpath) == self.path.resolve():
                    raise SandboxError("cannot remove the workspace itself")
                shutil.rmtree(target)
            else:
                target.unlink(missing_ok=True)
        except OSError as exc:
            raise WorkspaceFault(f"cannot remove {relpath}: {exc.strerror or exc}") from None

    def _after_write(self, target: Path) -> None:
        """Called after each write (default: nothing)."""


class SandboxBackend(abc.ABC):
    name: str = ""
    #: the options of ``get_backend`` this backend takes besides store, settings, root and limits
    OPTIONS: tuple[str, ...] = ()
    store: Store | None
    default_limits: Limits  #: what a run gets when it names no limits

    @abc.abstractmethod
    def open(self, source: Path | None = None, *, label: str | None = None, profile: str = "agent") -> Workspace:
        """A fresh workspace holding a copy of ``source`` (an environment's public/ dir, or any folder). Its runs
        hide the data packages (``profile="agent"``, :mod:`engine.sandbox.hide`) unless it is a generator
        program's workspace (``profile="generator"``), which loads its real dataset by name."""

    @property
    def isolation_note(self) -> str:
        """What a run record says about the isolation this backend's runs have (``unisolated`` where none)."""
        return self.name

    def close(self) -> None:
        """Release what the backend holds (warm workers, clients)."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
