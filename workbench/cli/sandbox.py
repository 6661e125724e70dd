"""`sandmle sandbox`: run a command in a fresh sandbox workspace; list, show and follow sandbox runs."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

from engine.backends import EXECUTORS
from engine.config import load_settings
from engine.errors import SandboxError
from engine.executors import SandboxJob, get_executor, run_sandbox_job
from engine.sandbox import RunMeta, get_backend
from engine.sandbox.docker import connect
from engine.sandbox.image import BASE_IMAGE, build_base_image

from .common import Context, NameChoice, emit_json, json_option, pass_ctx, progress, table, warn, wide_option
from .sandbox_options import sandbox_options

if TYPE_CHECKING:
    from engine.config import SandboxSettings


@click.group()
def sandbox() -> None:
    """Run untrusted code in a sandbox and inspect sandbox runs."""


@sandbox.command("run", context_settings={"ignore_unknown_options": True})
@click.option("--env", "env_id", help="Start from this environment's public files.")
@click.option("--workdir", type=click.Path(exists=True, file_okay=False), help="Start from a copy of this folder.")
@sandbox_options(backend_alias="--backend")
@click.option("--warm/--cold", default=None, help="`python FILE` on the warm worker (pandas/sklearn imported).")
@click.option("--executor", type=NameChoice(EXECUTORS, extra=("inline",)), default="inline", show_default=True,
              help=f"inline (here, once) or an executor: {EXECUTORS.described()}.")
@click.option("--address", help="Address of an existing Ray cluster (with --executor ray).")
@click.option("--repeat", type=click.IntRange(1, 1000), default=1, show_default=True,
              help="Run COMMAND this many times at once, each in its own workspace (with --executor).")
@click.option("--workers", type=click.IntRange(1, 256), help="Concurrent jobs (default: settings).")
@json_option("the result")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
@pass_ctx
def run_cmd(ctx: Context, env_id: str | None, workdir: str | None, sandbox_backend: str | None,
            isolation: str | None, memory_mb: int | None, max_procs: int | None, timeout_s: float | None, warm: bool | None,
            executor: str, address: str | None, repeat: int, workers: int | None, as_json: bool,
            command: tuple[str, ...]) -> None:
    """Run COMMAND (after `--`) in a fresh workspace and print the result; exit 1 unless its status is ok."""
    if env_id and workdir:
        raise SandboxError("give --env or --workdir, not both")
    settings = load_settings()
    sandbox_settings = settings.sandbox.override(backend=sandbox_backend, memory_mb=memory_mb, max_procs=max_procs,
                                                 timeout_s=timeout_s, isolation=isolation)
    source = None
    if env_id:
        row = ctx.store.envs.get(env_id)
        if not row.get("dir"):
            raise SandboxError(f"environment {env_id} has no files on disk")
        source = Path(row["dir"]) / "public"
    elif workdir:
        source = Path(workdir)
    if executor != "inline" or repeat > 1:
        _run_many(ctx, executor if executor != "inline" else "local", address, repeat, workers,
                  source, env_id, sandbox_settings, warm, list(command), as_json)
        return
    with get_backend(store=ctx.store, settings=sandbox_settings, warm=warm) as be:
        with be.open(source, label="cli") as ws:
            result = ws.run(list(command), meta=RunMeta(env_id=env_id, executor="cli"), warm=warm)
    data = result.to_dict()
    if as_json:
        emit_json(data)
    else:
        if result.stdout_tail:
            click.echo(result.stdout_tail, nl=not result.stdout_tail.endswith("\n"))
        if result.stderr_tail:
            click.echo(result.stderr_tail, nl=not result.stderr_tail.endswith("\n"), err=True)
        click.echo(f"[{result.run_id} · {result.status} · exit {result.exit_code} · {result.wall_s:.3f}s]", err=True)
        for w in result.warnings:
            click.echo(f"warning: {w}", err=True)
    if not result.ok:
        raise SystemExit(1)


def _run_many(ctx: Context, kind: str, address: str | None, repeat: int, workers: int | None,
              source: Path | None, env_id: str | None, sandbox_settings: SandboxSettings, warm: bool | None,
              command: list[str], as_json: bool) -> None:
    job = SandboxJob(command=command, source=str(source) if source else None, warm=warm, meta=RunMeta(env_id=env_id))
    with progress(repeat, f"{kind} executor") as bar:
        with get_executor(kind, store=ctx.store, workers=workers, sandbox=sandbox_settings, address=address,
                          on_lost=warn) as ex:
            results = ex.map(run_sandbox_job, [job] * repeat, on_result=lambda i, r: bar.update(1))
    if as_json:
        emit_json([r.to_dict() for r in results])
    else:
        table([(r.run_id, r.status, r.exit_code, f"{r.wall_s:.3f}", (r.stdout_tail or "").strip()[-40:])
               for r in results], ["id", "status", "exit", "wall_s", "stdout (end)"])
    if not all(r.ok for r in results):
        raise SystemExit(1)


@sandbox.command("build-image")
@click.option("--name", default=None, help="Name of the image [default: sandmle-base:1, the docker backend's].")
@pass_ctx
def build_image(ctx: Context, name: str | None) -> None:
    """Build the docker backend's base image here, without a registry: an empty root filesystem imported with
    `docker import`; containers of it mount this machine's /usr, /etc, interpreter and virtual env read-only.
    (The docker backend builds it on first use too; on a GPU server, name any image in [sandbox] docker_image.)"""
    name = name or BASE_IMAGE
    image_id = build_base_image(connect(), name)
    click.echo(f"built {name} ({image_id[:19]})")
    if name != BASE_IMAGE:
        click.echo(f"to use it: [sandbox] docker_image = \"{name}\" in the config file "
                   f"(or SANDMLE_SANDBOX__DOCKER_IMAGE={name})")


@sandbox.group()
def runs() -> None:
    """Sandbox runs recorded in the store."""


#: what a sandbox run's status can be: one of the results, still running, or dead (its process went away)
RUN_STATUSES = ("ok", "error", "timeout", "memory", "killed", "output_limit", "running", "dead")


@runs.command("list")
@click.option("--status", type=click.Choice(RUN_STATUSES), help="Only runs with this status.")
@click.option("--env", "env_id", help="Only runs of this environment.")
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True, help="How many runs to list.")
@json_option()
@wide_option
@pass_ctx
def runs_list(ctx: Context, status: str | None, env_id: str | None, limit: int, as_json: bool, wide: bool) -> None:
    """List sandbox runs, newest first."""
    rows = ctx.store.sandbox.list(status=status, env_id=env_id, limit=limit)
    if as_json:
        emit_json(rows)
        return
    table([(r["id"], r["status"], r["exit_code"], f"{r['wall_s']:.3f}" if r["wall_s"] is not None else "",
            r["backend"] + ("/warm" if (r.get("isolation") or {}).get("warm") else ""), r.get("executor") or "",
            len(r.get("warnings") or []), _short_command(r["command"] or "")) for r in rows],
          ["id", "status", "exit", "wall_s", "backend", "executor", "warn", "command"], wide=wide)


def _short_command(command: str) -> str:
    """A recorded command as a user typed it: the sandbox's interpreter path shown as ``python``."""
    head, _, rest = command.partition(" ")
    return f"python {rest}".rstrip() if Path(head).name.startswith("python") else command


