"""No step sees another workspace: two workspaces on one backend (warm and cold steps, the warm worker's spare
included), one holding a secret and a step that is still running; the other's steps look for it by its host path,
through the workspaces folder, through /proc and through an abstract unix socket the first one listens on."""

from __future__ import annotations

import json
import threading
import time

import pytest

from engine.sandbox import Limits, get_backend
from engine.sandbox.features import detect

pytestmark = pytest.mark.skipif(not detect().namespaces, reason="needs the jail: " + detect().namespaces_error)

SECRET = "OTHER-WORKSPACE-SECRET-91c2"

HOLDER = f"""
import os, socket, time
open("secret.txt", "w").write({SECRET!r})
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind("\\0sandmle-probe-socket")
s.listen(1)
open("listening", "w").write(str(os.getpid()))
f = open("secret.txt")  # held open while it runs
time.sleep(8)
"""


def _probe(other: str, work_root: str, own: str) -> str:
    return f"""
import json, os, socket
out = {{}}
def probe(name, fn):
    try:
        out[name] = "FOUND: " + repr(fn())[:60]
    except OSError:
        out[name] = "denied"
probe("by_path", lambda: open({other + "/secret.txt"!r}).read())
probe("workspaces", lambda: [n for n in os.listdir({work_root!r}) if n.startswith("ws-") and n != {own!r}]
      or os.listdir("/nope"))
found = []
for pid in os.listdir("/proc"):
    if pid.isdigit():
        try:
            cmd = open(f"/proc/{{pid}}/cmdline", "rb").read()
            fds = os.listdir(f"/proc/{{pid}}/fd")
            for fd in fds:
                if "secret" in os.readlink(f"/proc/{{pid}}/fd/{{fd}}"):
                    found.append(pid)
        except OSError:
            pass
out["proc_fds"] = found and "FOUND: " + str(found) or "denied"
out["pids"] = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
def connect():
    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    c.connect("\\0sandmle-probe-socket")
    return "connected"
probe("abstract_socket", connect)
print(json.dumps(out))
"""


def test_no_step_sees_another_workspace(tmp_path):
    with get_backend("local", root=tmp_path, warm=True, limits=Limits(timeout_s=30)) as backend:
        a, b = backend.open(), backend.open()
        try:
            assert backend.warm_worker() is not None, backend._warm_error
            holder = {}
            thread = threading.Thread(target=lambda: holder.update(r=a.run_python(HOLDER, warm=True)))
            thread.start()
            deadline = time.monotonic() + 20
            while a.size("listening") is None and time.monotonic() < deadline:
                time.sleep(0.05)
            assert a.size("listening") is not None, "the holder step never started"
            outs = []
            for warm in (True, True, False):  # the first warm step takes the spare made before b existed
                r = b.run_python(_probe(str(a.path), str(backend.work_root), b.holder.name), warm=warm)
                assert r.status == "ok", r.stderr_tail
                assert r.isolation["warm"] is warm
                outs.append(json.loads(r.stdout_tail.strip().splitlines()[-1]))
            thread.join(30)
        finally:
            a.close()
            b.close()
    assert holder["r"].status == "ok", holder["r"].stderr_tail
    for out in outs:
        for key in ("by_path", "workspaces", "proc_fds", "abstract_socket"):
            assert out[key] == "denied", (key, out)
        assert max(out["pids"]) < 10  # its own pid namespace: a handful of its own processes


def test_a_run_below_its_process_limit_goes_on_and_one_over_it_is_stopped(tmp_path):
    """Below max_procs a run's children live and it ends ok; forking past it ends the run `killed` (a pids cgroup,
    or RLIMIT_NPROC plus the count of the run's tasks without one), warm and cold alike."""
    spawn = ("import os, time\nkids = []\nfor _ in range({n}):\n    pid = os.fork()\n    if pid == 0:\n"
             "        time.sleep(1.0)\n        os._exit(0)\n    kids.append(pid)\n"
             "for pid in kids:\n    os.waitpid(pid, 0)\nprint('all', len(kids))\n")
    with get_backend("local", root=tmp_path, warm=True) as backend, backend.open() as ws:
        for warm in (True, False):
            ok = ws.run_python(spawn.format(n=6), warm=warm, limits=Limits(max_procs=10, timeout_s=30))
            assert (ok.status, ok.stdout_tail) == ("ok", "all 6\n"), (warm, ok.status, ok.stderr_tail[-300:])
            over = ws.run_python(spawn.format(n=40), warm=warm, limits=Limits(max_procs=10, timeout_s=30))
            assert over.status == "killed" and any("process limit" in w for w in over.warnings), (warm, over.warnings)
