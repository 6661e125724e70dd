"""The ``docker`` backend (docker SDK): one container per workspace, talked to only through the daemon's API, so
the daemon may run on another machine.

A container has no network (``network_mode="none"``), all capabilities dropped but the two that let its root
switch user, ``no-new-privileges``, a read-only root filesystem, a ``/tmp`` tmpfs, and memory and pids limits.
Its ``/workspace`` is a size-limited tmpfs volume (the disk quota); files go in and out through the archive API.
Each run is an ``exec``: ``timeout`` (root) → ``prlimit`` (CPU time, file size, processes) → ``setpriv`` to the
workspace's own unprivileged uid → the command; memory is the container's cgroup limit (which the files of its
tmpfs workspace and ``/tmp`` count against too). The uid is unique to the workspace, so the process limit
counts only this run's processes and, when the run ends, a ``kill -1`` as that uid removes everything it left
(daemons included) while the command could never signal the root processes above it.
"""

from __future__ import annotations

import io
import os
import posixpath
import random
import shutil
import tarfile
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

from store import Store, owners

from ..config import SandboxSettings
from ..errors import FileTooLarge, SandboxError, WorkspaceFault
from .hide import DEFAULT_PROFILE, blank_file, check_profile, for_profile
from .base import (
    Isolation, Limits, RunMeta, RunResult, SandboxBackend, Workspace, new_run_id, record_finish, record_start,
)
from .image import BASE_IMAGE, HOST_MOUNTS_LABEL, build_base_image, host_mounts
from .child import THREAD_ENV, venv_python
from .text import head_tail
from .verdict import classify

if TYPE_CHECKING:  # the docker SDK is an optional dependency, imported when the backend is built
    from docker import DockerClient
    from docker.models.containers import Container
    from docker.models.volumes import Volume

WORKDIR = "/workspace"
#: root processes of a container during a run (its init, the sleeping main process, ``timeout``)
ROOT_PROCS = 3
#: pids a container keeps beyond its runs' limit, so the backend can always exec its clean-up
PIDS_HEADROOM = 8
#: Go's FileMode type bits (the archive API's stat): directory, symlink, pipe, socket, device, char device, irregular
_GO_TYPE_BITS = (1 << 31) | (1 << 27) | (1 << 26) | (1 << 25) | (1 << 24) | (1 << 21) | (1 << 19)
_COUNTER_FILES = ("pids/pids.events", "pids.events", "memory/memory.oom_control", "memory.events",
                  "cpuacct/cpuacct.usage", "cpu.stat")


def connect(timeout_s: float = 5.0) -> DockerClient:
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
                           hint="start dockerd, or use the local backend: --sandbox-backend local") from None


@dataclass
class _Counters:
    """The container's cgroup counters (cumulative since it started)."""

    pids_max: int = 0  #: forks refused by the pids limit
    oom_kills: int = 0
    cpu_ns: int = 0

    @classmethod
    def parse(cls, text: str) -> "_Counters":
        out = cls()
        for line in text.splitlines():
            path, _, value = line.partition(":")
            key, _, number = value.strip().rpartition(" ")
            if not number.isdigit():
                continue
            if path.endswith("pids.events") and key == "max":
                out.pids_max = int(number)
            elif key == "oom_kill":
                out.oom_kills = int(number)
            elif path.endswith("cpuacct.usage") and not key:
                out.cpu_ns = int(number)
            elif path.endswith("cpu.stat") and key == "usage_usec":
                out.cpu_ns = int(number) * 1000
        return out


class _Chunks(io.RawIOBase):
    """A file-like view of the archive API's stream of byte chunks (for ``tarfile`` in stream mode)."""

    def __init__(self, chunks: Iterator[bytes]):
        self._chunks = chunks
        self._buf = b""

    def readable(self) -> bool:
        return True

    def readinto(self, target: bytearray | memoryview) -> int:  # type: ignore[override]
        while not self._buf:
            self._buf = next(self._chunks, b"")
            if not self._buf:
                return 0
        n = min(len(target), len(self._buf))
        target[:n] = self._buf[:n]
        self._buf = self._buf[n:]
        return n


def _regular(stat: dict[str, Any]) -> bool:
    return not int(stat.get("mode", 0)) & _GO_TYPE_BITS


