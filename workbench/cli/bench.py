"""`sandmle bench NAME`: run a benchmark, print its table, write ``<data dir>/bench/NAME.json`` (or ``--out``)."""

from __future__ import annotations

from pathlib import Path

import click

from engine.bench import available, run_benchmark

from .common import Context, emit_json, json_option, pass_ctx, table, wide_option


@click.command()
@click.argument("name", required=False)
@json_option("the full result")
@click.option("--quick", is_flag=True, help="A smaller run (fewer repeats/rows), for smoke checks.")
@click.option("--out", type=click.Path(file_okay=False),
              help="Folder for the result file (default <data dir>/bench; benchmarks/results updates the shipped "
                   "results).")
@click.option("--sampler", type=click.Choice(["hf", "vllm"]),
              help="bench learn only: who samples GRPO's rollouts (vllm: a real vLLM server, `make vllm`; the result "
                   "goes to learn-vllm.json) [default: hf]")
@click.option("--plan", "plan_name", type=click.Choice(["full", "reading"]),
              help="bench learn only: the plan (reading: grounded environments where the options' value depends on "
                   "the task, a teacher that validates two strategies and keeps the better; the result goes to "
                   "learn-reading.json) [default: full]")
@click.option("--runs", type=click.IntRange(min=1),
              help="bench learn only: whole runs of the plan, each at its own RNG seed (0, 1, ...); every run is "
                   "reported with their mean and the claims are over all of them [default: 3, 1 with --quick]")
@click.option("--limit", type=click.IntRange(min=1),
              help="bench catalog only: the first N datasets the designer offers each seed, not every one "
                   "[default: all; 3 with --quick]")
@wide_option
@pass_ctx
def bench(ctx: Context, name: str | None, as_json: bool, quick: bool, out: str | None, sampler: str | None,
          plan_name: str | None, runs: int | None, limit: int | None, wide: bool) -> None:
    """Run a benchmark (no NAME: list them). The result goes to <data dir>/bench/NAME.json unless --out is given."""
    known = benchmarks()
    if sampler is not None and name != "learn":
        raise click.UsageError("--sampler goes with `bench learn` (bench sampler and bench train measure vLLM "
                               "beside hf by themselves)")
    if plan_name is not None and name != "learn":
        raise click.UsageError("--plan goes with `bench learn`")
    if runs is not None and name != "learn":
        raise click.UsageError("--runs goes with `bench learn`")
    if limit is not None and name != "catalog":
        raise click.UsageError("--limit goes with `bench catalog`")
    if not name:
        for n in known:
            click.echo(n)
        return
    options = {k: v for k, v in (("sampler", sampler), ("plan_name", plan_name), ("runs", runs), ("limit", limit))
               if v}
    result, path = run_benchmark(name, ctx.store, results_dir=Path(out) if out else None, quick=quick, **options)
    if as_json:
        emit_json(result.to_dict())
    else:
        headers = list(result.rows[0]) if result.rows else []
        table([[_cell(r.get(h)) for h in headers] for r in result.rows], headers, wide=wide)
        for k, v in result.summary.items():  # a long list or table in full only in the result file
            line = f"{k}: {v}"
            click.echo(line if wide or len(line) <= 400 else line[:399] + "… (in full: the result file)")
        for note in result.notes:
            click.echo(f"note: {note}")
    click.echo(f"wrote {path}", err=True)


def benchmarks() -> list[str]:
    """Every benchmark ``sandmle bench`` runs (engine/bench/<name>.py, the workbench's ``tui`` among them)."""
    return available()


def _cell(value: object) -> str:
    return f"{value:.4g}" if isinstance(value, float) else ("" if value is None else str(value))
