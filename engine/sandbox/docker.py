"""The ``docker`` backend (docker SDK): one container per workspace, ``network_mode="none"``, memory / CPU / pids
limits, all capabilities dropped, a read-only root filesystem, the public files mounted read-only at ``/public``
plus a writable copy at ``/workspace`` (the workspace). Each run is an ``exec`` in that container, wrapped in
``timeout`` and ``ulimit``; its output is streamed with a cap and recorded in the store like a local run."""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Sequence

from store.common import JSON

from ..errors import SandboxError
from .base import HostFolderFiles, Limits, RunMeta, RunResult, SandboxBackend, Workspace, new_run_id
from .text import head_tail

WORKDIR = "/workspace"


def _client(timeout_s: float = 5.0):
    try:
        import docker  # heavy optional dependency: loaded only when used
    except ImportError:
        raise SandboxError("the docker backend needs the docker SDK", hint="pip install docker") from None
    try:
        client = docker.from_env(timeout=timeout_s)
        client.ping()
        return client
    except Exception as exc:  # the SDK raises several kinds when no daemon answers
        reason = str(exc).splitlines()[0][:160]
        raise SandboxError(f"no Docker daemon answers ({reason})",
                           hint="start dockerd, or use the local backend: --backend local") from None


class DockerWorkspace(HostFolderFiles, Workspace):
    def __init__(self, backend: "DockerBackend", container, holder: Path):
        self.backend = backend
        self.container = container
        self.holder = holder
        self.path = holder / "work"
        self._closed = False

    def _after_write(self, target: Path) -> None:
        target.chmod(0o666)  # the container's user must be able to rewrite it

    def run(self, command: Sequence[str] | str, *, limits: Limits | None = None,
            meta: RunMeta | None = None, warm: bool | None = None) -> RunResult:
        """Run a command in the container (no warm worker here: ``warm`` is ignored)."""
        if self._closed:
            raise SandboxError("the workspace is closed")
        limits = limits or self.backend.default_limits
        argv = ["/bin/sh", "-c", command] if isinstance(command, str) else [str(a) for a in command]
        shell = (f"ulimit -t {int(max(1, limits.cpu_s))} -f {int(limits.max_file_mb) * 1024} -c 0; "
                 f'exec timeout -s KILL {limits.timeout_s:g} "$@"')
        wrapped = ["/bin/sh", "-c", shell, "sandbox"] + argv
        meta = dict(meta or {})
        run_id = new_run_id()
        log_path = self.backend.log_dir / f"{run_id}.log"
        store = self.backend.store
        iso: dict[str, JSON] = {"container": True, "network_off": True, "cap_drop_all": True, "read_only_root": True,
               "cgroup_pids": True, "cgroup_memory": True, "unprivileged_uid": True, "warm": False}
        if store is not None:
            store.sandbox.start({"id": run_id, "backend": "docker", "command": " ".join(argv),
                                 "limits": limits.to_dict(), "isolation": iso, "warnings": [],
                                 "log_path": str(log_path), "workdir": str(self.path), "env_id": meta.get("env_id"),
                                 "run_id": meta.get("run_id"), "trajectory_id": meta.get("trajectory_id"),
                                 "executor": meta.get("executor")})
        api = self.container.client.api
        start = time.monotonic()
        exec_id = api.exec_create(self.container.id, wrapped, workdir=WORKDIR, user="65534:65534",
                                  environment={"HOME": WORKDIR, "PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": "1"})["Id"]
        cap = limits.max_output_kb * 1024
        out, err, status = bytearray(), bytearray(), None
        stream = api.exec_start(exec_id, stream=True, demux=True)
        done = threading.Event()

        def pump() -> None:
            nonlocal status
            for o, e in stream:
                out.extend(o or b"")
                err.extend(e or b"")
                if len(out) + len(err) > cap:
                    status = "output_limit"
                    break
            done.set()

        threading.Thread(target=pump, daemon=True).start()
        done.wait(limits.timeout_s + 5)
        if status == "output_limit" or not done.is_set():
            status = status or "timeout"
            self.container.exec_run(["pkill", "-KILL", "-u", "65534"], user="root")
        info = api.exec_inspect(exec_id)
        wall = time.monotonic() - start
        code = info.get("ExitCode")
        stdout = bytes(out[:cap]).decode("utf-8", "replace")
        stderr = bytes(err[:cap]).decode("utf-8", "replace")
        if status is None:
            if code == 0:
                status = "ok"
            elif code == 137 and wall >= limits.timeout_s - 0.05:
                status = "timeout"
            elif code == 137 or "MemoryError" in stderr:
                status = "memory" if self._oom() or "MemoryError" in stderr else "killed"
            elif code is not None and code > 128:
                status = "killed"
            else:
                status = "error"
        log_path.write_text(f"$ {' '.join(argv)}\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}")
        result = RunResult(run_id=run_id, status=status, exit_code=code, wall_s=wall,
                           stdout_tail=head_tail(stdout, limits.tail_chars),
                           stderr_tail=head_tail(stderr, limits.tail_chars), log_path=str(log_path), isolation=iso)
        if store is not None:
            store.sandbox.finish(run_id, status=status, exit_code=code, wall_s=wall, cpu_s=0.0, peak_rss_mb=0.0,
                                 stdout_tail=result.stdout_tail, stderr_tail=result.stderr_tail)
        return result

    def _oom(self) -> bool:
        try:
            self.container.reload()
            return bool(self.container.attrs.get("State", {}).get("OOMKilled"))
        except Exception:
            return False

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            try:
                self.container.remove(force=True)
            except Exception:
                pass
            shutil.rmtree(self.holder, ignore_errors=True)


