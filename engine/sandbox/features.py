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
    namespaces: bool  #: net, pid, mount, ipc, uts namespaces + private root (our jail), as root or in a user namespace
    namespaces_error: str
    cgroups: dict  #: controller (v1 name) -> usable
    disk_quota: bool  #: a size-limited tmpfs per workspace
    bwrap: str | None
    cgroup_version: str | None = None  #: v1, v2 (delegated) or None

    @property
    def userns(self) -> bool:
        """The jail runs in a user namespace of its own (we are not root)."""
        return self.namespaces and not self.root

    @property
    def unprivileged_uid(self) -> bool:
        """Runs hold no privilege: uid nobody (root's jail) or the user's own uid with no capabilities."""
        return self.namespaces

    @property
    def run_as(self) -> str:
        if self.root:
            return f"uid {SANDBOX_UID} (nobody), no capabilities" if self.namespaces else "root (NOT dropped)"
        return f"uid {os.geteuid()} (this user), no capabilities" + ("" if self.namespaces else " kept")


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
    """Make the jail once (``/bin/true`` in it): as root directly, else in a user namespace of its own."""
    root = os.geteuid() == 0
    with tempfile.TemporaryDirectory(prefix="sandmle-probe-") as tmp:
        ws = Path(tmp) / "work"
        ws.mkdir()
        (Path(tmp) / "root").mkdir()
        spec = {"workspace": str(ws), "root_dir": f"{tmp}/root", "ro_binds": ro_binds(),
                "uid": SANDBOX_UID if root else None, "gid": SANDBOX_GID if root else None, "userns": not root,
                "rlimits": {}, "stdout": f"{tmp}/out", "stderr": f"{tmp}/err",
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
        why = (err.strip().splitlines() or [f"exit {proc.returncode}"])[-1][:200]
        return False, why if root else f"no user namespaces for this user ({why})"


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
    if not ns:  # one more try before degrading (a busy machine can time out)
        ns, err = _probe_namespaces()
    return Features(root=os.geteuid() == 0, namespaces=ns, namespaces_error=err, cgroups=cgroups.available(),
                    disk_quota=_probe_tmpfs(), bwrap=shutil.which("bwrap"), cgroup_version=cgroups.version())
