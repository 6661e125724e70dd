"""Sandbox execution of untrusted code: the backend interface (:mod:`.base`) and its backends, local (subprocess
+ jail, warm workers) and docker, chosen by name or from the settings with :func:`get_backend`."""

from __future__ import annotations

from pathlib import Path

from store import Store

from ..config import SandboxSettings
from ..errors import SandboxError
from .base import Limits, RunMeta, RunResult, SandboxBackend, Workspace
from .docker import DockerBackend
from .local import LocalBackend


def get_backend(name: str | None = None, *, store: Store | None = None, settings: SandboxSettings | None = None,
                limits: Limits | None = None, root: str | Path | None = None, warm: bool | None = None,
                isolation: str = "auto") -> SandboxBackend:
    """The backend ``name`` (default: the one ``settings`` names, else local) with the limits and options of
    ``settings`` (``[sandbox]``); ``limits``, ``warm`` and ``isolation`` (local only) override them. A backend
    that cannot start here raises :class:`SandboxError` (one line saying why)."""
    name = name or (settings.backend if settings is not None else "local")
    if name == "local":
        return LocalBackend(store=store, settings=settings, root=root, limits=limits, warm=warm, isolation=isolation)
    if name == "docker":
        return DockerBackend(store=store, settings=settings, root=root, limits=limits)
    raise SandboxError(f"unknown sandbox backend {name!r}; expected local or docker")


__all__ = ["Limits", "RunMeta", "RunResult", "SandboxBackend", "Workspace", "get_backend"]