class DockerBackend(SandboxBackend):
    name = "docker"

    def __init__(self, *, store=None, settings=None, image: str | None = None, limits: Limits | None = None,
                 root: str | Path | None = None, **_: Any):
        self.client = _client()
        self.store = store
        self.image = image or (settings.docker_image if settings is not None else "python:3.11-slim")
        if limits is None:
            limits = Limits.from_settings(settings) if settings is not None else Limits()
        self.default_limits = limits
        base = Path(root) if root else (store.data_dir if store is not None else Path(tempfile.gettempdir()) / "sandmle")
        self.log_dir = base / "sandbox-logs"
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.work_root = base / "workspaces"
        self.work_root.mkdir(parents=True, exist_ok=True)

    def open(self, source: Path | None = None, *, label: str | None = None) -> DockerWorkspace:
        holder = Path(tempfile.mkdtemp(prefix="dws-", dir=self.work_root))
        work = holder / "work"
        if source is not None:
            if not Path(source).is_dir():
                raise SandboxError(f"{source}: not a folder")
            shutil.copytree(source, work)
        else:
            work.mkdir()
        for p in [work, *work.rglob("*")]:
            p.chmod(0o777 if p.is_dir() else 0o666)
        lim = self.default_limits
        volumes = {str(work): {"bind": WORKDIR, "mode": "rw"}}
        if source is not None:
            volumes[str(Path(source).resolve())] = {"bind": "/public", "mode": "ro"}
        container = self.client.containers.run(
            self.image, ["sleep", "infinity"], detach=True, network_mode="none", mem_limit=f"{lim.memory_mb}m",
            memswap_limit=f"{lim.memory_mb}m", nano_cpus=int(1e9), pids_limit=lim.max_procs, cap_drop=["ALL"],
            security_opt=["no-new-privileges"], read_only=True, tmpfs={"/tmp": "size=256m"}, volumes=volumes,
            working_dir=WORKDIR, labels={"sandmle": "workspace", "sandmle.label": label or ""}, init=True,
        )
        return DockerWorkspace(self, container, holder)
