"""Long work started from the workbench: ``sandmle`` subcommands run as child processes, each recorded in the store
as one run (``config.launcher == "workbench"``; the command's own run takes over the row made for it), with its
output in ``<data dir>/jobs/<run id>.log``.

A job runs in its own session, so it keeps running when the user changes screens — or quits the app and
chooses to leave it running. Stopping sends SIGINT first (the CLI saves what it has), then SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

from store import Store

from .cli.common import JOB_ID_VARIABLE
from .cli.main import cli

LAUNCHER = "workbench"


def resolve_command(path: list[str]) -> click.Command | None:
    """The click command at ``sandmle <path…>``, or None where this install lacks it."""
    cmd: click.Command | None = cli
    ctx = click.Context(cli)
    for name in path:
        if not isinstance(cmd, click.Group):
            return None
        try:
            cmd = cmd.get_command(ctx, name)
        except (ImportError, AttributeError):
            return None
        if cmd is None:
            return None
    return cmd


def _options(cmd: click.Command) -> dict[str, click.Option]:
    """Options by parameter name and by flag name (``--env-ids`` → ``env_ids``, ``--json`` → ``json``)."""
    out: dict[str, click.Option] = {}
    for p in cmd.params:
        if isinstance(p, click.Option):
            for opt in p.opts:
                if opt.startswith("--"):
                    out.setdefault(opt[2:].replace("-", "_"), p)
            if p.name:
                out.setdefault(p.name, p)
    return out


def command_options(path: list[str]) -> set[str]:
    """Names of the options of ``sandmle <path…>`` (empty when the command is missing)."""
    cmd = resolve_command(path)
    return set(_options(cmd)) if cmd is not None else set()


def build_argv(path: list[str], values: dict[str, Any]) -> tuple[list[str], list[str]]:
    """``sandmle <path> --opt value…`` for the values the command accepts; returns (argv, ignored names).

    Lists become repeated options when the option is ``multiple`` and a comma list otherwise; True flags
    become ``--name``; None, False and empty values are left out."""
    cmd = resolve_command(path)
    if cmd is None:
        return [], sorted(values)
    params = _options(cmd)
    argv, ignored = list(path), []
    for name, value in values.items():
        if value in (None, "", False, [], ()):
            continue
        param = params.get(name)
        if param is None:
            ignored.append(name)
            continue
        flag = next((o for o in param.opts if o.startswith("--")), param.opts[0])
        if param.is_flag:
            argv.append(flag)
        elif isinstance(value, (list, tuple)):
            if param.multiple:
                for v in value:
                    argv += [flag, str(v)]
            else:
                argv += [flag, ",".join(map(str, value))]
        else:
            argv += [flag, str(value)]
    return argv, ignored


def job_log(run: dict[str, Any]) -> Path:
    """Where a job's output goes (``config.log``; older jobs: ``<dir>/<id>.log``)."""
    config = run.get("config") or {}
    return Path(config["log"]) if config.get("log") else Path(run.get("dir") or "") / f"{run['id']}.log"


def pid_alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie child of ours counts as finished
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


