"""Ray executor (optional extra ``sandmle[ray]``): one remote task per job, on a local Ray started here or on an
existing cluster (``address``). Each Ray worker process keeps its own Store connection and warm worker."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

from ..errors import SandboxError
from ..sandbox.base import RunResult
from .base import Executor, SandboxJob, result_from_dict, run_job

REPO = Path(__file__).resolve().parent.parent.parent


class RayExecutor(Executor):
    name = "ray"

    def __init__(self, *, workers: int = 2, store_path: str | None = None, address: str | None = None,
                 root: str | None = None):
        os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # a local cluster needs no token
        try:
            import ray
        except ImportError:
            raise SandboxError("the Ray executor needs ray", hint="pip install 'sandmle[ray]'") from None
        self.ray = ray
        self.store_path = store_path
        self.root = root
        self._started_here = False
        if not ray.is_initialized():
            runtime_env = {"env_vars": {"PYTHONPATH": str(REPO), "RAY_AUTH_MODE": "disabled"}}
            kwargs = {"address": address} if address else {"num_cpus": workers, "include_dashboard": False}
            try:
                ray.init(runtime_env=runtime_env, log_to_driver=False, **kwargs)
            except Exception as exc:  # ConnectionError and friends: a user-facing message
                raise SandboxError(f"cannot start or reach Ray{f' at {address}' if address else ''}: {exc}") from None
            self._started_here = True
        self._task = ray.remote(num_cpus=1)(run_job)

    def map(self, jobs: Iterable[SandboxJob], *, progress=None) -> list[RunResult]:
        jobs = list(jobs)
        refs = [self._task.remote(job, self.store_path, "ray", self.root) for job in jobs]
        index = {ref: i for i, ref in enumerate(refs)}
        results: list[RunResult | None] = [None] * len(jobs)
        pending, done_n = list(refs), 0
        while pending:
            ready, pending = self.ray.wait(pending, num_returns=1)
            for ref in ready:
                results[index[ref]] = result_from_dict(self.ray.get(ref))
                done_n += 1
                if progress:
                    progress(done_n, len(jobs))
        return results  # type: ignore[return-value]

    def close(self) -> None:
        if self._started_here and self.ray.is_initialized():
            self.ray.shutdown()
            self._started_here = False
