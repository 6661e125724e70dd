"""Executors: the one way to run many pieces of work at once — sandbox jobs, eval episodes, GRPO rollouts and
synthesis attempts. ``local`` (threads of this process, the default), ``process`` (spawned processes) or ``ray``
(a local Ray started on demand, or the cluster at ``address``). Each worker owns a store connection and the
configured sandbox backend (:mod:`.worker`); results stream back as they finish (:mod:`.base`)."""

from __future__ import annotations

from typing import Callable

from store import Store

from ..config import SandboxSettings, load_settings
from ..errors import SandboxError
from .base import Executor, WorkerLost, WorkFn
from .jobs import SandboxJob, run_sandbox_job
from .local import LocalExecutor
from .process import ProcessExecutor
from .ray import RayExecutor
from .worker import Worker, WorkerSpec

KINDS = ("local", "process", "ray")


def get_executor(kind: str | None = None, *, workers: int | None = None, store: Store | None = None,
                 sandbox: SandboxSettings | None = None, address: str | None = None, root: str | None = None,
                 on_lost: Callable[[str], None] | None = None) -> Executor:
    """An executor of ``kind`` with ``workers`` workers whose code runs under ``sandbox``; every unset argument
    comes from the settings (``[executor] kind, workers, ray_address``, ``[sandbox]``). Workers of the ``local``
    kind share ``store``; the others open their own connection to its file."""
    settings = load_settings()
    kind = kind or settings.executor.kind
    workers = workers or settings.executor.workers
    in_memory = store is not None and str(store.path) == ":memory:"
    spec = WorkerSpec(store_path=None if store is None or in_memory else str(store.path),
                      sandbox=sandbox or settings.sandbox, root=root)
    if kind == "local":
        return LocalExecutor(spec, workers=workers, store=store, on_lost=on_lost)
    if in_memory:
        raise SandboxError(f"the {kind} executor needs a store file, not an in-memory store")
    if kind == "process":
        return ProcessExecutor(spec, workers=workers, on_lost=on_lost)
    if kind == "ray":
        return RayExecutor(spec, workers=workers, address=address or settings.executor.ray_address,
                           on_lost=on_lost)
    raise SandboxError(f"unknown executor {kind!r}; expected {', '.join(KINDS)}")


__all__ = ["Executor", "KINDS", "SandboxJob", "WorkFn", "Worker", "WorkerLost", "WorkerSpec", "get_executor",
           "run_sandbox_job"]