class DockerWorkspace(Workspace):
    def __init__(self, backend: DockerBackend, container: Container, volume: Volume, uid: int,
                 profile: str = DEFAULT_PROFILE):
        self.backend = backend
        self.container = container
        self.volume = volume
        self.uid = uid
        self.profile = profile
        self._memory_mb = int(backend.default_limits.memory_mb)
        self._seen = _Counters()
        self._closed = False

    # ------------------------------------------------------------------ files
    def _abs(self, relpath: str) -> str:
        path = posixpath.normpath(posixpath.join(WORKDIR, relpath))
        if path != WORKDIR and not path.startswith(WORKDIR + "/"):
            raise SandboxError(f"path {relpath!r} is outside the workspace")
        return path

    def _info(self, name: str, *, size: int = 0, kind: bytes = tarfile.REGTYPE, mode: int = 0o644,
              link: str = "") -> tarfile.TarInfo:
        info = tarfile.TarInfo(name)
        info.size, info.type, info.mode, info.linkname = size, kind, mode, link
        info.uid = info.gid = self.uid
        info.mtime = int(time.time())
        return info

    def _put(self, add: Callable[[tarfile.TarFile], None]) -> None:
        """Extract a tar archive into the workspace; ``add(tar)`` fills it (names relative to the workspace). The
        archive spills to disk past 16 MB (a large public folder) and streams to the daemon."""
        with tempfile.SpooledTemporaryFile(max_size=16 * 2**20) as buf:
            with tarfile.open(fileobj=buf, mode="w") as tar:
                add(tar)
            buf.seek(0)
            self.container.client.api.put_archive(self.container.id, WORKDIR, buf)

    def _parents(self, tar: tarfile.TarFile, rel: str) -> None:
        parts = rel.split("/")[:-1]
        for i in range(len(parts)):
            tar.addfile(self._info("/".join(parts[: i + 1]), kind=tarfile.DIRTYPE, mode=0o755))

    def _stat(self, relpath: str) -> tuple[str, dict[str, Any]] | None:
        """(absolute path, archive stat) of a file, following one symlink that stays in the workspace."""
        import docker.errors  # heavy optional dependency: loaded only when used

        path = self._abs(relpath)
        for _ in range(2):
            try:
                stream, stat = self.container.client.api.get_archive(self.container.id, path, chunk_size=64 * 1024)
            except docker.errors.NotFound:
                return None
            stream.close()
            target = stat.get("linkTarget") or ""
            if not target:
                return path, stat
            path = self._abs(posixpath.relpath(target, WORKDIR)) if target.startswith("/") else self._abs(
                posixpath.join(posixpath.dirname(path), target))
        return None

    def size(self, relpath: str) -> int | None:
        found = self._stat(relpath)
        if found is None or not _regular(found[1]):
            return None
        return int(found[1]["size"])

    def read_file(self, relpath: str, *, max_bytes: int | None = None) -> bytes:
        found = self._stat(relpath)
        if found is None or not _regular(found[1]):
            raise SandboxError(f"{relpath}: no such file in the workspace")
        path, stat = found
        if max_bytes is not None and int(stat["size"]) > max_bytes:
            raise FileTooLarge(relpath, int(stat["size"]), max_bytes)
        stream, _ = self.container.client.api.get_archive(self.container.id, path, chunk_size=64 * 1024)
        with tarfile.open(fileobj=io.BufferedReader(_Chunks(iter(stream))), mode="r|") as tar:
            for member in tar:
                handle = tar.extractfile(member)
                if handle is not None:
                    return handle.read()
        raise SandboxError(f"{relpath}: no such file in the workspace")

    def write_file(self, relpath: str, data: bytes) -> None:
        rel = posixpath.relpath(self._abs(relpath), WORKDIR)

        def add(tar: tarfile.TarFile) -> None:
            self._parents(tar, rel)
            tar.addfile(self._info(rel, size=len(data), mode=0o666), io.BytesIO(data))

        import docker.errors  # heavy optional dependency: loaded only when used

        try:
            self._put(add)
        except docker.errors.APIError as exc:  # a folder a run made in the file's place: the run's doing
            if "directory" not in str(exc).lower():
                raise
            raise WorkspaceFault(f"cannot write {relpath}: {str(exc).splitlines()[0][:200]}") from None

    def link(self, relpath: str, target: str) -> None:
        rel = posixpath.relpath(self._abs(relpath), WORKDIR)
        self._abs(posixpath.join(posixpath.dirname(rel), target))  # the target must stay in the workspace

        def add(tar: tarfile.TarFile) -> None:
            self._parents(tar, rel)
            tar.addfile(self._info(rel, kind=tarfile.SYMTYPE, mode=0o777, link=target))

        self._put(add)

    def copy_in(self, source: Path, relpath: str = ".") -> None:
        rel = posixpath.relpath(self._abs(relpath), WORKDIR)
        source = Path(source)

        def own(info: tarfile.TarInfo) -> tarfile.TarInfo:
            info.uid = info.gid = self.uid
            info.uname = info.gname = ""
            info.mode = (info.mode | 0o644) & 0o777 | (0o111 if info.isdir() else 0)
            return info

        def add(tar: tarfile.TarFile) -> None:
            if rel != ".":
                self._parents(tar, rel + "/x")
            if source.is_dir():
                for child in sorted(source.iterdir()):
                    tar.add(child, arcname=posixpath.normpath(posixpath.join(rel, child.name)), filter=own)
            else:
                tar.add(source, arcname=rel, filter=own)

        self._put(add)

    def copy_out(self, relpath: str, dest: Path, *, max_bytes: int | None = None) -> None:
        """Regular files and folders only: a link or device in the output is refused."""
        found = self._stat(relpath)  # a link to a file inside the workspace is followed
        if found is None:
            raise SandboxError(f"{relpath}: no such file in the workspace")
        stream, _ = self.container.client.api.get_archive(self.container.id, found[0], chunk_size=256 * 1024)
        dest = Path(dest)
        total = 0
        with tarfile.open(fileobj=io.BufferedReader(_Chunks(iter(stream))), mode="r|") as tar:
            for member in tar:
                parts = member.name.split("/")[1:]  # the archive's root is the copied file or folder itself
                if any(p in ("", ".", "..") for p in parts):
                    raise SandboxError(f"{relpath}: unsafe name {member.name!r} in the output")
                target = dest.joinpath(*parts)
                if member.isdir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                if not member.isfile():
                    raise SandboxError(f"{relpath}: {member.name} is not a regular file")
                total += member.size
                if max_bytes is not None and total > max_bytes:
                    raise FileTooLarge(relpath, total, max_bytes)
                target.parent.mkdir(parents=True, exist_ok=True)
                handle = tar.extractfile(member)
                if handle is None:
                    raise SandboxError(f"{relpath}: {member.name} cannot be read")
                with open(target, "wb") as out:
                    shutil.copyfileobj(handle, out)

    def remove(self, relpath: str) -> None:
        path = self._abs(relpath)
        if path == WORKDIR:
            raise SandboxError("cannot remove the workspace itself")
        self.container.exec_run(self._as_sandbox(["rm", "-rf", "--", path]), user="0:0")

    # ------------------------------------------------------------------ runs
    def _as_sandbox(self, argv: list[str]) -> list[str]:
        return ["setpriv", f"--reuid={self.uid}", f"--regid={self.uid}", "--clear-groups", "--", *argv]

    def run(self, command: Sequence[str] | str, *, limits: Limits | None = None, meta: RunMeta | None = None,
            warm: bool | None = None) -> RunResult:
        """Run a command (``warm`` is accepted for the interface; containers always run cold)."""
        if self._closed:
            raise SandboxError("the workspace is closed")
        limits = limits or self.backend.default_limits
        argv = ["/bin/sh", "-c", command] if isinstance(command, str) else [str(a) for a in command]
        if not argv:
            raise SandboxError("empty command")
        if argv[0] in ("python", "python3"):
            argv[0] = self.backend.python
        self._fit_memory(limits)
        procs = min(int(limits.max_procs), self.backend.max_procs)
        wrapped = ["timeout", "-s", "KILL", f"{limits.timeout_s:g}", "prlimit", f"--nproc={procs}",
                   f"--cpu={int(max(1, limits.cpu_s))}:{int(max(1, limits.cpu_s)) + 1}",
                   f"--fsize={int(limits.max_file_mb) * 2**20}", "--core=0", "--nofile=4096", "--",
                   *self._as_sandbox(argv)]
        run_id = new_run_id()
        log_path = self.backend.log_dir / f"{run_id}.log"
        iso = self.backend.isolation(self.profile)
        store = self.backend.store
        # a run asked to be warm never goes cold silently
        said = ["--warm: the docker backend has no warm worker (each command is a fresh exec): ran cold"] if warm else []
        if self.profile == "agent" and not self.backend.host_python:
            said.append(f"the image {self.backend.image!r} brings its own packages: the data packages are hidden only "
                        "if it has none (the exploit audit's lookup probe checks: sandmle envs audit)")
        record_start(store, run_id=run_id, backend="docker", argv=argv, limits=limits, isolation=iso, warnings=said,
                     log_path=log_path, workdir=f"{self.container.short_id}:{WORKDIR}", meta=meta)
        start = time.monotonic()
        try:
            exec_id, out, err, verdict, counters = self._follow(wrapped, limits, procs)
        except BaseException as exc:  # Ctrl-C or a daemon error: the run must not outlive us
            self._clean_up()
            why = "interrupted" if isinstance(exc, KeyboardInterrupt) else f"sandbox error: {exc!r}"
            record_finish(store, RunResult(run_id=run_id, status="killed", exit_code=None,
                                           wall_s=time.monotonic() - start, stderr_tail=why[:2000],
                                           warnings=said + [why], isolation=iso))
            raise
        code = self._exit_code(exec_id)
        wall = time.monotonic() - start
        stdout, stderr = out.decode("utf-8", "replace"), err.decode("utf-8", "replace")
        status, reason = verdict.get("status", ""), verdict.get("reason")
        if not status:
            status, reason = classify(code, stderr, mem_hit=counters.oom_kills > self._seen.oom_kills,
                                      pids_hit=counters.pids_max > self._seen.pids_max, disk_full=False,
                                      cpu_over=False)
            if status == "killed" and code == -9 and wall >= limits.timeout_s - 0.05:
                status, reason = "timeout", f"wall time over {limits.timeout_s:g}s"
        cpu_s = max(0.0, (counters.cpu_ns - self._seen.cpu_ns) / 1e9)
        self._seen = counters
        log_path.write_text(f"$ {' '.join(argv)}\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}"
                            + (f"\n--- sandbox ---\n{status}: {reason}\n" if reason else ""))
        result = RunResult(run_id=run_id, status=status, exit_code=code, wall_s=wall, cpu_s=cpu_s,
                           stdout_tail=head_tail(stdout, limits.tail_chars),
                           stderr_tail=head_tail(stderr, limits.tail_chars), log_path=str(log_path),
                           warnings=said + ([reason] if reason else []), isolation=iso)
        record_finish(store, result)
        return result

    def _follow(self, wrapped: list[str], limits: Limits,
                procs: int) -> tuple[str, bytes, bytes, dict[str, str], _Counters]:
        """Start the exec and collect its output (up to the cap) until it ends or crosses a limit the container
        cannot enforce by itself; then clean up. Returns the exec id, stdout, stderr, the status and reason of a
        crossed limit (empty if none) and the counters after the run."""
        api = self.container.client.api
        exec_id = api.exec_create(self.container.id, wrapped, workdir=WORKDIR, user="0:0",
                                  environment=self.backend.run_env())["Id"]
        stream = api.exec_start(exec_id, stream=True, demux=True)
        cap = limits.max_output_kb * 1024
        out, err = bytearray(), bytearray()
        ended = threading.Event()
        verdict: dict[str, str] = {}

        def pump() -> None:  # reads to the end even past the cap: an unread stream stalls the daemon's execs
            try:
                for chunk_out, chunk_err in stream:
                    if "status" in verdict:
                        continue
                    out.extend(chunk_out or b"")
                    err.extend(chunk_err or b"")
                    if len(out) + len(err) > cap:
                        verdict.update(status="output_limit", reason=f"output over {limits.max_output_kb} KB")
                        ended.set()
            finally:
                ended.set()

        def watch() -> None:  # the process limit: a fork bomb spins at it, so stop it there
            while not ended.is_set():
                try:
                    stats = self.container.stats(stream=False, one_shot=True)
                except Exception:  # the container is gone: the run is over
                    return
                if (stats.get("pids_stats") or {}).get("current", 0) >= procs + ROOT_PROCS and not ended.is_set():
                    verdict.setdefault("status", "killed")
                    verdict.setdefault("reason", f"process limit ({procs}) reached")
                    ended.set()

        reader = threading.Thread(target=pump, daemon=True, name=f"{exec_id[:12]}-out")
        reader.start()
        threading.Thread(target=watch, daemon=True, name=f"{exec_id[:12]}-pids").start()
        if not ended.wait(limits.timeout_s + 5):
            verdict.update(status="timeout", reason=f"wall time over {limits.timeout_s:g}s")
        counters = self._clean_up()
        reader.join(10)
        return exec_id, bytes(out[:cap]), bytes(err[:cap]), verdict, counters

    def _fit_memory(self, limits: Limits) -> None:
        """The container's memory limit (cgroup: resident memory, and the files of its tmpfs workspace and /tmp)
        becomes the run's."""
        want = int(limits.memory_mb)
        if want != self._memory_mb:
            self.container.client.api.update_container(self.container.id, mem_limit=f"{want}m",
                                                       memswap_limit=f"{want}m")
            self._memory_mb = want

    def _clean_up(self) -> _Counters:
        """Kill whatever the run left (as its uid, so nothing else: twice, for children forked meanwhile); then
        read the container's counters."""
        kill = " ".join(self._as_sandbox(["kill", "-9", "-1"]))
        files = " ".join(f"/sys/fs/cgroup/{f}" for f in _COUNTER_FILES)
        script = f"{kill} 2>/dev/null; {kill} 2>/dev/null; grep -H . {files} 2>/dev/null; true"
        result = self.container.exec_run(["/bin/sh", "-c", script], user="0:0")
        return _Counters.parse(result.output.decode("utf-8", "replace"))

    def _exit_code(self, exec_id: str) -> int | None:
        api = self.container.client.api
        for _ in range(50):
            info = api.exec_inspect(exec_id)
            if not info.get("Running"):
                code = info.get("ExitCode")
                return -(code - 128) if code is not None and code > 128 else code
            time.sleep(0.02)
        return None

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.backend.discard(self.container, self.volume)


