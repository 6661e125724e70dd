"""Executors run many sandbox jobs at once: a local process pool (default) or Ray. Each job is recorded in the
store as a sandbox run by the process that runs it (each process opens its own Store; writes wait on a busy
timeout with BEGIN IMMEDIATE, so concurrent writers never see "database is locked")."""

from .base import Executor, SandboxJob, get_executor, run_job

__all__ = ["Executor", "SandboxJob", "get_executor", "run_job"]
