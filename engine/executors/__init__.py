"""Executors run many sandbox jobs at once: a local process pool (default) or Ray. Each job is recorded in the
store as a sandbox run by the process that runs it (each process opens its own Store; writes wait on a busy
timeout with BEGIN IMMEDIATE, so concurrent writers never see "database is locked")."""

from __future__ import annotations

from ..errors import SandboxError
from .base import Executor, SandboxJob, run_job
from .local import LocalExecutor
from .ray import RayExecutor


def get_executor(kind: str = "local", *, store=None, workers: int = 2, address: str | None = None,
                 root: str | None = None) -> Executor:
    """``local`` (a process pool of ``workers``) or ``ray`` (``address`` of a cluster, or a local one)."""
    store_path = str(store.path) if store is not None and str(store.path) != ":memory:" else None
    if kind == "local":
        return LocalExecutor(workers=workers, store_path=store_path, root=root)
    if kind == "ray":
        return RayExecutor(workers=workers, store_path=store_path, address=address, root=root)
    raise SandboxError(f"unknown executor {kind!r}; expected local or ray")


__all__ = ["Executor", "SandboxJob", "get_executor", "run_job"]
