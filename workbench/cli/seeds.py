"""`sandmle seeds …`: list, show, import, enable/disable and tag seed tasks."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import click

from engine.seeds.load import discover, store_seeds
from engine.seeds.mlebench import is_mlebench_folder, load_mlebench_folder

from .common import Context, emit_json, json_option, pass_ctx, table, wide_option


@click.group()
def seeds() -> None:
    """Curate seed tasks (the real competitions that synthesis imitates)."""


@seeds.command("list")
@json_option()
@click.option("--modality", help="Only seeds of this modality.")
@click.option("--enabled/--all", "only_enabled", default=False, help="Only enabled seeds.")
@wide_option
@pass_ctx
def list_(ctx: Context, as_json: bool, modality: str | None, only_enabled: bool, wide: bool) -> None:
    """List the seeds in the store."""
    rows = ctx.store.seeds.list(modality=modality, enabled=True if only_enabled else None)
    if as_json:
        emit_json([{k: r[k] for k in ("id", "title", "modality", "task_type", "metric", "lower_is_better",
                                      "enabled", "tags", "origin", "n_envs", "n_verified")} for r in rows])
        return
    table([(r["id"], r["modality"], r["task_type"], r["metric"], "yes" if r["enabled"] else "no",
            ",".join(r["tags"]), r["n_verified"]) for r in rows],
          ["id", "modality", "task", "metric", "on", "tags", "envs"], wide=wide)


#: seed column dtypes → the feature kinds `seeds show` counts
KINDS = {"int": "numeric", "float": "numeric", "category": "categorical", "bool": "categorical", "path": "media"}


@seeds.command("show")
@click.argument("seed_id")
@json_option()
@wide_option
@pass_ctx
def show(ctx: Context, seed_id: str, as_json: bool, wide: bool) -> None:
    """Show one seed: card, schema and description."""
    seed = ctx.store.seeds.get(seed_id)
    if as_json:
        emit_json(seed)
        return
    direction = "minimize" if seed["lower_is_better"] else "maximize"
    click.echo(f"{seed['id']}: {seed['title']}")
    click.echo(f"  modality {seed['modality']} · task {seed['task_type']} · metric {seed['metric']} ({direction})")
    click.echo(f"  id column {seed['id_column']} · targets {', '.join(seed['target_columns'])}"
               + ("" if seed["hints"].get("id_in_test", True) else " · id only in sample_submission.csv"))
    classes = next((c.get("values") for c in seed["columns"] if c["role"] == "target" and c.get("values")), None)
    n_classes = seed["hints"].get("n_classes") or (len(classes) if classes else None)
    shown = f" ({', '.join(map(str, classes[:8]))}{', …' if len(classes) > 8 else ''})" if classes else ""
    kinds = Counter(KINDS.get(c["dtype"], c["dtype"]) for c in seed["columns"] if c["role"] in ("feature", "media"))
    click.echo(f"  {f'classes {n_classes}{shown} · ' if n_classes else ''}features "
               + (", ".join(f"{n} {k}" for k, n in kinds.most_common()) or "none"))
    click.echo(f"  original size train {seed['train_size']:,} / test {seed['test_size']:,}")
    if seed["origin"]:
        click.echo(f"  origin {seed['origin']}")
    click.echo(f"  enabled {'yes' if seed['enabled'] else 'no'} · tags {', '.join(seed['tags']) or '-'}")
    if seed["hints"]:
        click.echo("  hints " + ", ".join(f"{k}={v}" for k, v in seed["hints"].items()))
    click.echo("\nschema:")
    table([(c["name"], c["dtype"], c["role"], c.get("description", "")) for c in seed["columns"]],
          ["column", "dtype", "role", "description"], wide=wide)
    click.echo("\n" + seed["description"].strip())


@seeds.command("import")
@click.argument("path", type=click.Path(path_type=str))
@click.option("--metric", help="Metric for an MLE-bench folder whose grader name is not recognised.")
@click.option("--force", is_flag=True,
              help="Replace a stored seed that changed even though environments were synthesized from it.")
@json_option("the imported seeds")
@pass_ctx
def import_(ctx: Context, path: str, metric: str | None, force: bool, as_json: bool) -> None:
    """Import a seed folder, an MLE-bench competition folder, or a folder of them.

    Every seed is validated before anything is stored: one bad seed stores none. A seed whose content changed
    under the same id says what changed; while environments depend on it, only --force replaces it.
    """
    if metric and is_mlebench_folder(Path(path)):
        imported = [load_mlebench_folder(path, metric=metric)]
    else:
        imported = discover(path)
    changes = store_seeds(ctx.store, imported, force=force)
    if as_json:
        emit_json([{"id": s.id, "modality": s.modality, "metric": s.metric, "source_format": s.source_format,
                    "changed": changes.get(s.id, [])} for s in imported])
        return
    click.echo(f"imported {len(imported)} seed(s): {', '.join(s.id for s in imported)}")
    for seed_id, changed in changes.items():
        click.echo(f"  {seed_id}: replaced the stored version (changed: {', '.join(changed)})")


@seeds.command("enable")
@click.argument("seed_id")
@pass_ctx
def enable(ctx: Context, seed_id: str) -> None:
    """Enable a seed for synthesis."""
    ctx.store.seeds.set_enabled(seed_id, True)
    click.echo(f"{seed_id}: enabled")


@seeds.command("disable")
@click.argument("seed_id")
@pass_ctx
def disable(ctx: Context, seed_id: str) -> None:
    """Disable a seed (kept in the store, skipped by synthesis)."""
    ctx.store.seeds.set_enabled(seed_id, False)
    click.echo(f"{seed_id}: disabled")


def _tag(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """A tag is one word-like label: not empty, no comma (lists of tags are shown comma-separated)."""
    tag = value.strip()
    if not tag:
        raise click.BadParameter("a tag cannot be empty", ctx, param)
    if "," in tag:
        raise click.BadParameter(f"{tag!r}: a tag cannot contain a comma (add one tag at a time)", ctx, param)
    return tag


@seeds.command("tag")
@click.argument("seed_id")
@click.argument("tag", callback=_tag)
@click.option("--remove", is_flag=True, help="Remove the tag instead of adding it.")
@pass_ctx
def tag(ctx: Context, seed_id: str, tag: str, remove: bool) -> None:
    """Add (or --remove) a tag on a seed."""
    tags = ctx.store.seeds.tag(seed_id, tag, remove=remove)
    click.echo(f"{seed_id}: tags {', '.join(tags) or '-'}")
