"""The jail: confine the current process before untrusted code runs. Standard library only, so that it runs as a
script (the cold launcher: ``python -S jail.py SPEC_FILE`` then ``exec`` of the command) and inside the warm
worker (a fork of a process with pandas/sklearn imported, then ``runpy``) with exactly the same guarantees.

``enter(spec)`` turns the calling process into three::

    caller (joins the run's cgroups, unshares namespaces)   waits for the init, exits with its code
      └─ init, pid 1 of a new pid namespace (root)          builds the private root, reaps, writes the status file
           └─ payload, pid 2 (uid nobody, no capabilities)  returns from enter(): runs the user's code

When the payload ends, the init writes a JSON status file and exits; the kernel then kills every process left in
the pid namespace (daemons and double forks included). The payload sees: no network (a fresh network namespace
with only a down loopback), a read-only root holding only the system dirs and the interpreter, its workspace
writable, a private /tmp, a fresh /proc, no host pid, no store, no data dir, no environment's private/ files.

Without root the same jail runs in a user namespace of its own (``spec["userns"]``): the launcher (cold) or each
clone of the warm worker makes a fresh user namespace that maps only the user's own uid and gid, which gives it the
right to make the other namespaces and mounts; the payload then keeps the user's uid with every capability dropped
(bounding, ambient, permitted) and ``no_new_privs``. Where no namespaces can be made at all, ``enter`` degrades to
rlimits + a new session and the caller records the missing features as warnings.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import platform
import resource
import signal
import sys

CLONE_NEWNS = 0x00020000
CLONE_NEWCGROUP = 0x02000000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000

MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MNT_DETACH = 2
PR_SET_NO_NEW_PRIVS = 38
PR_SET_PDEATHSIG = 1
PR_CAPBSET_DROP = 24
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
_CAP_VERSION_3 = 0x20080522

_SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}.get(platform.machine(), 155)
_SYS_CLONE = {"x86_64": 56, "aarch64": 220}.get(platform.machine(), 56)
_libc = ctypes.CDLL(None, use_errno=True)
_pylibc = ctypes.PyDLL(None, use_errno=True)  # keeps the GIL held across clone()
#: the namespaces of a run; the cgroup namespace comes last, once the run has joined its cgroups (a cgroup v2 move
#: out of a cgroup namespace's root is refused)
NS_FLAGS = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]

#: device nodes bound into the jail's /dev
DEVICES = ("null", "zero", "full", "random", "urandom")
RLIMITS = {"AS": resource.RLIMIT_AS, "CPU": resource.RLIMIT_CPU, "FSIZE": resource.RLIMIT_FSIZE,
           "NPROC": resource.RLIMIT_NPROC, "CORE": resource.RLIMIT_CORE, "NOFILE": resource.RLIMIT_NOFILE}


def _check(ret: int, what: str) -> None:
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _b(s: str | None) -> bytes | None:
    return None if s is None else s.encode()


def mount(src: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    _check(_libc.mount(_b(src), _b(target), _b(fstype), flags, _b(data)), f"mount {src} on {target}")


def unshare(flags: int) -> None:
    _check(_libc.unshare(flags), "unshare")


def map_own_ids(uid: int, gid: int) -> None:
    """In a user namespace just made: map only our own uid and gid (what an unprivileged user may map)."""
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
        with open(f"/proc/self/{name}", "w") as f:
            f.write(text)


def enter_userns() -> None:
    """A user namespace of our own (unprivileged users: it grants the rights to make the run's other namespaces)."""
    uid, gid = os.geteuid(), os.getegid()
    unshare(CLONE_NEWUSER)
    map_own_ids(uid, gid)


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def drop_capabilities() -> None:
    """Every capability gone: the bounding and ambient sets, then effective, permitted and inheritable. A payload
    in a user namespace of its own keeps its uid, so nothing but this takes away the rights that namespace gave."""
    for cap in range(64):
        if _libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and ctypes.get_errno() == errno.EINVAL:
            break  # past the last capability this kernel knows
    _libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header = _CapHeader(_CAP_VERSION_3, 0)
    data = (_CapData * 2)()
    _check(_libc.capset(ctypes.byref(header), data), "capset")


def _bind(root: str, src: str, *, writable: bool = False, dest: str | None = None) -> None:
    dest = root + (dest or src)
    if os.path.islink(src):
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        if not os.path.lexists(dest):
            os.symlink(os.readlink(src), dest)
        return
    if not os.path.exists(src):
        return
    if os.path.isdir(src):
        os.makedirs(dest, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        if not os.path.exists(dest):
            open(dest, "wb").close()
    mount(src, dest, None, MS_BIND | MS_REC)
    flags = MS_BIND | MS_REMOUNT | MS_NOSUID | (0 if writable else MS_RDONLY)
    if not src.startswith("/dev/"):
        flags |= MS_NODEV
    mount(None, dest, None, flags)


def _build_root(spec: dict) -> None:
    """In a fresh mount namespace: a tmpfs root with only what the run needs, then pivot_root into it."""
    _root_common(spec)
    _root_finish(spec)


def _root_common(spec: dict) -> None:
    """The part of the private root that is the same for every run (a warm spare builds it ahead of time)."""
    root = spec["root_dir"]
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    mount("sandmle", root, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=16m")
    for src in spec["ro_binds"]:
        _bind(root, src)
    os.makedirs(root + "/proc", exist_ok=True)
    mount("proc", root + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    os.makedirs(root + "/dev", exist_ok=True)
    mount("sandmle-dev", root + "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=64k")
    for dev in DEVICES:
        _bind(root, "/dev/" + dev, writable=True)
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                         ("stderr", "/proc/self/fd/2")):
        os.symlink(target, f"{root}/dev/{name}")


def _seal_chain(root: str, workspace: str) -> None:
    """The folders leading to a workspace under the private /tmp or /dev/shm made read-only (a bind of the top one
    onto itself, remounted read-only; the workspace below stays writable). Elsewhere they are in the read-only
    root already. Without root the run owns these folders (chmod would not stop it): a mount flag does."""
    for tmp in ("/tmp/", "/dev/shm/"):
        if workspace.startswith(tmp):
            top = tmp + workspace[len(tmp):].split("/")[0]
            if top != workspace:
                mount(root + top, root + top, None, MS_BIND | MS_REC)
                mount(None, root + top, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)


def _hide(root: str, spec: dict) -> None:
    """The data an environment may have been built from, out of reach (the ``agent`` profile,
    :mod:`engine.sandbox.hide`): an empty read-only tmpfs over each folder, the null device over each file (on a
    ``nodev`` mount: opening it fails)."""
    for folder in spec.get("hide_dirs", ()):
        if os.path.isdir(root + folder):
            mount("sandmle-hidden", root + folder, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                  "size=4k,mode=0555")
    for path in spec.get("hide_files", ()):
        if os.path.isfile(root + path):
            mount(root + "/dev/null", root + path, None, MS_BIND)
            mount(None, root + path, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)


def _root_finish(spec: dict) -> None:
    """The run's own part: sized /tmp and /dev/shm, its workspace, then pivot_root and a read-only root."""
    root = spec["root_dir"]
    tmp_mb = int(spec.get("tmp_mb", 256))
    for tmp in ("/dev/shm", "/tmp"):
        os.makedirs(root + tmp, exist_ok=True)
        mount("sandmle-tmp", root + tmp, "tmpfs", MS_NOSUID | MS_NODEV, f"mode=1777,size={tmp_mb}m")
    # read-only binds under /tmp or /dev/shm (a venv in a checkout under /tmp, as on CI) were hidden by the
    # tmpfs just mounted: bind them again on top of it
    for src in spec["ro_binds"]:
        if src.startswith(("/tmp/", "/dev/shm/")):
            _bind(root, src)
    _hide(root, spec)
    _bind(root, spec["workspace"], writable=True)  # after /tmp: a workspace may live under /tmp
    _seal_chain(root, spec["workspace"])
    os.makedirs(root + "/.old", exist_ok=True)
    _check(_libc.syscall(_SYS_PIVOT_ROOT, root.encode(), (root + "/.old").encode()), "pivot_root")
    os.chdir("/")
    _check(_libc.umount2(b"/.old", MNT_DETACH), "umount old root")
    os.rmdir("/.old")
    mount(None, "/", None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)


def _set_rlimits(limits: dict) -> None:
    for name, value in limits.items():
        if value is None:
            continue
        soft = int(value)
        hard = soft + 1 if name == "CPU" else soft
        resource.setrlimit(RLIMITS[name], (soft, hard))


def _redirect(spec: dict) -> None:
    null = os.open("/dev/null", os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    for fd, key in ((1, "stdout"), (2, "stderr")):
        out = os.open(spec[key], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(out, fd)
        os.close(out)


def _close_fds(keep: set[int]) -> None:
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2 and fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


def _drop_privileges(spec: dict) -> None:
    uid, gid = spec.get("uid"), spec.get("gid")
    if os.geteuid() == 0 and uid is not None and gid is not None:
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)  # root -> nobody: the kernel clears every capability
    elif spec.get("userns"):
        drop_capabilities()
    _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)


def _payload_setup(spec: dict) -> None:
    os.chdir(spec["workspace"])
    _drop_privileges(spec)
    _set_rlimits(spec["rlimits"])
    os.environ.clear()
    os.environ.update(spec["env"])
    os.umask(0o022)


def _write_status(fd: int, data: dict) -> None:
    try:
        os.write(fd, json.dumps(data).encode())
        os.close(fd)
    except OSError:
        pass


def _init(spec: dict, status_fd: int) -> None:
    """pid 1 of the run's pid namespace: fork the payload, reap everything, report, exit (killing the rest)."""
    # Python ignores SIGPIPE/SIGXFSZ at start-up; the payload should see the defaults, as a fresh process would
    for default in (signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(default, signal.SIG_DFL)
    payload = os.fork()
    if payload == 0:
        os.close(status_fd)
        return
    code: int | None = None
    sig: int | None = None
    payload_ru = None
    while True:
        try:
            pid, wstatus, ru = os.wait4(-1, 0)
        except ChildProcessError:
            break
        except InterruptedError:
            continue
        if pid == payload:
            payload_ru = ru
            if os.WIFSIGNALED(wstatus):
                sig = os.WTERMSIG(wstatus)
            else:
                code = os.WEXITSTATUS(wstatus)
            break
    total = resource.getrusage(resource.RUSAGE_CHILDREN)
    _write_status(status_fd, {
        "exit_code": code, "signal": sig,
        "cpu_s": total.ru_utime + total.ru_stime,
        "maxrss_kb": max(total.ru_maxrss, payload_ru.ru_maxrss if payload_ru else 0),
    })
    os._exit(0 if sig is None and code == 0 else 1)


def enter(spec: dict) -> dict:
    """Confine this process; returns (in the payload only) a dict of the isolation features actually active.

    Every other process of the chain exits inside this call."""
    active: dict = {}
    for procs in spec.get("cgroup_procs", []):
        with open(procs, "w") as f:
            f.write(str(os.getpid()))
    active["cgroups"] = bool(spec.get("cgroup_procs"))
    status_fd = os.open(spec["status"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    _redirect(spec)
    if spec.get("namespaces", True):
        if spec.get("userns"):
            enter_userns()
        # only the pid namespace here: the caller must keep the host's mounts (pivot_root in a mount namespace
        # it shared would swap its /proc too); the init makes the other namespaces for itself
        unshare(CLONE_NEWPID)
        init = os.fork()
        if init != 0:
            # the caller: wait for the init (pid 1 inside); when it goes, the whole namespace goes with it
            os.close(status_fd)
            _close_fds(set())
            wstatus = 0
            while True:
                try:
                    _, wstatus = os.waitpid(init, 0)
                    break
                except InterruptedError:
                    continue
            os._exit(os.waitstatus_to_exitcode(wstatus) & 0xFF)
        # the init
        _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        unshare((NS_FLAGS & ~CLONE_NEWPID) | CLONE_NEWCGROUP)
        _build_root(spec)
        _close_fds({status_fd})
        _init(spec, status_fd)  # returns in the payload only
        active.update(net=True, pid=True, mount=True, ipc=True, uts=True, private_root=True)
    else:
        # degraded: no namespaces; the payload runs directly under this process, which reports its status
        payload = os.fork()
        if payload != 0:
            _close_fds({status_fd})
            _, wstatus, ru = os.wait4(payload, 0)
            code = os.waitstatus_to_exitcode(wstatus)
            _write_status(status_fd, {"exit_code": code if code >= 0 else None, "signal": -code if code < 0 else None,
                                      "cpu_s": ru.ru_utime + ru.ru_stime, "maxrss_kb": ru.ru_maxrss})
            os._exit(0)
        os.close(status_fd)
        _close_fds(set())
    _payload_setup(spec)
    active["uid"] = os.getuid()
    return active


def clone_into_namespaces(*, userns: bool = False) -> int:
    """fork() straight into new namespaces (one copy of a big warm process instead of two): returns 0 in the
    child, which is pid 1 of its own pid namespace, and the child's pid in the parent. ``userns``: in a user
    namespace of its own too (no root), which maps only our uid and gid."""
    uid, gid = os.geteuid(), os.getegid()  # read before: in the new namespace they are unmapped until written
    api = ctypes.pythonapi
    api.PyOS_BeforeFork()
    pid = _pylibc.syscall(_SYS_CLONE, NS_FLAGS | (CLONE_NEWUSER if userns else 0) | signal.SIGCHLD, 0, 0, 0, 0)
    if pid == 0:
        api.PyOS_AfterFork_Child()
        if userns:
            map_own_ids(uid, gid)
        return 0
    api.PyOS_AfterFork_Parent()
    if pid < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"clone: {os.strerror(err)}")
    return pid


def prepare_spare(common: dict) -> None:
    """In a child made by :func:`clone_into_namespaces`, before its run is known: build the common part of the
    private root, so that a request only has to add the workspace (the warm worker keeps one such spare)."""
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    _root_common(common)


def enter_cloned(spec: dict, *, prepared: bool = False) -> dict:
    """In a child made by :func:`clone_into_namespaces` (the warm worker): confine and become the payload.

    The payload is pid 1 of its namespace, so when it exits every process it started goes with it; its parent
    (the warm worker) reports its status."""
    for procs in spec.get("cgroup_procs", []):
        with open(procs, "w") as f:
            f.write("0")
    unshare(CLONE_NEWCGROUP)
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    _redirect(spec)
    if prepared:
        _root_finish(spec)
    else:
        _build_root(spec)
    _close_fds(set())
    _payload_setup(spec)
    return {"cgroups": bool(spec.get("cgroup_procs")), "net": True, "pid": True, "mount": True, "ipc": True,
            "uts": True, "private_root": True, "uid": os.getuid()}


def main() -> None:
    """Cold launcher: ``python -S jail.py SPEC_FILE`` (the spec as JSON): confine, then exec the command."""
    with open(sys.argv[1], encoding="utf-8") as f:
        spec = json.load(f)
    try:
        enter(spec)
        argv = spec["argv"]
        os.execvpe(argv[0], argv, spec["env"])
    except OSError as exc:
        os.write(2, f"sandbox: cannot start {spec['argv'][0]!r}: {exc}\n".encode())
        os._exit(127)


if __name__ == "__main__":
    main()
