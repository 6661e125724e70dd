"""``ray`` (optional extra ``sandmle[ray]``): each worker is a Ray actor that owns its store connection, sandbox
backend and cache, on a local Ray started here (``num_cpus`` = workers, no dashboard) or on an existing cluster
(``address``; every node needs this project importable and the data dir at the same path, e.g. a shared
filesystem). An actor that dies (its process killed, its node lost) is replaced and its item tried once more."""

from __future__ import annotations

import os
from concurrent.futures import Future
from pathlib import Path
from typing import Any, Callable

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

    def close(self) -> None:
        ray = self.executor.ray
        try:
            ray.get(self.actor.close.remote())
        except ray.exceptions.RayActorError:
            pass  # already gone: nothing of it is left to close
        ray.kill(self.actor, no_restart=True)


class RayExecutor(Executor):
    name = "ray"

    def __init__(self, spec: WorkerSpec, *, workers: int = 2, address: str | None = None,
                 cpus_per_worker: float = 1.0, on_lost: Callable[[str], None] | None = None):
        super().__init__(spec, workers=workers, on_lost=on_lost)
        os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # a local cluster needs no token
        try:
            import ray  # heavy optional dependency (sandmle[ray])
        except ImportError:
            raise SandboxError("the Ray executor needs ray", hint="pip install 'sandmle[ray]'") from None
        self.ray = ray
        self._started_here = False
        if not ray.is_initialized():
            runtime_env = {"env_vars": {"PYTHONPATH": str(REPO), "RAY_AUTH_MODE": "disabled"}}
            kwargs = ({"address": address} if address else
                      {"num_cpus": max(1, int(workers * cpus_per_worker + 0.999)), "include_dashboard": False})
            try:
                ray.init(runtime_env=runtime_env, log_to_driver=False, **kwargs)
            except Exception as exc:  # ConnectionError and friends: a user-facing message
                raise SandboxError(f"cannot start or reach Ray{f' at {address}' if address else ''}: {exc}") from None
            self._started_here = True
        self.actor_class = ray.remote(num_cpus=cpus_per_worker, max_restarts=0)(RayWorker)

    def _make_slot(self, index: int) -> Slot:
        return RaySlot(self, f"ray-{index}")

    def close(self) -> None:
        super().close()
        if self._started_here and self.ray.is_initialized():
            self.ray.shutdown()
            self._started_here = False
