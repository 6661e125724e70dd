"""Executors: the one way to run many pieces of work at once — sandbox jobs, eval episodes, GRPO rollouts and
synthesis attempts. ``local`` (threads of this process, the default), ``process`` (spawned processes) or ``ray``
(a local Ray started on demand, or the cluster at ``address``). Each worker owns a store connection and the
configured sandbox backend (:mod:`.worker`); results stream back as they finish (:mod:`.base`)."""

from __future__ import annotations

from typing import Callable

from store import Store

from ..backends import EXECUTORS
from ..config import SandboxSettings, load_settings
from ..errors import SandboxError
from .base import Executor, WorkerLost, WorkFn
from .jobs import SandboxJob, run_sandbox_job
from .worker import Worker, WorkerSpec


def get_executor(kind: str | None = None, *, workers: int | None = None, store: Store | None = None,
                 sandbox: SandboxSettings | None = None, address: str | None = None, root: str | None = None,
                 on_lost: Callable[[str], None] | None = None) -> Executor:
    """An executor of ``kind`` (one of :data:`engine.backends.EXECUTORS`) with ``workers`` workers whose code runs
    under ``sandbox``; every unset argument comes from the settings (``[executor] kind, workers, ray_address``,
    ``[sandbox]``). Workers of an executor that runs ``in_process`` (local: threads) share ``store``; the others
    open their own connection to its file."""
    settings = load_settings()
    kind = kind or settings.executor.kind
    cls = executor_class(kind)
    workers = workers or settings.executor.workers
    in_memory = store is not None and str(store.path) == ":memory:"
    if in_memory and not cls.in_process:
        raise SandboxError(f"the {kind} executor needs a store file, not an in-memory store")
    spec = WorkerSpec(store_path=None if store is None or in_memory else str(store.path),
                      sandbox=sandbox or settings.sandbox, root=root)
    return cls(spec, workers=workers, store=store, address=address or settings.executor.ray_address,
               on_lost=on_lost)


def executor_class(kind: str) -> type[Executor]:
    """The class of the executor ``kind`` (e.g. to ask whether it runs ``in_process`` before starting one)."""
    if kind not in EXECUTORS:
        raise SandboxError(EXECUTORS.unknown(kind))
    return EXECUTORS.get(kind).load()


__all__ = ["Executor", "executor_class", "SandboxJob", "WorkFn", "Worker", "WorkerLost", "WorkerSpec", "get_executor",
           "run_sandbox_job"]
