"""The executor interface: ``workers`` slots, each one :class:`~.worker.Worker` that runs one item at a time.

``stream(fn, items)`` keeps every slot busy and yields ``(index, result)`` as items finish, so progress bars and
the store see results as they come. ``fn(worker, item)`` must be a module-level function (a process or a Ray
actor imports it by name). A slot whose worker dies (its process killed, its node lost) is reported in ``lost``
(and to ``on_lost``), restarted, and the item it was running is tried once more on it; an item that kills its
worker twice raises :class:`WorkerLost`. A dead worker's item is never counted as a result. An exception raised
by ``fn`` itself is the item's failure and propagates to the caller unchanged.

Backends (a file each): ``local`` (threads of this process: work shares this process's memory, e.g. one policy
and its sampler's batches), ``process`` (spawned processes) and ``ray`` (actors on a local or remote Ray)."""

from __future__ import annotations

import abc
import dataclasses
import threading
from collections import deque
from concurrent.futures import FIRST_COMPLETED, Future, wait
from typing import Any, Callable, Iterable, Iterator

from ..errors import SandmleError
from .worker import Worker, WorkerSpec, touch_sandbox

WorkFn = Callable[[Worker, Any], Any]


class WorkerLost(SandmleError):
    """A worker died twice running the same item (the item is not counted as a result)."""


class Slot(abc.ABC):
    """One worker of an executor, wherever it lives."""

    name: str

    @abc.abstractmethod
    def submit(self, fn: WorkFn, item: Any) -> Future:
        """Run ``fn(worker, item)`` on this slot's worker."""

    @abc.abstractmethod
    def died(self, exc: BaseException) -> bool:
        """Whether ``exc`` (from a future of this slot) means the worker itself is gone."""

    @abc.abstractmethod
    def restart(self) -> None:
        """Replace a dead worker with a fresh one (same spec)."""

    @abc.abstractmethod
    def close(self, wait: bool = True) -> None:
        """Close the worker's resources and stop it; ``wait=False`` (after an error or Ctrl-C) returns at once and
        lets an item still running finish on its own before the worker closes."""


class Executor(abc.ABC):
    name: str = ""

    def __init__(self, spec: WorkerSpec, *, workers: int = 2, on_lost: Callable[[str], None] | None = None):
        if workers < 1:
            raise SandmleError(f"an executor needs at least one worker (got {workers})")
        self.spec = dataclasses.replace(spec, executor=self.name)
        self.workers, self.on_lost = workers, on_lost
        #: one line per worker that died (which worker, running what, why)
        self.lost: list[str] = []
        self._slots: list[Slot] | None = None
        self._lock = threading.Lock()

    @abc.abstractmethod
    def _make_slot(self, index: int) -> Slot:
        """Start worker ``index``."""

    @property
    def slots(self) -> list[Slot]:
        with self._lock:
            if self._slots is None:
                self._slots = [self._make_slot(i) for i in range(self.workers)]
            return self._slots

    def prepare(self) -> None:
        """Start every worker's sandbox backend now: a backend that cannot start fails here, before any work."""
        for _ in self.stream(touch_sandbox, [None] * self.workers):
            pass

    def stream(self, fn: WorkFn, items: Iterable[Any]) -> Iterator[tuple[int, Any]]:
        """Yield ``(index, fn(worker, item))`` for every item as it finishes (at most ``workers`` at once)."""
        queue: deque[tuple[int, Any, int]] = deque((i, item, 0) for i, item in enumerate(items))
        idle = list(reversed(self.slots))
        running: dict[Future, tuple[Slot, int, Any, int]] = {}
        try:
            while queue or running:
                while idle and queue:
                    slot = idle.pop()
                    i, item, tries = queue.popleft()
                    running[slot.submit(fn, item)] = (slot, i, item, tries)
                done, _ = wait(list(running), return_when=FIRST_COMPLETED)
                for fut in done:
                    slot, i, item, tries = running.pop(fut)
                    exc = fut.exception()
                    if exc is not None and slot.died(exc):
                        self._lose(slot, i, exc, tries)
                        queue.appendleft((i, item, tries + 1))
                    elif exc is not None:
                        raise exc
                    idle.append(slot)
                    if exc is None:
                        yield i, fut.result()
        finally:
            for fut in running:
                fut.cancel()

    def map(self, fn: WorkFn, items: Iterable[Any], *,
            on_result: Callable[[int, Any], None] | None = None) -> list[Any]:
        """All results in the items' order; ``on_result(index, result)`` as each one finishes."""
        items = list(items)
        results: list[Any] = [None] * len(items)
        for i, result in self.stream(fn, items):
            results[i] = result
            if on_result is not None:
                on_result(i, result)
        return results

    def _lose(self, slot: Slot, index: int, exc: BaseException, tries: int) -> None:
        line = f"worker {slot.name} died running item {index} ({type(exc).__name__}: {exc})"
        self.lost.append(line)
        if self.on_lost is not None:
            self.on_lost(line + ("; giving up" if tries else "; retrying it once"))
        slot.restart()
        if tries:
            raise WorkerLost(f"item {index} killed its worker twice: {exc}")

    def close(self, wait: bool = True) -> None:
        """Close every worker (their sandboxes and warm workers, their store connections)."""
        with self._lock:
            slots, self._slots = self._slots or [], None
        for slot in slots:
            slot.close(wait)

    def __enter__(self) -> "Executor":
        return self

    def __exit__(self, exc_type: type | None, *exc: object) -> None:
        self.close(wait=exc_type is None)
