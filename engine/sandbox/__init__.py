"""Sandbox execution of untrusted code: backends (local, docker), warm workers, executors."""

from .base import Limits, RunResult, SandboxBackend, Workspace, get_backend

__all__ = ["Limits", "RunResult", "SandboxBackend", "Workspace", "get_backend"]
