"""`sandmle eval`: a policy + scaffold over many environments and seeds, in parallel; `sandmle eval compare`: two
eval runs side by side (paired difference with bootstrap intervals); `sandmle eval constants`: every option a policy
can pick as a constant policy, the best of them and the per-task oracle."""

from __future__ import annotations

import textwrap

import click

from engine.config import load_settings
from engine.errors import SandmleError
from engine.eval.compare import compare as compare_runs
from engine.eval.constants import (best_constant, cache_dir, cached_results, constants_of, has_thresholds, options,
                                   run_envs)
from engine.eval.report import RATE_NAMES, competition, fmt, markdown, rank_note, table_headers, table_rows
from engine.eval.run import run_eval
from engine.eval.select import select
from engine.sandbox import get_backend

from .common import (POSITIVE_S, Context, emit_json, executor_options, json_option, note, pass_ctx, progress, table,
                     warn, wide_option)
from .sandbox_options import sandbox_options
from .scaffold_options import scaffold_options

#: short headers of the per-competition table (the Markdown table and the README spell them out)
SHORT = {"above median": ">median", "any medal": "medal"}


@click.group("eval", invoke_without_command=True)
@click.option("--policy", "policy_spec", default="scripted", show_default=True,
              help="Policy spec: scripted[:skill=0.7], hf:PATH[,adapter=DIR], anthropic:MODEL, openai:MODEL.")
@scaffold_options
@click.option("--envs", "selector",
              help="Env ids, split:NAME, seed:ID, all (synthetic only), real, mlebench:DIR[:lite], or a folder of "
                   "environments / MLE-bench competitions (comma-separated). Required unless a subcommand is given.")
@click.option("--metric", help="Metric for real competitions whose grader name is not recognised (overrides it).")
@click.option("--rng-seeds", "n_seeds", type=click.IntRange(min=1), default=1, show_default=True,
              help="Seeds per environment (0..K-1); the aggregate is mean ± SEM over them.")
@click.option("--limit", type=click.IntRange(min=1), help="Evaluate on the first N selected environments only.")
@click.option("--workers", type=click.IntRange(min=1),
              help="Episodes at once (default: [executor] workers of the settings).")
@executor_options
@sandbox_options(timeout_alias="--step-timeout")
@click.option("--episode-timeout", type=POSITIVE_S, default=1200, show_default=True, help="Seconds per episode.")
@click.option("--name", help="A name for the eval run.")
@json_option("the report")
@click.option("--markdown", "as_markdown", is_flag=True, help="Print the report as Markdown tables.")
@wide_option
@pass_ctx
@click.pass_context
def eval_(click_ctx: click.Context, ctx: Context, policy_spec: str, scaffold: str, selector: str | None,
          metric: str | None, n_seeds: int, limit: int | None, max_turns: int | None, workers: int | None,
          executor: str | None, address: str | None, sandbox_backend: str | None, isolation: str | None, memory_mb: int | None,
          max_procs: int | None, timeout_s: float | None, episode_timeout: float, name: str | None, as_json: bool,
          as_markdown: bool, wide: bool) -> None:
    """Evaluate a policy: per competition, MLE-bench's report (valid, above median, bronze / silver / gold, any
    medal, score) plus the rank on its board (HumanRank on a real leaderboard, else the rank among the reference
    solutions of its population board); overall, each rate as mean ± SEM over seeds. Results go into the store as
    an eval run. Competitions without a leaderboard have medals and the rank n/a (left out of the aggregate)."""
    if click_ctx.invoked_subcommand is not None:
        return
    if not selector:
        raise click.UsageError("Missing option '--envs'.")
    settings = load_settings()
    sandbox = settings.sandbox.override(backend=sandbox_backend, memory_mb=memory_mb, max_procs=max_procs,
                                        timeout_s=timeout_s, isolation=isolation)
    get_backend(store=ctx.store, settings=sandbox).close()  # one line, before any output, if it cannot start
    chosen = select(ctx.store, selector, limit=limit, metric=metric, quota_mb=sandbox.max_disk_mb, note=note)
    if chosen.skipped:
        click.echo(f"skipping {len(chosen.skipped)} competition(s) (missing, not prepared or too large; listed in "
                   "the report)", err=True)
    workers = workers or settings.executor.workers
    bar = progress(len(chosen.envs) * n_seeds, f"eval {scaffold}")
    with bar:
        report = run_eval(ctx.store, policy_spec, chosen.envs, scaffold=scaffold, rng_seeds=list(range(n_seeds)),
                          max_turns=max_turns, episode_timeout_s=episode_timeout, workers=workers,
                          executor=executor or settings.executor.kind, sandbox=sandbox,
                          address=address or settings.executor.ray_address, name=name, skipped=chosen.skipped,
                          progress=lambda done, total: bar.update(done - bar.pos), on_lost=warn)
    show_report(report, as_json=as_json, as_markdown=as_markdown, wide=wide)


