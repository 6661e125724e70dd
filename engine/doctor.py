"""`sandmle doctor`: what this machine offers SandMLE, each line ok / missing with how to fix it."""

from __future__ import annotations

import importlib.util
import os
import platform
import shutil
import sys
from dataclasses import asdict, dataclass


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    fix: str | None = None
    optional: bool = False

    def to_dict(self) -> dict:
        return asdict(self)


def _python() -> Check:
    ok = sys.version_info >= (3, 11)
    return Check("python", ok, f"{platform.python_implementation()} {platform.python_version()}",
                 None if ok else "install Python 3.11 or newer")


def _torch() -> Check:
    if importlib.util.find_spec("torch") is None:
        return Check("torch", False, "not installed", "pip install torch (CPU: torch==2.13.0)")
    import torch

    if torch.cuda.is_available():
        name = torch.cuda.get_device_name(0)
        bf16 = torch.cuda.is_bf16_supported()
        return Check("torch", True, f"{torch.__version__}; training device: cuda ({name}, bf16={'yes' if bf16 else 'no'})")
    return Check("torch", True, f"{torch.__version__}; training device: cpu (no CUDA device)")


def _store(store) -> list[Check]:
    from store.migrations import LATEST

    version = store.schema_version()
    return [
        Check("data dir", os.access(store.data_dir, os.W_OK), str(store.data_dir),
              "set SANDMLE_HOME to a writable folder"),
        Check("store", version == LATEST, f"{store.path} (schema v{version}, latest v{LATEST})",
              None if version == LATEST else "run any sandmle command to migrate"),
    ]


def _optional_module(name: str, label: str, extra: str) -> Check:
    found = importlib.util.find_spec(name) is not None
    return Check(label, found, "installed" if found else "not installed", None if found else f"pip install 'sandmle[{extra}]'",
                 optional=True)


def _docker() -> Check:
    if importlib.util.find_spec("docker") is None:
        return Check("docker daemon", False, "docker SDK not installed", "pip install docker", optional=True)
    try:
        import docker

        client = docker.from_env(timeout=2)
        client.ping()
        return Check("docker daemon", True, f"answers (server {client.version().get('Version', '?')})", optional=True)
    except Exception as exc:  # any failure to reach the daemon means "not available"
        reason = str(exc).splitlines()[0][:120]
        return Check("docker daemon", False, f"no daemon answers ({reason})",
                     "start dockerd or use the local sandbox backend", optional=True)


def _anthropic_key() -> Check:
    ok = bool(os.environ.get("ANTHROPIC_API_KEY"))
    return Check("anthropic key", ok, "ANTHROPIC_API_KEY set" if ok else "ANTHROPIC_API_KEY not set",
                 None if ok else "export ANTHROPIC_API_KEY=... (only for --backend anthropic)", optional=True)


def run_checks(store) -> list[Check]:
    checks = [_python(), _torch(), *_store(store)]
    try:
        from .sandbox.features import isolation_checks

        checks += isolation_checks()
    except ImportError:
        for tool in ("bwrap", "unshare"):
            path = shutil.which(tool)
            checks.append(Check(f"sandbox: {tool}", bool(path), path or "not found",
                                None if path else "apt-get install -y bubblewrap util-linux"))
    checks += [
        _docker(),
        _optional_module("ray", "ray", "ray"),
        _optional_module("openai", "openai SDK", "openai"),
        _anthropic_key(),
    ]
    return checks
