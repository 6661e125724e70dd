"""The warm worker's server (run as a script by :mod:`engine.sandbox.warm`): imports the heavy modules once,
then for each request forks a child that confines itself with :func:`jail.enter_cloned` before any user code runs.

It never runs user code itself, and it lives in namespaces of its own from its first line, before any import: a
network namespace (no interface up: nothing it imports can reach a network), IPC and UTS — inside a user namespace
of its own where the user is not root. Each run is a clone of it into fresh namespaces (a fresh user namespace too,
without root), so no run sees another run's workspace or processes. Protocol: JSON lines on stdin (requests) and stdout (events):
``{"run_id", "spec", "script"}`` → ``{"event": "started", "run_id", "pid"}`` … ``{"event": "exit", "run_id", "code"}``.
"""

from __future__ import annotations

import importlib
import json
import os
import selectors
import signal
import sys
import time

if __package__:
    from . import jail
else:  # run as a script: its folder is sys.path[0]
    import jail  # type: ignore[no-redef]


def _emit(event: dict) -> None:
    data = (json.dumps(event) + "\n").encode()
    while data:
        data = data[os.write(1, data):]


def _exit_code(exc: SystemExit) -> int:
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def _payload(spec: dict, script: str) -> int:
    """In the confined child: behave like ``python SCRIPT`` started fresh in the workspace."""
    # imported in the child, after the fork: the warm worker's parent keeps its memory (and imports) minimal
    import atexit
    import runpy
    import traceback

    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    sys.stdin = open(0, "r", closefd=False)
    sys.stdout = open(1, "w", buffering=1, encoding="utf-8", errors="backslashreplace", closefd=False)
    sys.stderr = open(2, "w", buffering=1, encoding="utf-8", errors="backslashreplace", closefd=False)
    sys.argv = [script]
    sys.path[0] = spec["workspace"]
    if "numpy" in sys.modules:  # a fresh process would seed numpy's global RNG from the OS
        sys.modules["numpy"].random.seed()
    code = 0
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as exc:
        code = _exit_code(exc)
    except BaseException:
        traceback.print_exc()
        code = 1
    # shut down as the interpreter would: join non-daemon threads (and run threading's exit hooks, which stop
    # executors such as joblib/loky), then the atexit handlers
    try:
        import threading  # the payload's threading module, as the interpreter's exit would use it

        threading._shutdown()  # type: ignore[attr-defined]  # the interpreter's own exit step
    except BaseException:
        pass
    try:
        atexit._run_exitfuncs()
    except BaseException:
        pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass
    return code


def _child(request: dict, *, prepared: bool = False) -> None:
    code = 127
    try:
        if not prepared:
            os.setsid()
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        spec = request["spec"]
        jail.enter_cloned(spec, prepared=prepared)
        code = _payload(spec, request["script"])
    except BaseException as exc:
        try:
            os.write(2, f"sandbox: warm run failed to start: {exc!r}\n".encode())
        except OSError:
            pass
    os._exit(code)


