"""Run a command as an ordinary user, started by root: ``python tests/as_user.py SPEC.json -- ARGV...``.

What a researcher on a shared server has: their own uid and group, no capabilities, no sudo. The command sees
the project checkout and this interpreter at their own paths (the venv's scripts name them), even where those
live under a folder the user may not enter (root's ``/root`` is mode 700): in a private mount namespace, each
such folder is covered by a tmpfs that holds only the paths the spec exposes, bound back from the original — the
original folder itself stays out of reach. Nothing outside this process's mount namespace changes.

SPEC (JSON): ``uid``, ``gid``, ``groups`` (supplementary gids, e.g. the docker socket's group), ``expose``
(folders the user must reach), ``env`` (the whole environment), ``cwd``, and optionally ``cgroup`` (a cgroup v2
folder delegated to the user that the command starts in). Standard library only.
"""

from __future__ import annotations

import ctypes
import json
import os
import stat
import sys
import tempfile

CLONE_NEWNS = 0x00020000
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MNT_DETACH = 2
_libc = ctypes.CDLL(None, use_errno=True)


def _check(ret: int, what: str) -> None:
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _mount(src: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    enc = (lambda s: None if s is None else s.encode())
    _check(_libc.mount(enc(src), enc(target), enc(fstype), flags, enc(data)), f"mount {src} on {target}")


def closed_ancestor(path: str) -> str | None:
    """The topmost folder above ``path`` that others may not enter (no o+x), or None."""
    parts = os.path.realpath(path).split(os.sep)[1:]
    current = ""
    for part in parts[:-1]:
        current += os.sep + part
        if not os.stat(current).st_mode & stat.S_IXOTH:
            return current
    return None


def expose(paths: list[str]) -> None:
    """Cover each closed folder above ``paths`` with a tmpfs holding only those paths (bound from the original)."""
    covers: dict[str, list[str]] = {}
    for path in paths:
        top = closed_ancestor(path)
        if top is not None:
            covers.setdefault(top, []).append(os.path.realpath(path))
    for top, inside in covers.items():
        stage = tempfile.mkdtemp(prefix="sandmle-as-user-")
        _mount(top, stage, None, MS_BIND | MS_REC)
        _mount("sandmle-as-user", top, "tmpfs", 0, "mode=0755,size=1m")
        for path in inside:
            rel = os.path.relpath(path, top)
            os.makedirs(path, mode=0o755, exist_ok=True)
            _mount(os.path.join(stage, rel), path, None, MS_BIND | MS_REC)
        _check(_libc.umount2(stage.encode(), MNT_DETACH), f"umount {stage}")
        os.rmdir(stage)


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as f:
        spec = json.load(f)
    argv = sys.argv[sys.argv.index("--") + 1:]
    _check(_libc.unshare(CLONE_NEWNS), "unshare")
    _mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing below propagates back to the host
    expose(spec["expose"])
    if spec.get("cgroup"):
        with open(os.path.join(spec["cgroup"], "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))
    os.setgroups(spec.get("groups", []))
    os.setresgid(spec["gid"], spec["gid"], spec["gid"])
    os.setresuid(spec["uid"], spec["uid"], spec["uid"])
    os.chdir(spec["cwd"])
    os.execvpe(argv[0], argv, spec["env"])


if __name__ == "__main__":
    main()
