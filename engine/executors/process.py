"""``process``: each worker is a spawned process (nothing inherited: no thread, lock or open connection) with its
own store connection, sandbox backend and cache, kept between items. A worker process that dies (killed, out of
memory) breaks only its own slot: it is replaced and its item tried once more."""

from __future__ import annotations

import multiprocessing
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from ..errors import SandboxError
from .base import Executor, Slot, WorkFn
from .worker import Worker, WorkerSpec

#: the worker of this process (set in each spawned worker process by its initializer)
_WORKER: Worker | None = None


def _start(spec: WorkerSpec, name: str) -> None:
    global _WORKER
    _WORKER = Worker(spec, name=name)


def _call(fn: WorkFn, item: Any) -> Any:
    if _WORKER is None:
        raise SandboxError("the worker process did not start its worker")
    return fn(_WORKER, item)


def _stop() -> None:
    if _WORKER is not None:
        _WORKER.close()


class ProcessSlot(Slot):
    def __init__(self, spec: WorkerSpec, name: str):
        self.spec, self.name = spec, name
        self._pool = self._new_pool()

    def submit(self, fn: WorkFn, item: Any) -> Future:
        return self._pool.submit(_call, fn, item)

    def died(self, exc: BaseException) -> bool:
        return isinstance(exc, BrokenProcessPool)

    def restart(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._pool = self._new_pool()

    def _new_pool(self) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"),
                                   initializer=_start, initargs=(self.spec, self.name))

    def close(self, wait: bool = True) -> None:
        try:
            self._pool.submit(_stop)  # after the item still running, if any
        except BrokenProcessPool:
            pass  # its process is gone: nothing of it is left to close
        self._pool.shutdown(wait=wait)


class ProcessExecutor(Executor):
    name = "process"

    def _make_slot(self, index: int) -> Slot:
        return ProcessSlot(self.spec, f"process-{index}")
