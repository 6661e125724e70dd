"""The executor interface and the job every executor runs: open a fresh workspace, run, record, close."""

from __future__ import annotations

import abc
import atexit
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from store import Store

from ..errors import SandboxError
from ..sandbox import get_backend
from ..sandbox.base import Limits, RunResult


@dataclass
class SandboxJob:
    """One unit of sandboxed work: a command or a Python snippet in a fresh workspace."""

    command: Sequence[str] | str | None = None  #: argv, or a shell string
    code: str | None = None  #: a Python snippet (goes to the warm worker where enabled)
    source: str | None = None  #: folder copied into the workspace (an environment's public/ dir)
    files: dict[str, bytes] = field(default_factory=dict)  #: extra files written into the workspace first
    limits: Limits | None = None
    backend: str = "local"
    warm: bool | None = None
    meta: dict[str, Any] = field(default_factory=dict)  #: env_id, run_id, trajectory_id recorded with the run
    label: str | None = None

    def __post_init__(self) -> None:
        if (self.command is None) == (self.code is None):
            raise SandboxError("a sandbox job needs exactly one of command and code")


#: per process: the store and the backends a worker keeps between jobs (the warm worker lives on)
_CACHE: dict[Any, Any] = {}


def _worker_store(store_path: str | None):
    key = ("store", store_path)
    if key not in _CACHE and store_path is not None:
        _CACHE[key] = Store(store_path)
    return _CACHE.get(key)


def _worker_backend(name: str, store_path: str | None, warm: bool | None, root: str | None):
    key = ("backend", name, store_path, warm, root)
    if key not in _CACHE:
        options: dict[str, Any] = {"root": root}
        if name == "local" and warm is not None:
            options["warm"] = warm
        _CACHE[key] = get_backend(name, store=_worker_store(store_path), **options)
    return _CACHE[key]


@atexit.register
def _close_cache() -> None:
    for key, value in list(_CACHE.items()):
        try:
            value.close()
        except Exception:
            pass
    _CACHE.clear()


def run_job(job: SandboxJob, store_path: str | None = None, executor: str = "inline",
            root: str | None = None) -> dict[str, Any]:
    """Run one job in this process; returns the RunResult as a dict (picklable, JSON-able)."""
    backend = _worker_backend(job.backend, store_path, job.warm, root)
    meta = {**job.meta, "executor": executor}
    with backend.open(Path(job.source) if job.source else None, label=job.label) as ws:
        for rel, data in job.files.items():
            ws.write_file(rel, data)
        if job.code is not None:
            kwargs = {"warm": job.warm} if job.backend == "local" else {}
            result = ws.run_python(job.code, limits=job.limits, meta=meta, **kwargs)
        else:
            result = ws.run(job.command, limits=job.limits, meta=meta)
    return result.to_dict()


def result_from_dict(data: dict[str, Any]) -> RunResult:
    names = {f.name for f in dataclasses.fields(RunResult)}
    return RunResult(**{k: v for k, v in data.items() if k in names})


class Executor(abc.ABC):
    name: str = ""

    @abc.abstractmethod
    def map(self, jobs: Iterable[SandboxJob], *, progress=None) -> list[RunResult]:
        """Run the jobs concurrently; results in the jobs' order. ``progress(n_done, n_total)`` if given."""

    def close(self) -> None:
        """Release workers."""

    def __enter__(self) -> "Executor":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
