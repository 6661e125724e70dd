"""The sandbox job: one command or Python snippet in a fresh workspace of the worker's sandbox backend, recorded
in the store as a sandbox run (by the worker's own store connection)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from ..errors import SandboxError
from ..sandbox.base import Limits, RunMeta, RunResult
from .worker import Worker


@dataclass
class SandboxJob:
    """One unit of sandboxed work: a command or a Python snippet in a fresh workspace."""

    command: Sequence[str] | str | None = None  #: argv, or a shell string
    code: str | None = None  #: a Python snippet (goes to the warm worker where enabled)
    source: str | None = None  #: folder copied into the workspace (an environment's public/ dir)
    files: dict[str, bytes] = field(default_factory=dict)  #: extra files written into the workspace first
    limits: Limits | None = None
    warm: bool | None = None
    meta: RunMeta = field(default_factory=RunMeta)  #: env_id, run_id, trajectory_id recorded with the run
    label: str | None = None

    def __post_init__(self) -> None:
        if (self.command is None) == (self.code is None):
            raise SandboxError("a sandbox job needs exactly one of command and code")


def run_sandbox_job(worker: Worker, job: SandboxJob) -> RunResult:
    """Run ``job`` in a fresh workspace of the worker's backend (the executor's work function)."""
    meta = dataclasses.replace(job.meta, executor=worker.spec.executor)
    with worker.sandbox.open(Path(job.source) if job.source else None, label=job.label) as ws:
        for rel, data in job.files.items():
            ws.write_file(rel, data)
        if job.code is not None:
            return ws.run_python(job.code, limits=job.limits, meta=meta, warm=job.warm)
        return ws.run(job.command or [], limits=job.limits, meta=meta, warm=job.warm)
