"""The default executor: a pool of worker processes (spawned, so no thread or lock is inherited), each with its
own Store connection and its own warm worker kept between jobs."""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Iterable

from ..sandbox.base import RunResult
from .base import Executor, SandboxJob, result_from_dict, run_job


class LocalExecutor(Executor):
    name = "local"

    def __init__(self, *, workers: int = 2, store_path: str | None = None, root: str | None = None):
        self.workers = workers
        self.store_path = store_path
        self.root = root
        self._pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"))

    def map(self, jobs: Iterable[SandboxJob], *, progress=None) -> list[RunResult]:
        jobs = list(jobs)
        futures = {self._pool.submit(run_job, job, self.store_path, "local", self.root): i
                   for i, job in enumerate(jobs)}
        results: list[RunResult | None] = [None] * len(jobs)
        for n, fut in enumerate(as_completed(futures), 1):
            results[futures[fut]] = result_from_dict(fut.result())
            if progress:
                progress(n, len(jobs))
        return results  # type: ignore[return-value]

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
