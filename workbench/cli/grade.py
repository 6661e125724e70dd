"""`sandmle grade ENV SUBMISSION`: grade a submission file outside any agent's sandbox (MLE-bench's report fields;
an environment graded by its own evaluator runs it in a grading sandbox)."""

from __future__ import annotations

import click

from engine.eval.select import resolve_env
from engine.grading import compute_reward
from engine.grading import grade as grade_fn
from engine.grading.rewards import SCHEMES

from .common import Context, emit_json, json_option, note, pass_ctx


@click.command()
@click.argument("env")
@click.argument("submission", type=click.Path(path_type=str))
@click.option("--metric", help="Metric for an MLE-bench folder whose grader name is not recognised (overrides it).")
@click.option("--reward", type=click.Choice(sorted(SCHEMES)), default=None,
              help="Also give the reward of this submission alone (the format term, which needs an agent's turns, "
                   "counts 0): what an exported Harbor verifier writes.")
@json_option("the grade report")
@pass_ctx
def grade(ctx: Context, env: str, submission: str, metric: str | None, reward: str | None, as_json: bool) -> None:
    """Grade SUBMISSION (a CSV) on ENV: a stored environment id, an environment folder or an MLE-bench
    competition folder. Exits 0 for a valid submission, 3 for an invalid one."""
    spec = resolve_env(ctx.store, env, metric=metric, note=note)
    report = grade_fn(spec, submission)
    value = compute_reward(report, [], reward)[0] if reward else None
    row = ctx.store.envs.find(spec.id)
    paper = ((row or {}).get("verification") or {}).get("paper") or {}
    extra = {**({"grader": spec.grade.grader} if spec.grade.external else {}),
             **({"paper_thresholds": paper["thresholds"]} if paper.get("thresholds") else {})}
    if as_json:
        emit_json({**report.to_dict(), **extra, **({"reward": value} if reward else {})})
    else:
        click.echo(format_report(report))
        if spec.grade.external:
            click.echo("  graded by its own evaluator (private/evaluator.py, in the sandbox)")
        if paper.get("thresholds"):
            th = paper["thresholds"]
            click.echo("  paper's thresholds " + " · ".join(f"{k} {th[k]:.6g}" for k in ("gold", "silver", "bronze",
                                                                                       "median") if k in th))
        if reward:
            click.echo(f"  reward ({reward}, submission alone) {value:.6g}")
    if not report.valid_submission:
        raise SystemExit(3)


def format_report(report) -> str:
    if not report.valid_submission:
        return f"{report.competition_id}: invalid submission: {report.error}"
    direction = "lower is better" if report.is_lower_better else "higher is better"
    lines = [f"{report.competition_id}: score {report.score:.6g} ({direction})"]
    if report.gold_threshold is not None:
        rank = f" · {report.rank_name} {report.rank:.3f}" if report.rank is not None else ""
        lines.append(f"  medal {report.medal or '-'} · above median {'yes' if report.above_median else 'no'}{rank}")
        lines.append(f"  thresholds gold {report.gold_threshold:.6g} · silver {report.silver_threshold:.6g} · "
                     f"bronze {report.bronze_threshold:.6g} · median {report.median_threshold:.6g}")
    else:
        lines.append("  no leaderboard: medals and the rank n/a")
    return "\n".join(lines)
