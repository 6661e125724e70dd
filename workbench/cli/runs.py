"""`sandmle runs list|show|stop|resume`: training and eval runs in the store."""

from __future__ import annotations

import os
import signal
import socket

import click

from engine.errors import TrainingError
from engine.eval.run import missing_episodes, resume_eval
from engine.models.adapters import final_adapter
from engine.rl.config import GRPOConfig, SFTConfig, config_from_dict
from store import owners

from .common import Context, emit_json, json_option, pass_ctx, progress, table, warn, wide_option
from .eval import show_report
from .train import _run_grpo, _run_sft, launch_processes


def _alive(row: dict) -> bool:
    """The run's process is running on this host (so it can be signalled)."""
    return bool(row.get("pid")) and row.get("host") == socket.gethostname() and not owners.gone(row)


@click.group()
def runs() -> None:
    """Training, eval and benchmark runs: list, inspect, stop, resume."""


@runs.command("list")
@click.option("--kind", help="Only runs of this kind (sft, grpo, eval, bench, ...).")
@json_option()
@wide_option
@pass_ctx
def list_(ctx: Context, kind: str | None, as_json: bool, wide: bool) -> None:
    """List runs, newest first (status 'dead' = killed while running; resume it)."""
    rows = ctx.store.runs.list(kind=kind)
    out = []
    for r in rows:
        last = ctx.store.runs.last_step(r["id"])
        out.append({"id": r["id"], "kind": r["kind"], "name": r["name"], "status": r["status"], "step": last,
                    "steps": (r["config"] or {}).get("steps"), "created_at": r["created_at"]})
    if as_json:
        emit_json(out)
        return
    table([(o["id"], o["kind"], o["status"], f"{o['step'] or 0}/{o['steps'] or '-'}", o["name"] or "",
            o["created_at"][5:16].replace("T", " ")) for o in out], ["id", "kind", "status", "step", "name", "created"],
          wide=wide)


@runs.command("show")
@click.argument("run_id")
@json_option()
@pass_ctx
def show(ctx: Context, run_id: str, as_json: bool) -> None:
    """Show a run: config, summary, last metrics, checkpoints and (sft, grpo) the final adapter, which
    `--adapter` and `hf:...,adapter=` also accept as the run id itself."""
    row = ctx.store.runs.get(run_id)
    metrics = ctx.store.runs.metrics(row["id"])
    ckpts = ctx.store.runs.checkpoints(row["id"])
    last = {k: v[-1][1] for k, v in metrics.items() if v}
    adapter = final_adapter(ctx.store, row["id"]) if row["kind"] in ("sft", "grpo") else None
    if as_json:
        emit_json({**row, "adapter": adapter, "metrics": {k: v for k, v in metrics.items()},
                   "checkpoints": [{"step": c["step"], "path": c["path"], "sha256": c["sha256"]} for c in ckpts]})
        return
    click.echo(f"{row['id']} ({row['kind']}) {row['status']}" + (f" · {row['name']}" if row["name"] else ""))
    if adapter:
        click.echo(f"  adapter: {adapter}")
    if row.get("error"):
        click.echo(f"  error: {row['error']}")
    click.echo("config: " + ", ".join(f"{k}={v}" for k, v in (row["config"] or {}).items()))
    if row["summary"]:
        click.echo("summary: " + ", ".join(f"{k}={v}" for k, v in row["summary"].items()))
    if last:
        step = ctx.store.runs.last_step(row["id"])
        click.echo(f"last metrics (step {step}):")
        table([(k, f"{v:.4g}" if isinstance(v, float) else v) for k, v in sorted(last.items())], ["metric", "value"])
    if ckpts:
        click.echo("checkpoints:")
        table([(c["step"], c["path"]) for c in ckpts], ["step", "path"], keep=(0, 1))


@runs.command("stop")
@click.argument("run_id")
@pass_ctx
def stop(ctx: Context, run_id: str) -> None:
    """Ask a running run to stop: it saves a checkpoint after the current step and ends as 'stopped'."""
    row = ctx.store.runs.get(run_id)
    if row["status"] not in ("running", "pending"):
        raise TrainingError(f"run {row['id']} is {row['status']}, not running")
    ctx.store.runs.update(row["id"], status="stopped")
    if _alive(row) and int(row["pid"]) != os.getpid():
        os.kill(int(row["pid"]), signal.SIGTERM)
        click.echo(f"asked {row['id']} (pid {row['pid']}) to stop")
    else:
        click.echo(f"marked {row['id']} stopped (no live process)")


@runs.command("resume")
@click.argument("run_id")
@json_option("the run summary")
@pass_ctx
def resume(ctx: Context, run_id: str, as_json: bool) -> None:
    """Continue a stopped, failed or killed run with the same config: training from its last checkpoint, an eval
    with the episodes it has not finished (same seeds)."""
    row = ctx.store.runs.get(run_id)
    if row["status"] == "running" and _alive(row) and int(row["pid"]) != os.getpid():
        raise TrainingError(f"run {row['id']} is still running (pid {row['pid']})", hint="stop it first")
    if row["kind"] == "grpo":
        from engine.rl.grpo import GRPOTrainer  # loads torch: only when training

        processes = launch_processes(ctx, config_from_dict(GRPOConfig, row["config"]))
        _run_grpo(GRPOTrainer.resume(ctx.store, row["id"], on_lost=warn, processes=processes), as_json)
    elif row["kind"] == "sft":
        from engine.rl.sft import SFTRun  # loads torch: only when training

        processes = launch_processes(ctx, config_from_dict(SFTConfig, row["config"]))
        _run_sft(SFTRun.resume(ctx.store, row["id"], processes=processes), as_json)
    elif row["kind"] == "eval":
        with progress(len(missing_episodes(ctx.store, row["id"])), f"eval {row['id']}") as bar:
            report = resume_eval(ctx.store, row["id"], progress=lambda done, total: bar.update(done - bar.pos),
                                 on_lost=warn)
        show_report(report, as_json=as_json)
    else:
        raise TrainingError(f"run {row['id']} is a {row['kind']} run; sft, grpo and eval runs resume")