@runs.command("show")
@click.argument("run_id")
@json_option()
@pass_ctx
def runs_show(ctx: Context, run_id: str, as_json: bool) -> None:
    """Show one run: status, limits, isolation features, warnings, output tails."""
    row = ctx.store.sandbox.get(run_id)
    if as_json:
        emit_json(row)
        return
    for key in ("id", "status", "exit_code", "backend", "executor", "command", "wall_s", "cpu_s", "peak_rss_mb",
                "env_id", "started_at", "ended_at", "log_path", "workdir"):
        click.echo(f"{key:12} {row.get(key)}")
    iso = row.get("isolation") or {}
    click.echo("isolation    " + ", ".join(f"{k}={'on' if v is True else 'off' if v is False else v}"
                                          for k, v in iso.items()))
    click.echo("limits       " + json.dumps(row.get("limits") or {}))
    for w in row.get("warnings") or []:
        click.echo(f"warning      {w}")
    if row.get("stdout_tail"):
        click.echo("--- stdout (tail) ---\n" + row["stdout_tail"].rstrip("\n"))
    if row.get("stderr_tail"):
        click.echo("--- stderr (tail) ---\n" + row["stderr_tail"].rstrip("\n"))


@runs.command("log")
@click.argument("run_id")
@click.option("--follow", "-f", is_flag=True,
              help="While the run is going, print its output as it comes (ends when the run ends or dies).")
@pass_ctx
def runs_log(ctx: Context, run_id: str, follow: bool) -> None:
    """Print a run's full log (capped); with --follow, stream a running run's output until it ends."""
    row = ctx.store.sandbox.get(run_id)
    log = Path(row["log_path"]) if row.get("log_path") else None
    if follow and row["status"] == "running" and log is not None:
        _follow(ctx, row["id"], log)
        return
    if log is None or not log.is_file():
        raise SandboxError(f"run {row['id']} has no log file" + (" yet (try --follow)" if row["status"] == "running" else ""))
    sys.stdout.write(log.read_text(errors="replace"))


def _follow(ctx: Context, run_id: str, log: Path) -> None:
    handles = {}
    while True:
        for suffix in (".out", ".err"):  # stdout streams into the log file itself while the run goes on
            path = log if suffix == ".out" else log.with_suffix(suffix)
            if suffix not in handles:
                try:
                    handles[suffix] = open(path, "rb")  # an open file survives the run's clean-up
                except FileNotFoundError:
                    continue
            chunk = handles[suffix].read()
            if chunk:
                stream = sys.stdout if suffix == ".out" else sys.stderr
                stream.write(chunk.decode("utf-8", "replace"))
                stream.flush()
        row = ctx.store.sandbox.get(run_id)
        if row["status"] == "running" and ctx.store.sandbox.mark_dead([row]):  # its process was killed
            row = ctx.store.sandbox.get(run_id)
        if row["status"] != "running":
            for suffix, f in handles.items():
                rest = f.read()
                if rest:
                    (sys.stdout if suffix == ".out" else sys.stderr).write(rest.decode("utf-8", "replace"))
                f.close()
            click.echo(f"[{run_id} · {row['status']} · exit {row['exit_code']}]", err=True)
            return
        time.sleep(0.1)
