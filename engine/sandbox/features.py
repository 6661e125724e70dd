"""What isolation this machine offers the local backend, probed once per process."""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from . import cgroups

JAIL = Path(__file__).with_name("jail.py")
#: the uid/gid untrusted code runs as (nobody) when the sandbox is root
SANDBOX_UID = 65534
SANDBOX_GID = 65534


@dataclass(frozen=True)
class Features:
    root: bool
    namespaces: bool  #: net, pid, mount, ipc, uts namespaces + private root (our jail)
    namespaces_error: str
    cgroups: dict  #: controller -> usable
    disk_quota: bool  #: a size-limited tmpfs per workspace
    bwrap: str | None

    @property
    def unprivileged_uid(self) -> bool:
        return self.root and self.namespaces


def python_paths() -> list[str]:
    """Interpreter and virtual-env folders the jail must mount read-only (real paths: symlinks are resolved)."""
    paths = {os.path.realpath(sys.prefix), os.path.realpath(sys.base_prefix), os.path.realpath(sys.exec_prefix)}
    exe = os.path.realpath(sys.executable)
    if not any(exe.startswith(p + os.sep) for p in paths):
        paths.add(os.path.dirname(exe))
    return sorted(paths)


SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/etc")


def ro_binds() -> list[str]:
    return [d for d in SYSTEM_DIRS if os.path.lexists(d)] + python_paths()


def _probe_namespaces() -> tuple[bool, str]:
    if os.geteuid() != 0:
        return False, "not root (namespaces need root or bubblewrap)"
    with tempfile.TemporaryDirectory(prefix="sandmle-probe-") as tmp:
        ws = Path(tmp) / "work"
        ws.mkdir()
        (Path(tmp) / "root").mkdir()
        spec = {"workspace": str(ws), "root_dir": f"{tmp}/root", "ro_binds": ro_binds(), "uid": SANDBOX_UID,
                "gid": SANDBOX_GID, "rlimits": {}, "stdout": f"{tmp}/out", "stderr": f"{tmp}/err",
                "status": f"{tmp}/status", "env": {"PATH": "/usr/bin:/bin"}, "argv": ["/bin/true"]}
        os.chmod(ws, 0o777)
        try:
            Path(f"{tmp}/spec").write_text(json.dumps(spec))
            proc = subprocess.run([sys.executable, "-S", "-E", str(JAIL), f"{tmp}/spec"], timeout=20,
                                  stdin=subprocess.DEVNULL, capture_output=True)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return False, str(exc)
        err = Path(f"{tmp}/err").read_text() if Path(f"{tmp}/err").exists() else proc.stderr.decode()
        status = json.loads(Path(f"{tmp}/status").read_text() or "{}") if Path(f"{tmp}/status").exists() else {}
        if proc.returncode == 0 and status.get("exit_code") == 0:
            return True, ""
        return False, (err.strip().splitlines() or [f"exit {proc.returncode}"])[-1][:200]


def _probe_tmpfs() -> bool:
    if os.geteuid() != 0:
        return False
    with tempfile.TemporaryDirectory(prefix="sandmle-probe-") as tmp:
        ok = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", tmp], capture_output=True).returncode == 0
        if ok:
            subprocess.run(["umount", tmp], capture_output=True)
        return ok


@functools.lru_cache(maxsize=1)
def bwrap_works() -> bool:
    """bubblewrap is installed and can make its namespaces here (the isolation a non-root user gets)."""
    path = shutil.which("bwrap")
    if not path:
        return False
    try:
        return subprocess.run([path, "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "--proc", "/proc",
                               "--dev", "/dev", "/bin/true"], capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@functools.lru_cache(maxsize=1)
def detect() -> Features:
    ns, err = _probe_namespaces()
    if not ns and os.geteuid() == 0:  # one more try before degrading (a busy machine can time out)
        ns, err = _probe_namespaces()
    return Features(root=os.geteuid() == 0, namespaces=ns, namespaces_error=err, cgroups=cgroups.available(),
                    disk_quota=_probe_tmpfs(), bwrap=shutil.which("bwrap"))
