"""What one executor worker owns, built once and kept between the items it runs: a store connection, the
configured sandbox backend (with its warm worker) and a cache for anything else a kind of work loads once (a
policy by spec, a synthesizer). Every executor hands its work function a :class:`Worker`; this is the only
per-worker cache in the project."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, TypeVar

from store import Store

from ..config import SandboxSettings
from ..sandbox import SandboxBackend, get_backend

T = TypeVar("T")


@dataclass(frozen=True)
class WorkerSpec:
    """How to build a worker anywhere (a thread here, a spawned process, a Ray actor on another machine)."""

    store_path: str | None = None  #: the store's file (None: no store; work that needs one fails)
    sandbox: SandboxSettings = field(default_factory=SandboxSettings)  #: the backend every item's code runs in
    root: str | None = None  #: where workspaces live (None: the backend's default under the data dir)
    executor: str = "local"  #: the kind of executor the worker belongs to (recorded with its sandbox runs)


class Worker:
    """One worker's resources. ``store`` may be a handle to share (threads of this process); otherwise the worker
    opens its own connection to ``spec.store_path`` on first use."""

    def __init__(self, spec: WorkerSpec, *, name: str = "worker", store: Store | None = None):
        self.spec, self.name = spec, name
        self._store, self._own_store = store, store is None
        self._sandbox: SandboxBackend | None = None
        self._cache: dict[Any, Any] = {}

    @property
    def store(self) -> Store | None:
        if self._store is None and self.spec.store_path is not None:
            self._store = Store(self.spec.store_path)
        return self._store

    @property
    def sandbox(self) -> SandboxBackend:
        """The configured backend, started on first use (a backend that cannot start raises SandboxError)."""
        if self._sandbox is None:
            self._sandbox = get_backend(store=self.store, settings=self.spec.sandbox, root=self.spec.root)
        return self._sandbox

    def cached(self, key: Any, make: Callable[[], T]) -> T:
        """The value kept under ``key``, made by ``make()`` the first time."""
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]

    def drop(self, key: Any) -> None:
        """Forget (and close, where it can be closed) what is kept under ``key``."""
        value = self._cache.pop(key, None)
        if hasattr(value, "close"):
            value.close()

    def close(self) -> None:
        for key in list(self._cache):
            self.drop(key)
        if self._sandbox is not None:
            self._sandbox.close()
            self._sandbox = None
        if self._own_store and self._store is not None:
            self._store.close()
            self._store = None


def touch_sandbox(worker: Worker, _: Any = None) -> str:
    """A work item that only starts the worker's sandbox backend (the executor's ``prepare``)."""
    return type(worker.sandbox).__name__
