"""The ``local`` backend: a subprocess per run in its own session, with rlimits, wall-time kill of the whole
process group, output captured to a capped log file, and a record in the store.

(First version: isolation via bubblewrap / namespaces / cgroups is layered on by ``engine.sandbox`` later
without changing this interface.)
"""

from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Sequence

from ..errors import SandboxError
from .base import Limits, RunResult, SandboxBackend, Workspace, new_run_id
from .text import head_tail


def _preexec(limits: Limits):
    def apply() -> None:
        mem = int(limits.memory_mb) * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
        cpu = int(max(1, limits.cpu_s))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        fsize = int(limits.max_file_mb) * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    return apply


class LocalWorkspace(Workspace):
    def __init__(self, backend: "LocalBackend", path: Path, label: str | None):
        self.backend = backend
        self.path = path
        self.label = label
        self._closed = False

    def _safe(self, relpath: str) -> Path:
        target = (self.path / relpath).resolve()
        if not str(target).startswith(str(self.path.resolve()) + os.sep) and target != self.path.resolve():
            raise SandboxError(f"path {relpath!r} is outside the workspace")
        return target

    def read_file(self, relpath: str) -> bytes:
        return self._safe(relpath).read_bytes()

    def write_file(self, relpath: str, data: bytes) -> None:
        target = self._safe(relpath)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)

    def run(self, command: Sequence[str] | str, *, limits: Limits | None = None,
            meta: dict[str, Any] | None = None) -> RunResult:
        if self._closed:
            raise SandboxError("the workspace is closed")
        limits = limits or self.backend.default_limits
        argv = ["/bin/sh", "-c", command] if isinstance(command, str) else list(command)
        if argv and argv[0] == "python":
            argv[0] = sys.executable
        run_id = new_run_id()
        log_path = self.backend.log_dir / f"{run_id}.log"
        meta = dict(meta or {})
        store = self.backend.store
        if store is not None:
            store.sandbox.start({
                "id": run_id, "backend": "local", "command": " ".join(map(str, argv)), "limits": limits.to_dict(),
                "isolation": {"rlimits": True}, "log_path": str(log_path), "workdir": str(self.path),
                "env_id": meta.get("env_id"), "run_id": meta.get("run_id"),
                "trajectory_id": meta.get("trajectory_id"), "executor": meta.get("executor"),
            })
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.path), "PYTHONUNBUFFERED": "1",
               "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "LANG": "C.UTF-8"}
        out_path = self.path.parent / f".{run_id}.out"
        err_path = self.path.parent / f".{run_id}.err"
        cap = limits.max_output_kb * 1024
        start = time.monotonic()
        status = None
        with open(out_path, "wb") as out_f, open(err_path, "wb") as err_f:
            proc = subprocess.Popen(argv, cwd=self.path, env=env, stdout=out_f, stderr=err_f,
                                    stdin=subprocess.DEVNULL, start_new_session=True, preexec_fn=_preexec(limits))
            deadline = start + limits.timeout_s
            while proc.poll() is None:
                if time.monotonic() > deadline:
                    status = "timeout"
                    break
                if out_f.tell() + err_f.tell() > cap or (out_path.stat().st_size + err_path.stat().st_size) > cap:
                    status = "output_limit"
                    break
                time.sleep(0.005)
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
        wall = time.monotonic() - start
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        code = proc.returncode
        stdout = out_path.read_bytes()[:cap].decode("utf-8", "replace")
        stderr = err_path.read_bytes()[:cap].decode("utf-8", "replace")
        out_path.unlink(missing_ok=True)
        err_path.unlink(missing_ok=True)
        if status is None:
            if code == 0:
                status = "ok"
            elif code == -signal.SIGXCPU or code == -signal.SIGKILL and "CPU" in stderr:
                status = "timeout"
            elif "MemoryError" in stderr or "Cannot allocate memory" in stderr:
                status = "memory"
            elif code is not None and code < 0:
                status = "killed"
            else:
                status = "error"
        log_path.write_text(f"$ {' '.join(map(str, argv))}\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}")
        result = RunResult(
            run_id=run_id, status=status, exit_code=code, wall_s=wall, cpu_s=ru.ru_utime + ru.ru_stime,
            peak_rss_mb=ru.ru_maxrss / 1024, stdout_tail=head_tail(stdout, limits.tail_chars),
            stderr_tail=head_tail(stderr, limits.tail_chars), log_path=str(log_path),
        )
        if store is not None:
            store.sandbox.finish(run_id, status=status, exit_code=code, wall_s=wall, cpu_s=result.cpu_s,
                                 peak_rss_mb=result.peak_rss_mb, stdout_tail=result.stdout_tail,
                                 stderr_tail=result.stderr_tail)
        return result

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            shutil.rmtree(self.path.parent, ignore_errors=True)


class LocalBackend(SandboxBackend):
    name = "local"

    def __init__(self, *, store=None, settings=None, root: str | Path | None = None, limits: Limits | None = None):
        self.store = store
        if limits is None:
            limits = Limits.from_settings(settings) if settings is not None else Limits()
        self.default_limits = limits
        base = Path(root) if root else (store.data_dir if store is not None else Path(tempfile.gettempdir()) / "sandmle")
        self.log_dir = base / "sandbox-logs"
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.work_root = base / "workspaces"
        self.work_root.mkdir(parents=True, exist_ok=True)

    def open(self, source: Path | None = None, *, label: str | None = None) -> LocalWorkspace:
        holder = Path(tempfile.mkdtemp(prefix="ws-", dir=self.work_root))
        path = holder / "work"
        if source is not None:
            source = Path(source)
            if not source.is_dir():
                raise SandboxError(f"{source}: not a folder")
            shutil.copytree(source, path)
        else:
            path.mkdir()
        return LocalWorkspace(self, path, label)
