"""A machine where the local sandbox can confine nothing, made for real: the command runs as an ordinary uid in a
user namespace that may make no further user namespaces (bubblewrap's ``--disable-userns``), so our jail cannot
be made (no user namespace for this user) and bubblewrap cannot start inside either — what a locked-down shared
server without bubblewrap or user namespaces offers. The filesystem is the host's (read-write), so the checkout,
the venv and a tmp data dir stay where they are. Standard library only."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SANDMLE = ROOT / ".venv" / "bin" / "sandmle"


def argv(command: list[str]) -> list[str]:
    bwrap = shutil.which("bwrap") or "bwrap"
    return [bwrap, "--bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-user", "--disable-userns",
            "--uid", "1000", "--gid", "1000", "--die-with-parent", "--", *command]


@functools.lru_cache(maxsize=1)
def why_not() -> str | None:
    """None where such a machine can be made here; else why not (the tests that need it skip)."""
    if not shutil.which("bwrap"):
        return "bubblewrap is not installed (it makes the machine without isolation)"
    probe = ("from engine.sandbox import features as f; d = f.detect(); "
             "print(int(d.namespaces), int(f.bwrap_works()))")
    try:
        out = subprocess.run(argv([sys.executable, "-c", probe]), capture_output=True, text=True, timeout=120,
                             cwd=ROOT)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap cannot start here: {exc}"
    if out.returncode != 0:
        return f"bubblewrap cannot make the locked-down namespace: {out.stderr.strip()[-200:]}"
    if out.stdout.split() != ["0", "0"]:
        return f"isolation is still available inside ({out.stdout.strip()})"
    return None


def sandmle(home: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 300,
            cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``sandmle ARGS`` on the machine without isolation, with the data dir ``home``."""
    full = {k: v for k, v in os.environ.items() if not k.startswith("SANDMLE_")}
    full.update({"SANDMLE_HOME": str(home), **(env or {})})
    return subprocess.run(argv([str(SANDMLE), *args]), capture_output=True, text=True, timeout=timeout,
                          env=full, cwd=cwd or ROOT)