@dataclass
class Leftover:
    """A container or volume of a workspace whose owning process, on this host, has ended (killed mid-episode)."""

    kind: str  #: "container" or "volume"
    name: str
    owner: str  #: its ``sandmle.owner`` label (``pid start host``)
    resource: Container | Volume

    def remove(self) -> None:
        _remove(self.resource)


def _remove(resource: Container | Volume) -> None:
    try:
        resource.remove(force=True)
    except Exception:  # already gone
        pass


def leftovers(client: DockerClient) -> list[Leftover]:
    """The workspaces' containers, then volumes (a volume goes once its container has), labelled ``sandmle`` whose
    owner process has ended; a live process's, and another host's, are never listed."""
    found: list[Leftover] = []
    label = {"label": "sandmle=workspace"}
    for container in client.containers.list(all=True, filters=label):
        found.append(Leftover("container", container.name, container.labels.get("sandmle.owner", ""), container))
    for volume in client.volumes.list(filters=label):
        found.append(Leftover("volume", volume.name, (volume.attrs.get("Labels") or {}).get("sandmle.owner", ""),
                              volume))
    return [leftover for leftover in found if owners.tag_gone(leftover.owner)]


def reachable(timeout_s: float = 2.0) -> DockerClient | None:
    """A client of the Docker daemon when the SDK is installed and a daemon answers; else None."""
    try:
        return connect(timeout_s)
    except SandboxError:
        return None


