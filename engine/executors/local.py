"""``local``: the workers are threads of this process. Work shares this process's memory (one policy in memory and
its sampler's batches, the trainer's live model) while the sandbox still runs code in its own subprocesses. The
workers share the caller's store handle (it is thread-safe); each has its own sandbox backend."""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable

from store import Store

from .base import Executor, Slot, WorkFn
from .worker import Worker, WorkerSpec


class ThreadSlot(Slot):
    def __init__(self, spec: WorkerSpec, name: str, store: Store | None):
        self.spec, self.name, self.store = spec, name, store
        self.restart()

    def submit(self, fn: WorkFn, item: Any) -> Future:
        return self._pool.submit(fn, self.worker, item)

    def died(self, exc: BaseException) -> bool:
        return False  # a thread cannot die without its process

    def restart(self) -> None:
        self.worker = Worker(self.spec, name=self.name, store=self.store)
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=self.name)

    def close(self, wait: bool = True) -> None:
        self._pool.submit(self.worker.close)  # after the item still running, if any
        self._pool.shutdown(wait=wait)


class LocalExecutor(Executor):
    name = "local"
    in_process = True

    def __init__(self, spec: WorkerSpec, *, workers: int = 2, store: Store | None = None, address: str | None = None,
                 on_lost: Callable[[str], None] | None = None):
        super().__init__(spec, workers=workers, on_lost=on_lost)
        self.store = store

    def _make_slot(self, index: int) -> Slot:
        return ThreadSlot(self.spec, f"local-{index}", self.store)
