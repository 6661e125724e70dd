"""Sandbox execution of untrusted code: the backend interface (:mod:`.base`) and its backends, local (subprocess
+ jail, warm workers) and docker, chosen by name or from the settings with :func:`get_backend`."""

from __future__ import annotations

from pathlib import Path

from store import Store

from ..backends import SANDBOX_BACKENDS
from ..config import SandboxSettings
from ..errors import SandboxError
from .base import Limits, RunMeta, RunResult, SandboxBackend, Workspace


def get_backend(name: str | None = None, *, store: Store | None = None, settings: SandboxSettings | None = None,
                limits: Limits | None = None, root: str | Path | None = None, warm: bool | None = None,
                isolation: str | None = None) -> SandboxBackend:
    """The backend ``name`` of :data:`engine.backends.SANDBOX_BACKENDS` (default: the one ``settings`` names, else
    local) with the limits and options of ``settings`` (``[sandbox]``); ``limits``, ``warm`` and ``isolation``
    override them where the backend takes them (its ``OPTIONS``: local). A backend that cannot start here raises
    :class:`SandboxError` (one line saying why): a local backend that can confine nothing here raises
    :class:`~engine.errors.IsolationMissing` unless ``none`` was asked for by name."""
    name = name or (settings.backend if settings is not None else "local")
    if name not in SANDBOX_BACKENDS:
        raise SandboxError(SANDBOX_BACKENDS.unknown(name))
    cls = SANDBOX_BACKENDS.get(name).load()
    options = {k: v for k, v in (("warm", warm), ("isolation", isolation)) if k in cls.OPTIONS}
    return cls(store=store, settings=settings, root=root, limits=limits, **options)


__all__ = ["Limits", "RunMeta", "RunResult", "SandboxBackend", "Workspace", "get_backend"]
