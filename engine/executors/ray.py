"""``ray`` (optional extra ``sandmle[ray]``): each worker is a Ray actor that owns its store connection, sandbox
backend and cache, on a local Ray started here (``num_cpus`` = workers, no dashboard) or on an existing cluster
(``address``; every node needs this project importable and the data dir at the same path, e.g. a shared
filesystem). An actor that dies (its process killed, its node lost) is replaced and its item tried once more."""

from __future__ import annotations

import math
import os
from concurrent.futures import Future
from pathlib import Path
from typing import Any, Callable

from store import Store

from ..errors import SandboxError
from .base import Executor, Slot, WorkFn
from .worker import Worker, WorkerSpec

REPO = Path(__file__).resolve().parent.parent.parent


class RayWorker:
    """The actor class (made remote by the executor, so that importing this module never imports ray)."""

    def __init__(self, spec: WorkerSpec, name: str):
        self.worker = Worker(spec, name=name)

    def call(self, fn: WorkFn, item: Any) -> Any:
        return fn(self.worker, item)

    def close(self) -> None:
        self.worker.close()


class RaySlot(Slot):
    def __init__(self, executor: "RayExecutor", name: str):
        self.executor, self.name = executor, name
        self.actor: Any = None
        self.restart()

    def submit(self, fn: WorkFn, item: Any) -> Future:
        return self.actor.call.remote(fn, item).future()

    def died(self, exc: BaseException) -> bool:
        return isinstance(exc, self.executor.ray.exceptions.RayActorError)

    def restart(self) -> None:
        if self.actor is not None:
            self.executor.ray.kill(self.actor, no_restart=True)
        self.actor = self.executor.actor_class.remote(self.executor.spec, self.name)

    def close(self, wait: bool = True) -> None:
        ray = self.executor.ray
        if wait:
            try:
                ray.get(self.actor.close.remote())
            except ray.exceptions.RayActorError:
                pass  # already gone: nothing of it is left to close
        ray.kill(self.actor, no_restart=True)  # without waiting: its sandbox runs die with it


def start_ray(address: str | None = None, *, num_cpus: int = 2) -> None:
    """Connect this process to the Ray cluster at ``address``, or start a local one with ``num_cpus`` CPUs and no
    dashboard. Workers import this project from its checkout (``PYTHONPATH``)."""
    import ray  # heavy optional dependency (sandmle[ray])

    os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # a local cluster needs no token
    runtime_env = {"env_vars": {"PYTHONPATH": str(REPO), "RAY_AUTH_MODE": "disabled"}}
    kwargs = {"address": address} if address else {"num_cpus": num_cpus, "include_dashboard": False}
    try:
        ray.init(runtime_env=runtime_env, log_to_driver=False, **kwargs)
    except Exception as exc:  # ConnectionError and friends: a user-facing message
        raise SandboxError(f"cannot start or reach Ray{f' at {address}' if address else ''}: {exc}") from None


class RayExecutor(Executor):
    name = "ray"

    def __init__(self, spec: WorkerSpec, *, workers: int = 2, store: Store | None = None, address: str | None = None,
                 cpus_per_worker: float = 1.0, on_lost: Callable[[str], None] | None = None):
        super().__init__(spec, workers=workers, on_lost=on_lost)
        try:
            import ray  # heavy optional dependency (sandmle[ray])
        except ImportError:
            raise SandboxError("the Ray executor needs ray", hint="pip install 'sandmle[ray]'") from None
        self.ray = ray
        self._started_here = not ray.is_initialized()
        if self._started_here:
            start_ray(address, num_cpus=max(1, math.ceil(workers * cpus_per_worker)))
        self.actor_class = ray.remote(num_cpus=cpus_per_worker, max_restarts=0)(RayWorker)

    def _make_slot(self, index: int) -> Slot:
        return RaySlot(self, f"ray-{index}")

    def close(self, wait: bool = True) -> None:
        super().close(wait)
        if self._started_here and self.ray.is_initialized():
            self.ray.shutdown()
            self._started_here = False
