"""The sandbox interface (in the spirit of SWE-ReX): lifecycle (open a workspace, close it) and operations
(run a command or a Python snippet with limits; read and write workspace files).

A :class:`Workspace` is a private working copy of an environment's ``public/`` files that persists across the
steps of one episode. Backends live one per module (``local``, ``docker``) with their own config model and are
imported lazily by :func:`get_backend`.
"""

from __future__ import annotations

import abc
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Mapping, Self, Sequence

from store.common import JSON

from ..config import SandboxSettings
from ..errors import SandboxError
from .text import head_tail

#: what a run is recorded with besides its command (env_id, run_id, trajectory_id, executor)
RunMeta = Mapping[str, str | None]

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
    def from_settings(cls, s: SandboxSettings) -> "Limits":
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
    isolation: dict[str, JSON] = field(default_factory=dict)

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


def new_run_id() -> str:
    return f"sbx-{uuid.uuid4().hex[:12]}"


class Workspace(abc.ABC):
    """A working copy that persists across the steps of an episode."""

    path: Path

    @abc.abstractmethod
    def run(self, command: Sequence[str] | str, *, limits: Limits | None = None,
            meta: RunMeta | None = None, warm: bool | None = None) -> RunResult:
        """Run a command (argv list, or a shell string run by ``/bin/sh -c``) inside the workspace. ``warm`` asks
        for a pre-started interpreter where the backend keeps one (a hint: others run every command cold)."""

    def run_python(self, code: str, *, limits: Limits | None = None, meta: RunMeta | None = None,
                   filename: str = "_step.py", warm: bool | None = None) -> RunResult:
        self.write_file(filename, code.encode())
        return self.run(["python", filename], limits=limits, meta=meta, warm=warm)

    @abc.abstractmethod
    def read_file(self, relpath: str) -> bytes: ...

    @abc.abstractmethod
    def write_file(self, relpath: str, data: bytes) -> None: ...

    @abc.abstractmethod
    def close(self) -> None: ...

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class HostFolderFiles:
    """read_file / write_file for workspaces whose files live in a host folder (``self.path``): paths are
    resolved and must stay inside it. ``_after_write`` lets a backend fix ownership or modes."""

    path: Path

    def _safe(self, relpath: str) -> Path:
        root = self.path.resolve()
        target = (self.path / relpath).resolve()
        if target != root and root not in target.parents:
            raise SandboxError(f"path {relpath!r} is outside the workspace")
        return target

    def read_file(self, relpath: str) -> bytes:
        try:
            return self._safe(relpath).read_bytes()
        except FileNotFoundError:
            raise SandboxError(f"{relpath}: no such file in the workspace") from None

    def write_file(self, relpath: str, data: bytes) -> None:
        target = self._safe(relpath)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        self._after_write(target)

    def _after_write(self, target: Path) -> None:
        """Called after each write (default: nothing)."""


class SandboxBackend(abc.ABC):
    name: str = ""

    @abc.abstractmethod
    def open(self, source: Path | None = None, *, label: str | None = None) -> Workspace:
        """A fresh workspace holding a copy of ``source`` (an environment's public/ dir, or any folder)."""

    def close(self) -> None:
        """Release what the backend holds (warm workers, clients)."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
