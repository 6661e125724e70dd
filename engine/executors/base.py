"""The executor interface: ``workers`` slots, each one :class:`~.worker.Worker` that runs one item at a time.

``submit(fn, item)`` queues an item and returns a future; free workers take queued items in order, so work of the
next batch can be queued while the current one runs. ``stream(fn, items)`` yields ``(index, result)`` as items
finish, so progress bars and the store see results as they come. ``fn(worker, item)`` must be a module-level function (a process or a Ray
actor imports it by name). A slot whose worker dies (its process killed, its node lost) is reported in ``lost``
(and to ``on_lost``), restarted, and the item it was running is tried once more on it; an item that kills its
worker twice raises :class:`WorkerLost`. A dead worker's item is never counted as a result. An exception raised
by ``fn`` itself is the item's failure and propagates to the caller unchanged.

Backends (a file each): ``local`` (threads of this process: work shares this process's memory, e.g. one policy
and its sampler's batches), ``process`` (spawned processes) and ``ray`` (actors on a local or remote Ray)."""

from __future__ import annotations

import abc
import dataclasses
import functools
import queue
import threading
from collections import deque
from concurrent.futures import Future, as_completed
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator

from store import Store

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


@dataclass
class _Task:
    fn: WorkFn
    item: Any
    label: str
    result: Future  #: what the caller holds
    tries: int = 0


class Executor(abc.ABC):
    name: str = ""
    #: the workers are threads of this process: they share its memory (the caller's store handle, one policy and
    #: its sampler); else they live in other processes and each opens the store's file and loads its own policy
    in_process: bool = False

    def __init__(self, spec: WorkerSpec, *, workers: int = 2, store: Store | None = None, address: str | None = None,
                 on_lost: Callable[[str], None] | None = None):
        """``store`` and ``address`` (of a cluster) are for the executors that use them (local; ray)."""
        if workers < 1:
            raise SandmleError(f"an executor needs at least one worker (got {workers})")
        self.spec = dataclasses.replace(spec, executor=self.name)
        self.workers, self.on_lost = workers, on_lost
        #: one line per worker that died (which worker, running what, why)
        self.lost: list[str] = []
        self._slots: list[Slot] | None = None
        self._idle: list[Slot] = []
        self._queue: deque[_Task] = deque()
        self._lock = threading.Lock()
        #: finished slot futures, handled one at a time by the dispatcher thread (never in a future's callback:
        #: Ray runs those on its own event loop, where restarting an actor would deadlock)
        self._finished_q: queue.SimpleQueue[tuple[Slot, _Task, Future] | None] = queue.SimpleQueue()
        self._dispatcher: threading.Thread | None = None

    @abc.abstractmethod
    def _make_slot(self, index: int) -> Slot:
        """Start worker ``index``."""

    def _start(self) -> None:
        with self._lock:
            if self._slots is None:
                self._slots = [self._make_slot(i) for i in range(self.workers)]
                self._idle = list(reversed(self._slots))
                self._dispatcher = threading.Thread(target=self._dispatch_loop, name=f"{self.name}-dispatch",
                                                    daemon=True)
                self._dispatcher.start()

    def _dispatch_loop(self) -> None:
        while (event := self._finished_q.get()) is not None:
            slot, task, fut = event
            try:
                self._finished(slot, task, fut)
            except BaseException as exc:  # noqa: BLE001 - never leave a caller waiting on a future
                if not task.result.done():
                    task.result.set_exception(exc)

    def submit(self, fn: WorkFn, item: Any, *, label: str = "an item") -> Future:
        """Queue ``fn(worker, item)``; the future gets its result (or its own exception, or :class:`WorkerLost`).
        Items start in the order they were submitted, each on the next free worker."""
        self._start()
        task = _Task(fn, item, label, Future())
        with self._lock:
            self._queue.append(task)
        self._dispatch()
        return task.result

    def _dispatch(self) -> None:
        """Give queued items to idle workers (outside the lock: a finished future runs its callback at once)."""
        starting: list[tuple[Slot, _Task]] = []
        with self._lock:
            while self._idle and self._queue:
                task = self._queue.popleft()
                # a retried item is running already; a new one may have been cancelled meanwhile
                if task.tries or task.result.set_running_or_notify_cancel():
                    starting.append((self._idle.pop(), task))
        for slot, task in starting:
            slot.submit(task.fn, task.item).add_done_callback(functools.partial(self._done, slot, task))

    def _done(self, slot: Slot, task: _Task, fut: Future) -> None:
        """A slot's future finished (called on whatever thread finished it): hand it to the dispatcher."""
        self._finished_q.put((slot, task, fut))

    def _finished(self, slot: Slot, task: _Task, fut: Future) -> None:
        exc = fut.exception()
        if exc is not None and slot.died(exc):
            line = f"worker {slot.name} died running {task.label} ({type(exc).__name__}: {exc})"
            self.lost.append(line)
            if self.on_lost is not None:
                self.on_lost(line + ("; giving up" if task.tries else "; retrying it once"))
            slot.restart()
            if task.tries:
                task.result.set_exception(WorkerLost(f"{task.label} killed its worker twice: {exc}"))
            else:
                task.tries += 1
                with self._lock:
                    self._queue.appendleft(task)
        elif exc is not None:
            task.result.set_exception(exc)
        else:
            task.result.set_result(fut.result())
        with self._lock:
            self._idle.append(slot)
        self._dispatch()

    def prepare(self, *, then: WorkFn | None = None) -> "Executor":
        """Start every worker's sandbox backend now (and run ``then`` once on each worker, e.g. a warm-up): a
        backend that cannot start fails here, before any work, and the executor is closed. Returns the executor."""
        try:
            for _ in self.stream(touch_sandbox, [None] * self.workers):
                pass
            if then is not None:
                self.map(then, [None] * self.workers)
        except BaseException:
            self.close(wait=False)
            raise
        return self

    def stream(self, fn: WorkFn, items: Iterable[Any]) -> Iterator[tuple[int, Any]]:
        """Yield ``(index, fn(worker, item))`` for every item as it finishes (at most ``workers`` at once)."""
        futures = {self.submit(fn, item, label=f"item {i}"): i for i, item in enumerate(items)}
        try:
            for fut in as_completed(futures):
                yield futures[fut], fut.result()
        finally:
            for fut in futures:
                fut.cancel()  # those still queued; running ones finish on their own

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

    def close(self, wait: bool = True) -> None:
        """Close every worker (their sandboxes and warm workers, their store connections); queued items are
        cancelled."""
        with self._lock:
            slots, self._slots, self._idle = self._slots or [], None, []
            queued, self._queue = list(self._queue), deque()
            dispatcher, self._dispatcher = self._dispatcher, None
        for task in queued:
            task.result.cancel()
        if dispatcher is not None:
            self._finished_q.put(None)
            dispatcher.join()
        for slot in slots:
            slot.close(wait)

    def __enter__(self) -> "Executor":
        return self

    def __exit__(self, exc_type: type | None, *exc: object) -> None:
        self.close(wait=exc_type is None)
