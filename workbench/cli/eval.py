"""`sandmle eval`: a policy + scaffold over many environments and seeds, in parallel."""

from __future__ import annotations

import click

from .common import POSITIVE_S, Context, emit_json, pass_ctx, progress, table, wide_option


def _fmt(v, digits=3):
    return "-" if v is None else f"{v:.{digits}f}"


@click.command("eval")
@click.option("--policy", "policy_spec", default="scripted", show_default=True,
              help="Policy spec: scripted[:skill=0.7], hf:PATH[,adapter=DIR], anthropic:MODEL, openai:MODEL.")
@click.option("--scaffold", default="react", show_default=True, type=click.Choice(["react", "aide", "oneshot"]),
              help="How the policy acts.")
@click.option("--envs", "selector", required=True,
              help="Env ids, split:NAME, seed:ID, all, or a folder of environments / MLE-bench competitions "
                   "(comma-separated).")
@click.option("--rng-seeds", "n_seeds", type=click.IntRange(min=1), default=1, show_default=True, help="Seeds per environment (0..K-1).")
@click.option("--limit", type=click.IntRange(min=1), help="Evaluate on the first N selected environments only.")
@click.option("--max-turns", type=click.IntRange(min=1),
              help="Turn budget per episode. Default per scaffold (react 15, aide 5).")
@click.option("--workers", type=click.IntRange(min=1),
              help="Episodes at once (default: [executor] workers of the settings).")
@click.option("--executor", type=click.Choice(["thread", "process"]), default="thread", show_default=True,
              help="Run episodes in threads (one policy in memory) or spawned processes.")
@click.option("--step-timeout", type=POSITIVE_S, default=300, show_default=True, help="Seconds per code step.")
@click.option("--episode-timeout", type=POSITIVE_S, default=1200, show_default=True, help="Seconds per episode.")
@click.option("--name", help="A name for the eval run.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@wide_option
@pass_ctx
def eval_(ctx: Context, policy_spec: str, scaffold: str, selector: str, n_seeds: int, limit: int | None,
          max_turns: int | None, workers: int | None, executor: str, step_timeout: float, episode_timeout: float,
          name: str | None, as_json: bool, wide: bool) -> None:
    """Evaluate a policy: medal / valid / above-median rates and HumanRank as mean ± SEM over seeds, plus a
    per-environment table. Results go into the store as an eval run."""
    from engine.config import load_settings
    from engine.eval.run import run_eval
    from engine.eval.select import select_envs

    envs = select_envs(ctx.store, selector, limit=limit)
    workers = workers or load_settings().executor.workers
    bar = progress(len(envs) * n_seeds, f"eval {scaffold}")
    with bar:
        report = run_eval(ctx.store, policy_spec, envs, scaffold=scaffold, rng_seeds=list(range(n_seeds)),
                          max_turns=max_turns, step_timeout_s=step_timeout, episode_timeout_s=episode_timeout,
                          workers=workers, executor=executor, name=name,
                          progress=lambda done, total: bar.update(done - bar.pos))
    if as_json:
        emit_json(report.to_dict())
        return
    s = report.summary
    click.echo(f"eval run {report.run_id}: {report.policy} · {report.scaffold} · {report.n_envs} envs × "
               f"{len(report.rng_seeds)} seeds · {report.wall_s:.0f}s")
    table([(k, _fmt(v["mean"]), _fmt(v["sem"])) for k, v in s.items()], ["rate", "mean", "± sem"], wide=wide)
    click.echo("")
    table([(r["env_id"], r["episodes"], _fmt(r["valid"], 2), _fmt(r["any_medal"], 2), r["gold"], r["silver"],
            r["bronze"], _fmt(r["mean_score"], 4), _fmt(r["human_rank"], 2), _fmt(r["reward"], 2))
           for r in report.per_env],
          ["env", "n", "valid", "medal", "gold", "silver", "bronze", "score", "HR", "reward"], wide=wide, keep=())
