"""`sandmle trajectories …`: list, show and export stored trajectories."""

from __future__ import annotations

from pathlib import Path

import click

from engine.agents.export import export_trajectories

from .common import Context, emit_json, json_option, pass_ctx, table, wide_option


def _filters(run, env, policy, min_reward, limit=None):
    return {"run_id": run, "env_id": env, "policy": policy, "min_reward": min_reward, "limit": limit}


@click.group()
def trajectories() -> None:
    """Inspect and export trajectories (whole episodes with grade and reward)."""


@trajectories.command("list")
@click.option("--run", help="Only trajectories of this run.")
@click.option("--env", help="Only trajectories of this environment.")
@click.option("--policy", help="Only trajectories of this policy name.")
@click.option("--min-reward", type=float, help="Only trajectories with at least this reward.")
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True, help="At most this many rows.")
@json_option()
@wide_option
@pass_ctx
def list_(ctx: Context, run, env, policy, min_reward, limit, as_json, wide) -> None:
    """List trajectories, oldest first."""
    rows = ctx.store.trajectories.list(**_filters(run, env, policy, min_reward, limit))
    if as_json:
        emit_json([r.to_dict() for r in rows])
        return
    table([(r.id, r.env_id, r.policy, r.scaffold, r.n_turns, r.status, f"{r.reward:.3f}",
            "valid" if (r.grade or {}).get("valid_submission") else "invalid") for r in rows],
          ["id", "env", "policy", "scaffold", "turns", "status", "reward", "grade"], wide=wide)


@trajectories.command("show")
@click.argument("trajectory_id")
@json_option()
@pass_ctx
def show(ctx: Context, trajectory_id: str, as_json: bool) -> None:
    """Show one trajectory turn by turn."""
    traj = ctx.store.trajectories.get(trajectory_id)
    if as_json:
        emit_json(traj.to_dict())
        return
    click.echo(f"{traj.id} · {traj.env_id} · {traj.policy} · {traj.scaffold} · reward {traj.reward:.3f}")
    if traj.staleness is not None:
        click.echo(f"GRPO step {traj.step}: trained {traj.staleness} update(s) after the weights that sampled it")
    for i, t in enumerate(traj.turns):
        click.echo(f"--- [{i}] {t.role}" + (f" · {t.tool}" if t.tool else "")
                   + (f" · policy v{t.policy_version}" if t.policy_version is not None else ""))
        click.echo(t.text)


#: export formats by file suffix
SUFFIXES = {".jsonl": "jsonl", ".parquet": "parquet"}


@trajectories.command("export")
@click.argument("out", type=click.Path(dir_okay=False, path_type=str))
@click.option("--format", "fmt", type=click.Choice(["jsonl", "parquet"]),
              help="Default: from the file suffix (.jsonl or .parquet).")
@click.option("--force", is_flag=True, help="Overwrite OUT if it exists.")
@click.option("--run", help="Only trajectories of this run.")
@click.option("--env", help="Only trajectories of this environment.")
@click.option("--policy", help="Only trajectories of this policy name.")
@click.option("--min-reward", type=float, help="Only trajectories with at least this reward.")
@click.option("--valid-only", is_flag=True, help="Only trajectories whose submission was valid.")
@click.option("--tokens", is_flag=True, help="Include per-message token ids (hf policies).")
@pass_ctx
def export(ctx: Context, out, fmt, force, run, env, policy, min_reward, valid_only, tokens) -> None:
    """Export trajectories as an HF-datasets-compatible JSONL or Parquet file (chat `messages` + outcomes)."""
    suffix = Path(out).suffix.lower()
    if fmt is None and suffix not in SUFFIXES:
        raise click.BadParameter(f"unknown extension {suffix or '(none)'!r}; use .jsonl or .parquet (or --format)",
                                 param_hint=f"OUT {out!r}")
    if Path(out).exists() and not force:
        raise click.UsageError(f"{out} exists; add --force to overwrite it")
    n = export_trajectories(ctx.store, out, fmt=fmt or SUFFIXES[suffix], with_tokens=tokens, only_valid=valid_only,
                            **_filters(run, env, policy, min_reward))
    click.echo(f"wrote {n} trajectories to {out}")