def show_report(report, *, as_json: bool = False, as_markdown: bool = False, wide: bool = False) -> None:
    """Print an eval report (tables, Markdown or JSON); episodes that could not run are a line on stderr, and when
    every episode failed that way the command exits 1."""
    if as_json:
        emit_json(report.to_dict())
    elif as_markdown:
        click.echo(markdown(report.summary, report.per_env, skipped=report.skipped, excluded=report.left_out), nl=False)
    else:
        _print_report(report, wide)
    if report.errors:
        click.echo(f"{report.errors} episode(s) could not run and are left out of the rates "
                   f"(`sandmle runs resume {report.run_id}` retries them): {report.error}", err=True)
    if report.status == "failed":
        click.echo(f"error: every episode of eval run {report.run_id} failed to run: {report.error}", err=True)
        raise SystemExit(1)


def _print_report(report, wide: bool) -> None:
    click.echo(f"eval run {report.run_id}: {report.policy} · {report.scaffold} · {report.n_envs} competitions × "
               f"{len(report.rng_seeds)} seeds · {report.wall_s:.0f}s")
    headers = [SHORT.get(h, h) for h in table_headers()]
    table(table_rows(report.per_env), headers, wide=wide, keep=tuple(range(len(headers))))  # numbers are never cut
    click.echo(rank_note(report.per_env))
    click.echo("")
    table([(report.rank_label if k == "rank" else k, fmt(v["mean"]), fmt(v["sem"]))
           for k, v in report.summary.items()], ["rate", "mean", "± sem"], wide=wide)
    if report.left_out.get("episodes"):
        names = ", ".join(map(competition, report.left_out["envs"]))
        click.echo(f"\nmedals and the rank: n/a on {len(report.left_out['envs'])} competition(s) without a "
                   f"leaderboard ({names}): {report.left_out['episodes']} episode(s) left out of those rates")
    if report.skipped:
        click.echo(f"\nskipped {len(report.skipped)} competition(s) (not run, not counted):")
        for s in report.skipped:
            click.echo(f"  {s['id']}: {s['reason']}")


@eval_.command("compare")
@click.argument("run_a")
@click.argument("run_b")
@click.option("--rate", default="any_medal", show_default=True,
              type=click.Choice(RATE_NAMES), help="The rate to compare.")
@click.option("--bootstrap", "n_boot", type=click.IntRange(min=100), default=2000, show_default=True,
              help="Bootstrap resamples for the 95% intervals.")
