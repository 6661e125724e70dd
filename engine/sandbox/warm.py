"""The warm worker's client: one pre-started server (:mod:`engine.sandbox.zygote`) with numpy/pandas/sklearn
imported, in namespaces of its own (no network; a user namespace of its own without root); each Python run is a
fresh clone of it into fresh namespaces, confined by the jail before user code runs."""

from __future__ import annotations

import json
import select
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Sequence, cast

from ..errors import SandboxError
from .features import ro_binds
from .child import RunHandle, venv_python

ZYGOTE = Path(__file__).with_name("zygote.py")


class WarmError(SandboxError):
    pass


@dataclass
class _Slot:
    """A run the worker was asked to start: its pid once started, its exit code once done."""

    started: threading.Event = field(default_factory=threading.Event)
    done: threading.Event = field(default_factory=threading.Event)
    pid: int | None = None
    code: int | None = None


class WarmWorker:
    def __init__(self, imports: Sequence[str], *, env: dict[str, str], start_timeout_s: float = 120.0,
                 userns: bool = False):
        """``userns``: not root — the worker and each run's clone make user namespaces of their own."""
        self.imports = list(imports)
        self.userns = userns
        # the common part of every run's private root, which the worker's spare builds ahead of time
        self._root_dir = tempfile.mkdtemp(prefix="sandmle-warm-")
        common = {"root_dir": self._root_dir, "ro_binds": ro_binds(), "userns": userns}
        # the interpreter by the path the jail mounts (not a symlinked venv's)
        self.proc = subprocess.Popen([venv_python(), "-s", str(ZYGOTE), ",".join(self.imports), json.dumps(common)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     env=env, cwd="/", start_new_session=True, close_fds=True)
        self._out = cast(IO[bytes], self.proc.stdout)  # both pipes exist: asked for with PIPE
        self._in = cast(IO[bytes], self.proc.stdin)
        ready, _, _ = select.select([self._out], [], [], start_timeout_s)
        line = self._out.readline() if ready else b""
        if not line:
            self.proc.kill()
            self.proc.wait()
            raise WarmError("the warm worker did not start")
        info = json.loads(line)
        self.base_vm_mb: int = int(info.get("base_vm_mb", 0))
        self.import_errors: list[str] = info.get("errors", [])
        self._lock = threading.Lock()
        self._pending: dict[str, _Slot] = {}
        self._dead = False
        self._reader = threading.Thread(target=self._read, name="sandmle-warm-reader", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self._out:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            with self._lock:
                slot = self._pending.get(event.get("run_id"))
            if slot is None:
                continue
            if event["event"] == "started":
                slot.pid = event["pid"]
                slot.started.set()
            elif event["event"] == "exit":
                slot.code = event["code"]
                slot.done.set()
                with self._lock:
                    self._pending.pop(event["run_id"], None)
        with self._lock:
            self._dead = True
            for slot in self._pending.values():
                slot.started.set()
                slot.done.set()
            self._pending.clear()

    def alive(self) -> bool:
        return not self._dead and self.proc.poll() is None

    def start(self, run_id: str, spec: dict[str, Any], script: str, *, mounted_at: float = 0.0) -> RunHandle:
        """Fork a confined child for one run; returns a handle the backend watches like a cold one."""
        slot = _Slot()
        with self._lock:
            if self._dead:
                raise WarmError("the warm worker has exited")
            self._pending[run_id] = slot
            try:
                self._in.write((json.dumps({"run_id": run_id, "spec": spec, "script": script,
                                            "mounted_at": mounted_at}) + "\n").encode())
                self._in.flush()
            except (BrokenPipeError, OSError) as exc:
                self._pending.pop(run_id, None)
                raise WarmError(f"the warm worker is gone: {exc}") from None
        if not slot.started.wait(30) or slot.pid is None:
            raise WarmError("the warm worker did not start the run")
        return RunHandle(slot.pid, done=slot.done)

    def close(self) -> None:
        try:
            self._in.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._out.close()
        shutil.rmtree(self._root_dir, ignore_errors=True)
