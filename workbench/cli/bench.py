"""`sandmle bench NAME`: run a benchmark, print its table, write benchmarks/results/NAME.json."""

from __future__ import annotations

import click

from .common import Context, emit_json, pass_ctx


@click.command()
@click.argument("name", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print the full result as JSON.")
@click.option("--quick", is_flag=True, help="A smaller run (fewer repeats/rows), for smoke checks.")
@click.option("--out", type=click.Path(file_okay=False), help="Folder for the result file (default benchmarks/results).")
@pass_ctx
def bench(ctx: Context, name: str | None, as_json: bool, quick: bool, out: str | None) -> None:
    """Run a benchmark (no NAME: list them). Results are written to benchmarks/results/NAME.json."""
    from engine.bench import available, format_table, run_benchmark

    if not name:
        for n in available():
            click.echo(n)
        return
    result, path = run_benchmark(name, ctx.store, results_dir=out, quick=quick)
    if as_json:
        emit_json(result.to_dict())
    else:
        click.echo(format_table(result.rows))
        for k, v in result.summary.items():
            click.echo(f"{k}: {v}")
        for note in result.notes:
            click.echo(f"note: {note}")
    click.echo(f"wrote {path}", err=True)
