"""`sandmle envs list|show|export|delete`: the synthesized environments."""

from __future__ import annotations

import click

from .common import Context, emit_json, pass_ctx, table


@click.group()
def envs() -> None:
    """Browse, export and delete synthesized environments."""


@envs.command("list")
@click.option("--seed", "seed_id", help="Only environments of this seed.")
@click.option("--status", type=click.Choice(["verified", "rejected", "pending"]), help="Only this status.")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@pass_ctx
def list_(ctx: Context, seed_id: str | None, status: str | None, as_json: bool) -> None:
    """List environments (newest last)."""
    rows = ctx.store.envs.list(seed_id=seed_id, status=status)
    keys = ("id", "seed_id", "title", "status", "reason", "modality", "task_type", "metric", "n_train", "n_test",
            "split", "backend", "rng_seed", "created_at")
    if as_json:
        emit_json([{k: r.get(k) for k in keys} for r in rows])
        return
    table([(r["id"], r["seed_id"], r["status"], r["metric"], r["n_train"], r["n_test"], (r["title"] or "")[:44])
           for r in rows], ["id", "seed", "status", "metric", "train", "test", "title"])


@envs.command("show")
@click.argument("env_id")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON (row, leaderboard, files, attempts).")
@pass_ctx
def show(ctx: Context, env_id: str, as_json: bool) -> None:
    """Show one environment: card, thresholds, leaderboard and the synthesis history."""
    store = ctx.store
    row = store.envs.get(env_id)
    board = store.envs.leaderboard(env_id)
    attempts = store.envs.attempts(env_id=env_id)
    if as_json:
        emit_json({**row, "leaderboard": board, "files": store.envs.files(env_id),
                   "attempts": [{k: a[k] for k in ("role", "attempt", "verdict", "feedback", "usage", "wall_s")}
                                for a in attempts]})
        return
    direction = "lower" if row["lower_is_better"] else "higher"
    click.echo(f"{row['id']}: {row['title']}")
    click.echo(f"  seed {row['seed_id']} · {row['modality']} {row['task_type']} · metric {row['metric']} "
               f"({direction} is better) · status {row['status']}")
    if row["reason"]:
        click.echo(f"  reason: {row['reason']}")
    click.echo(f"  train {row['n_train']} / test {row['n_test']} rows · backend {row['backend']} · "
               f"rng seed {row['rng_seed']} · {row['dir']}")
    if row["thresholds"]:
        t = row["thresholds"]
        click.echo(f"  medals: gold {t['gold']:.4g} · silver {t['silver']:.4g} · bronze {t['bronze']:.4g} · "
                   f"median {t['median']:.4g}")
    if board:
        click.echo("\nleaderboard:")
        table([(e["name"], f"{e['score']:.4g}", e["rng_seed"], e["source"]) for e in board],
              ["entry", "score", "rng seed", "source"])
    click.echo("\nsynthesis history:")
    table([(a["role"], a["attempt"], a["verdict"], (a["feedback"] or "")[:80]) for a in attempts],
          ["role", "try", "verdict", "feedback"])


@envs.command("export")
@click.argument("env_id")
@click.argument("dest", type=click.Path(file_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@pass_ctx
def export(ctx: Context, env_id: str, dest: str, as_json: bool) -> None:
    """Write an MLE-bench-style competition folder (config.yaml, description.md, prepared/, leaderboard.csv)."""
    from engine.envs import export_env

    path = export_env(ctx.store, env_id, dest)
    if as_json:
        emit_json({"id": env_id, "path": str(path)})
    else:
        click.echo(f"exported {env_id} to {path}")


@envs.command("delete")
@click.argument("env_id")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@pass_ctx
def delete(ctx: Context, env_id: str, as_json: bool) -> None:
    """Delete an environment: its row, files, leaderboard and folder."""
    from engine.envs import delete_env

    row = delete_env(ctx.store, env_id)
    if as_json:
        emit_json({"id": env_id, "deleted": True, "dir": row.get("dir")})
    else:
        click.echo(f"deleted {env_id}")