def _spare_main(ctl: int, common: dict) -> None:
    """A spare: a fresh clone in its own namespaces with the common root built, waiting for its one run."""
    try:
        os.setsid()
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        jail.prepare_spare(common)
    except BaseException:
        os._exit(126)
    chunks = []
    while True:
        chunk = os.read(ctl, 1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(ctl)
    if not chunks:
        os._exit(0)
    request = json.loads(b"".join(chunks))
    request["spec"]["root_dir"] = common["root_dir"]
    _child(request, prepared=True)


class Spares:
    """Keeps one spare ready: the clone and the common mounts happen while the previous run is going."""

    def __init__(self, common: dict | None):
        self.common: dict = common or {}
        self.spare: tuple[int, int] | None = None  # pid, write end of its control pipe
        self.made_at = 0.0
        self.broken = common is None

    def make(self) -> None:
        if self.broken or self.spare is not None:
            return
        r, w = os.pipe()
        self.made_at = time.time()
        try:
            pid = jail.clone_into_namespaces(userns=bool(self.common.get("userns")))
        except OSError:
            os.close(r)
            os.close(w)
            self.broken = True
            return
        if pid == 0:
            os.close(w)
            _spare_main(r, self.common)
        os.close(r)
        self.spare = (pid, w)

    def take(self, request: dict) -> int | None:
        """Hand the request to the spare; its pid, or None (the caller then clones afresh)."""
        if self.spare is None or request["spec"].get("ro_binds") != self.common.get("ro_binds"):
            return None
        pid, w = self.spare
        self.spare = None
        if self.made_at <= request.get("mounted_at", 0.0):
            # the spare's mount namespace is a copy from before the workspace was mounted: it cannot see it
            os.close(w)  # the spare reads EOF and exits
            return None
        data = json.dumps(request).encode()
        try:
            while data:
                data = data[os.write(w, data):]
        except OSError:
            return None
        finally:
            os.close(w)
        return pid

    def lost(self, pid: int) -> None:
        if self.spare is not None and self.spare[0] == pid:
            os.close(self.spare[1])
            self.spare = None


def _own_namespaces(userns: bool) -> None:
    """The worker's own sandbox, made before it imports anything (it is still one thread)."""
    if userns:
        jail.enter_userns()
    jail.unshare(jail.CLONE_NEWNET | jail.CLONE_NEWIPC | jail.CLONE_NEWUTS)


def main() -> None:
    os.chdir("/")
    common = json.loads(sys.argv[2]) if len(sys.argv) > 2 else None
    userns = bool(common and common.get("userns"))
    _own_namespaces(userns)
    errors = []
    for name in filter(None, sys.argv[1].split(",") if len(sys.argv) > 1 else []):
        try:
            importlib.import_module(name)
        except Exception as exc:  # report, keep serving: the run will import it itself
            errors.append(f"{name}: {exc}")
    vm_kb = 0
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                vm_kb = int(line.split()[1])
    rfd, wfd = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(wfd)
    sel = selectors.DefaultSelector()
    sel.register(0, selectors.EVENT_READ, "req")
    sel.register(rfd, selectors.EVENT_READ, "chld")
    children: dict[int, dict] = {}
    spares = Spares(common)
    spares.make()
    _emit({"event": "ready", "base_vm_mb": vm_kb // 1024 + 1, "errors": errors, "pid": os.getpid(),
           "spares": not spares.broken})
    buf = b""
    while True:
        for key, _ in sel.select():
            if key.data == "chld":
                try:
                    os.read(rfd, 4096)
                except BlockingIOError:
                    pass
            else:
                chunk = os.read(0, 1 << 16)
                if not chunk:
                    for pid in list(children):
                        try:
                            os.killpg(pid, signal.SIGKILL)
                        except OSError:
                            pass
                    os._exit(0)
                buf += chunk
                while b"\n" in buf:
                    raw, buf = buf.split(b"\n", 1)
                    request = json.loads(raw)
                    spare = spares.take(request)
                    if spare is not None:
                        pid = spare
                    else:
                        pid = jail.clone_into_namespaces(userns=userns)
                        if pid == 0:
                            _child(request)
                    children[pid] = request
                    request["status_fd"] = os.open(request["spec"]["status"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
                                                   0o600)
                    _emit({"event": "started", "run_id": request["run_id"], "pid": pid})
                    spares.make()  # the next run's clone, while this one runs
            while children:
                try:
                    pid, wstatus, ru = os.wait4(-1, os.WNOHANG)
                except ChildProcessError:
                    break
                if pid == 0:
                    break
                request = children.pop(pid, None)
                if request is None:
                    spares.lost(pid)
                    continue
                code = os.waitstatus_to_exitcode(wstatus)
                jail._write_status(request["status_fd"], {
                    "exit_code": code if code >= 0 else None, "signal": -code if code < 0 else None,
                    "cpu_s": ru.ru_utime + ru.ru_stime, "maxrss_kb": ru.ru_maxrss})
                _emit({"event": "exit", "run_id": request["run_id"], "code": code})


if __name__ == "__main__":
    main()
