"""Sandbox execution of untrusted code: the backend interface (:mod:`.base`) and its backends, local (subprocess
+ jail, warm workers) and docker, chosen by name with :func:`get_backend`."""

from __future__ import annotations

from typing import Any

from ..errors import SandboxError
from .base import Limits, RunResult, SandboxBackend, Workspace
from .docker import DockerBackend
from .local import LocalBackend


def get_backend(name: str = "local", *, store=None, settings=None, **options: Any) -> SandboxBackend:
    """Build a backend by name; ``settings`` is a ``SandboxSettings``."""
    if name == "local":
        return LocalBackend(store=store, settings=settings, **options)
    if name == "docker":
        return DockerBackend(store=store, settings=settings, **options)
    raise SandboxError(f"unknown sandbox backend {name!r}; expected local or docker")


__all__ = ["Limits", "RunResult", "SandboxBackend", "Workspace", "get_backend"]