class DockerBackend(SandboxBackend):
    name = "docker"

    def __init__(self, *, store: Store | None = None, settings: SandboxSettings | None = None,
                 limits: Limits | None = None, root: str | Path | None = None):
        settings = settings or SandboxSettings()
        self.client = connect()
        self.store = store
        self.image = settings.docker_image
        labels = self._image_labels()
        self.host_python = labels.get(HOST_MOUNTS_LABEL) == "1"
        self.python = venv_python() if self.host_python else "python"
        self.default_limits = limits = limits or Limits.from_settings(settings)
        #: the most processes a run may have (the container's pids limit keeps a headroom above it)
        self.max_procs = int(limits.max_procs)
        base = Path(root) if root else (store.data_dir if store is not None else Path("/tmp") / "sandmle")
        self.log_dir = base / "sandbox-logs"
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self._sweep_stale()

    def _image_labels(self) -> dict[str, str]:
        import docker.errors  # heavy optional dependency: loaded only when used

        try:
            image = self.client.images.get(self.image)
        except docker.errors.ImageNotFound:
            if self.image != BASE_IMAGE:
                raise SandboxError(f"docker image {self.image!r} is not on the daemon",
                                   hint="pull or build it, or unset [sandbox] docker_image to use the base "
                                        "image (sandmle sandbox build-image)") from None
            build_base_image(self.client, self.image)
            image = self.client.images.get(self.image)
        return dict(image.labels or {})

    @staticmethod
    def _tmp_mb(limits: Limits) -> int:
        return min(int(limits.max_disk_mb), 1024)

    def isolation(self, profile: str = DEFAULT_PROFILE) -> Isolation:
        return {"mode": "docker", "image": self.image, "namespaces": True, "network_off": True,
                "private_root": True, "read_only_root": True, "cap_drop_all": True, "unprivileged_uid": True,
                "rlimits": True, "cgroup_pids": True, "cgroup_memory": True, "disk_quota": True, "warm": False,
                "profile": profile, "data_hidden": profile == "agent" and self.host_python}

    def run_env(self) -> dict[str, str]:
        path = "/usr/local/bin:/usr/bin:/bin"
        if self.host_python:
            path = f"{os.path.dirname(self.python)}:{path}"
        return {"PATH": path, "HOME": WORKDIR, "USER": "sandbox", "LOGNAME": "sandbox", "LANG": "C.UTF-8",
                "TMPDIR": "/tmp", "PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1", "MPLBACKEND": "Agg",
                **THREAD_ENV}

    def _labels(self, label: str | None) -> dict[str, str]:
        return {"sandmle": "workspace", "sandmle.label": label or "", "sandmle.owner": owners.tag()}

    def _sweep_stale(self) -> None:
        """Remove the containers and volumes whose owning process, on this host, is gone (killed mid-episode)."""
        for leftover in leftovers(self.client):
            leftover.remove()

    def open(self, source: Path | None = None, *, label: str | None = None,
             profile: str = DEFAULT_PROFILE) -> DockerWorkspace:
        check_profile(profile)
        if source is not None and not Path(source).is_dir():
            raise SandboxError(f"{source}: not a folder")
        lim = self.default_limits
        labels = self._labels(label)
        volume = self.client.volumes.create(driver="local", labels=labels, driver_opts={
            "type": "tmpfs", "device": "tmpfs", "o": f"size={int(lim.max_disk_mb)}m,mode=0777"})
        volumes = {volume.name: {"bind": WORKDIR, "mode": "rw"}}
        tmpfs = {"/tmp": f"size={self._tmp_mb(lim)}m,mode=1777"}
        mounts = []
        if self.host_python:
            volumes.update({p: {"bind": p, "mode": "ro"} for p in host_mounts() if os.path.exists(p)})
            # the data packages out of reach (agent code): an empty read-only tmpfs over each folder, the null
            # blank nobody may read over each file (engine.sandbox.hide, the same paths as the local backend's)
            from docker.types import Mount  # heavy optional dependency: loaded only when used

            hidden = for_profile(profile)
            tmpfs.update({d: "ro,size=4k,mode=0555" for d in hidden.dirs if os.path.isdir(d)})
            blank = blank_file(self.log_dir)
            mounts = [Mount(f, blank, type="bind", read_only=True) for f in hidden.files if os.path.isfile(f)]
        try:
            container = self.client.containers.run(
                self.image, ["sleep", "infinity"], detach=True, network_mode="none", user="0:0",
                mem_limit=f"{lim.memory_mb}m", memswap_limit=f"{lim.memory_mb}m",
                nano_cpus=int(1e9), pids_limit=self.max_procs + ROOT_PROCS + PIDS_HEADROOM,
                cap_drop=["ALL"], cap_add=["SETUID", "SETGID"], security_opt=["no-new-privileges"],
                read_only=True, tmpfs=tmpfs, volumes=volumes, mounts=mounts,
                working_dir=WORKDIR, labels=labels, init=True)
        except Exception:
            volume.remove(force=True)
            raise
        ws = DockerWorkspace(self, container, volume, uid=random.randint(100_000, 999_999), profile=profile)
        try:
            if source is not None:
                ws.copy_in(Path(source))
        except BaseException:
            ws.close()
            raise
        return ws

    def discard(self, container: Container, volume: Volume) -> None:
        _remove(container)  # the container first: a volume in use cannot go
        _remove(volume)