@json_option("the comparison")
@wide_option
@pass_ctx
def compare(ctx: Context, run_a: str, run_b: str, rate: str, n_boot: int, as_json: bool, wide: bool) -> None:
    """Compare two eval runs: per competition and overall, the paired difference B − A of one rate (episodes pair
    up by environment and RNG seed) with a bootstrap 95% interval. E.g. RUN_A = SFT, RUN_B = SFT+GRPO."""
    cmp = compare_runs(ctx.store, run_a, run_b, rate, n_boot=n_boot)
    if as_json:
        emit_json(cmp.to_dict())
        return
    click.echo(f"{rate}: {run_b} (B) − {run_a} (A), paired by environment and seed; 95% bootstrap intervals")
    table([(competition(e.env_id), e.n_pairs, f"{e.a:.3f}", f"{e.b:.3f}", f"{e.diff:+.3f}",
            f"[{e.interval.low:+.2f}, {e.interval.high:+.2f}]") for e in cmp.per_env],
          ["competition", "pairs", "A", "B", "B − A", "95% interval"], wide=wide)
    click.echo(f"\noverall ({len(cmp.per_env)} competitions, {cmp.n_pairs} pairs): B − A = {cmp.diff:+.3f} "
               f"[{cmp.interval.low:+.3f}, {cmp.interval.high:+.3f}]")
    if cmp.only_a or cmp.only_b:
        click.echo(f"not compared (in one run only): {', '.join(cmp.only_a + cmp.only_b)}")
    if cmp.not_applicable:
        click.echo(f"left out: {cmp.not_applicable} pair(s) where {rate} is n/a (no leaderboard)")


@eval_.command("constants")
@click.option("--envs", "selector", metavar="SELECTOR",
              help="The environments, as `eval --envs` takes them (env ids, split:NAME, seed:ID, all, real, "
                   "mlebench:DIR[:lite], folders; comma-separated).")
@click.option("--run", "run_id", metavar="EVAL_RUN_ID",
              help="The environments of this eval run (e.g. to set them beside `eval compare`).")
@json_option("the constants", detail="every option's score and medal per environment")
@pass_ctx
def constants(ctx: Context, selector: str | None, run_id: str | None, as_json: bool) -> None:
    """Run every option a policy can pick (the 32 strategies) as a constant policy on the environments: per
    environment the options that earn a medal, then the best constant strategy (the option with the highest medal
    rate over them) and the per-task oracle (the best option of each). One sandbox run per environment, cached in
    the data dir by the environment's content: a second call runs nothing."""
    if (selector is None) == (run_id is None):
        raise click.UsageError("give one of --envs SELECTOR or --run EVAL_RUN_ID")
    if selector is not None:
        if not selector.strip(" ,"):
            raise SandmleError("empty selector", hint="give env ids, split:NAME, seed:ID, all, real, "
                                                       "mlebench:DIR[:lite] or a folder")
        envs = select(ctx.store, selector, note=note).envs
    else:
        envs = run_envs(ctx.store, run_id or "")
    left_out = [e.id for e in envs if not has_thresholds(e)]
    if left_out:
        warn(f"left out (no medal thresholds: a medal is n/a there): {', '.join(left_out)}")
    envs = [e for e in envs if has_thresholds(e)]
    if not envs:
        raise SandmleError("no environment with medal thresholds to run the constants on")
    cache = cache_dir(ctx.store.data_dir)
    to_run = sum(cached_results(e, cache) is None for e in envs)
    if to_run:
        note(f"{len(envs) - to_run} of {len(envs)} environment(s) cached; one sandbox run for each of the other "
             f"{to_run} ({len(options())} options in each)")
    found = constants_of(envs, cache, note, store=ctx.store)
    best = best_constant(found)
    medals = {env_id: [c.key for c in options() if res[c.key]["medal"]] for env_id, res in found.items()}
    if as_json:
        emit_json({**best, "envs": [{"env_id": env_id, "medal_options": medals[env_id], "options": res}
                                    for env_id, res in found.items()], "left_out": left_out})
        return
    n = len(found)
    click.echo(f"each of the {len(options())} options as a constant policy on {n} environment(s):")
    for env_id in found:
        click.echo(f"{env_id}: {len(medals[env_id])} of {len(found[env_id])} options earn a medal")
        if medals[env_id]:
            click.echo(textwrap.fill(", ".join(medals[env_id]), width=78, initial_indent="  ",
                                     subsequent_indent="  ", break_on_hyphens=False))
    wins = sum(best["best_constant_per_task"].values())
    click.echo(f"\nbest constant strategy: {best['best_constant_strategy']} · medal {best['best_constant_medal']:.3f} "
               f"(a medal on {wins} of {n})")
    click.echo(f"per-task oracle: medal {best['oracle_medal']:.3f} (the best option of each environment)")