def tail(path: Path, max_bytes: int = 4096) -> str:
    """The last line of a log that has text (progress bars rewrite lines with \\r)."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - max_bytes))
            data = f.read().decode("utf-8", "replace")
    except OSError:
        return ""
    for line in reversed(data.replace("\r", "\n").splitlines()):
        if line.strip():
            return line.strip()
    return ""


@dataclass
class Job:
    run_id: str
    kind: str
    label: str
    argv: list[str]
    log_path: Path
    started: float = field(default_factory=time.monotonic)
    proc: subprocess.Popen | None = None
    pid: int | None = None
    status: str = "running"
    stopping: bool = False  #: stopped on purpose: however it ends, it ends 'stopped'
    returncode: int | None = None

    @property
    def running(self) -> bool:
        return self.status == "running"

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def last_line(self) -> str:
        return tail(self.log_path)


class JobManager:
    """Starts, polls and stops the workbench's jobs; every state change is written to the store."""

    def __init__(self, store: Store):
        self.store = store
        self.jobs: dict[str, Job] = {}
        self.adopt()

    # ------------------------------------------------------------------ lifecycle
    def launch(self, kind: str, argv: list[str], label: str | None = None, *, run_id: str | None = None,
               **extra: Any) -> Job:
        """Run ``sandmle <argv…>`` in the background against this store; returns the job. The job is one run: a
        new row the command's own run takes over (``store.runs.adopt``), or ``run_id``'s row when the command
        continues that run (``runs resume``)."""
        label = label or "sandmle " + " ".join(argv)
        jobs_dir = self.store.data_dir / "jobs"
        jobs_dir.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, SANDMLE_HOME=str(self.store.path.parent), PYTHONUNBUFFERED="1")
        if run_id is None:
            run_id = self.store.runs.create(kind, {"launcher": LAUNCHER, "argv": argv, **extra}, name=label,
                                            status="running", dir=str(jobs_dir))
            env[JOB_ID_VARIABLE] = run_id
        log_path = jobs_dir / f"{run_id}.log"
        row = self.store.runs.get(run_id)
        self.store.runs.update(run_id, status="running", error=None, ended_at=None, config={
            **(row["config"] or {}), "launcher": LAUNCHER, "argv": argv, "log": str(log_path)})
        root = str(Path(__file__).resolve().parent.parent)  # the child runs the same code as this app
        env["PYTHONPATH"] = os.pathsep.join([root] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
        with open(log_path, "ab") as log:
            log.write(f"$ sandmle {' '.join(argv)}\n".encode())
            log.flush()
            proc = subprocess.Popen(
                [sys.executable, "-m", "workbench.jobrun", run_id, str(log_path), "--", *argv],
                stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, env=env, start_new_session=True,
            )
        self.store.runs.update(run_id, pid=proc.pid)
        job = Job(run_id, kind, label, argv, log_path, proc=proc, pid=proc.pid)
        self.jobs[run_id] = job
        return job

    def adopt(self) -> None:
        """Pick up jobs an earlier session left running (still alive → shown as running; gone → 'stopped')."""
        for run in self.store.runs.list(status="running", limit=200):
            config = run.get("config") or {}
            if config.get("launcher") != LAUNCHER:
                continue
            job = Job(run["id"], run["kind"], run["name"] or run["id"], config.get("argv", []),
                      job_log(run), pid=run["pid"])
            if not pid_alive(run["pid"]):
                job.status = "stopped"
                self.store.runs.finish(run["id"], "stopped", error="the workbench lost track of this job")
            self.jobs[run["id"]] = job

    def poll(self) -> list[Job]:
        """Check running jobs; returns those that just finished (their run rows are closed)."""
        finished = []
        for job in self.jobs.values():
            if not job.running:
                continue
            if job.proc is not None:
                code = job.proc.poll()
                if code is None:
                    continue
            elif pid_alive(job.pid):
                continue
            else:
                code = None
            job.returncode = code
            row = self.store.runs.find(job.run_id)
            if row is not None and row["status"] != "running":  # the job recorded its own end (workbench.jobrun)
                job.status = row["status"]
            else:
                # code None: an adopted job whose process is gone without a word
                stopped = job.stopping or code is None or code in (-2, -15, 130, 143)
                job.status = "stopped" if stopped else "done" if code == 0 else "failed"
                error = None if job.status == "done" else (job.last_line() or f"exit code {code}")
                self.store.runs.finish(job.run_id, job.status, error=error)
            finished.append(job)
        return finished

    def stop(self, run_id: str, grace_s: float = 5.0) -> bool:
        """SIGINT (the CLI's Ctrl-C path saves work), then SIGTERM, then SIGKILL; waits for the end and closes
        the run row. True if the job was running."""
        job = self.jobs.get(run_id)
        if job is None or not job.running:
            return False
        job.stopping = True
        for sig, wait_s in ((signal.SIGINT, grace_s), (signal.SIGTERM, 3.0), (signal.SIGKILL, 3.0)):
            if not self._alive(job):
                break
            try:
                os.killpg(job.pid, sig)
            except (ProcessLookupError, PermissionError):
                try:
                    os.kill(job.pid, sig)
                except ProcessLookupError:
                    break
            deadline = time.monotonic() + wait_s
            while time.monotonic() < deadline and self._alive(job):
                time.sleep(0.05)
        self.poll()
        if job.running:  # gone without a trace we could read
            job.status = "stopped"
            self.store.runs.finish(job.run_id, "stopped", error="stopped from the workbench")
        return True

    @staticmethod
    def _alive(job: Job) -> bool:
        if job.proc is not None:
            return job.proc.poll() is None
        return pid_alive(job.pid)

    def stop_all(self) -> None:
        for job in self.running():
            self.stop(job.run_id)

    # ------------------------------------------------------------------ queries
    def running(self) -> list[Job]:
        return [j for j in self.jobs.values() if j.running]


def stop_pid(pid: int | None) -> bool:
    """Ask a run's process (started anywhere on this host) to stop with SIGINT. True if it was alive."""
    if not pid_alive(pid):
        return False
    os.kill(pid, signal.SIGINT)
    return True
