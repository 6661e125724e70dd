"""`sandmle envs list|show|add|audit|reboard|real-suite|diversity|split|export|import|delete`: the stored
environments."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import click

from engine.config import load_settings
from engine.envs.layout import board_of
from engine.envs.storage import delete_env, export_env
from engine.eval.boards import needs_reboard, reboard_stored
from engine.eval.realsuite import MIN_TASKS, build_suite
from engine.eval.reaudit import audit_stored, stored_ids, stored_value
from engine.grading.audit import AuditReport
from engine.grading.thresholds import BOARDS
from engine.exchange.export import INDEX, REWARDS, ExportOptions, export_envs
from engine.exchange.paper_import import import_tasks
from engine.exchange.source import FORMATS
from engine.eval.select import set_split
from engine.sandbox import get_backend
from engine.sandbox.image import BASE_IMAGE
from engine.synthesis.add import add_program, read_program
from engine.synthesis.diversity import by_backend, diversity, throughput
from engine.synthesis.fidelity import fidelity_line, stored_fidelity
from engine.synthesis.solutions import with_solution_imports
from engine.synthesis.usage import usage_summary

from .common import Context, emit_json, json_option, note, pass_ctx, progress, table, wide_option
from .sandbox_options import sandbox_options


@click.group()
def envs() -> None:
    """Browse, split, export and delete synthesized environments."""


@envs.command("list")
@click.option("--seed", "seed_id", help="Only environments of this seed.")
@click.option("--status", type=click.Choice(["verified", "rejected", "pending"]), help="Only this status.")
@json_option()
@wide_option
@pass_ctx
def list_(ctx: Context, seed_id: str | None, status: str | None, as_json: bool, wide: bool) -> None:
    """List environments (newest last); a rejected one shows why instead of its title."""
    rows = ctx.store.envs.list(seed_id=seed_id, status=status)
    keys = ("id", "seed_id", "title", "status", "reason", "modality", "task_type", "metric", "n_train", "n_test",
            "split", "backend", "rng_seed", "created_at")
    if as_json:
        emit_json([{k: r.get(k) for k in keys} for r in rows])
        return
    table([(r["id"], r["status"], _v(r["split"]), r["metric"], _rows(r),
            r["reason"] if r["status"] == "rejected" and r["reason"] else r["title"]) for r in rows],
          ["id", "status", "split", "metric", "rows", "title / why"], wide=wide)


@envs.command("split")
@click.argument("selector")
@click.option("--to", "split", required=True, type=click.Choice(["train", "heldout"]),
              help="The split to move them to: train (GRPO and SFT read it) or heldout (for eval).")
@json_option("the moved ids")
@pass_ctx
def split_(ctx: Context, selector: str, split: str, as_json: bool) -> None:
    """Move environments between the train and held-out splits. SELECTOR as in `eval --envs`: env ids,
    split:NAME, seed:ID or all (comma-separated)."""
    ids = set_split(ctx.store, selector, split)
    if as_json:
        emit_json({"split": split, "moved": ids})
    else:
        click.echo(f"{len(ids)} environment{'s' if len(ids) != 1 else ''} now in {split}: {', '.join(ids)}")


def _rows(row: dict) -> str:
    """``train/test`` row counts, ``-`` for what is not known."""
    return f"{_v(row['n_train'])}/{_v(row['n_test'])}"


def _params(entry: dict) -> str:
    """A board entry's parameters and feature set in words (a population entry's; '' for others)."""
    params = json.loads(entry["params"]) if entry.get("params") else {}
    members = params.pop("members", None)
    text = " ".join(f"{k}={v}" for k, v in params.items())
    return ("+".join(m[0] for m in members) + " " if members else "") + text


def _v(value: object) -> str:
    """A value for a human: ``-`` when it is missing (never ``None``)."""
    return "-" if value is None or value == "" else str(value)


def _g(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


@envs.command("show")
@click.argument("env_id")
@json_option(detail="row, leaderboard, files, attempts")
@wide_option
@pass_ctx
def show(ctx: Context, env_id: str, as_json: bool, wide: bool) -> None:
    """Show one environment: card, fidelity to its seed, thresholds, leaderboard and the synthesis history."""
    store = ctx.store
    row = store.envs.get(env_id)
    board = store.envs.leaderboard(env_id)
    attempts = store.envs.attempts(env_id=env_id)
    usage = usage_summary(attempts)
    if as_json:
        emit_json({**row, "leaderboard": board, "files": store.envs.files(env_id), "usage": usage,
                   "attempts": [{**{k: a[k] for k in ("role", "attempt", "verdict", "feedback", "usage", "wall_s")},
                                 **({"log": a["output"]} if a["verdict"] == "error" else {})} for a in attempts]})
        return
    direction = "lower" if row["lower_is_better"] else "higher"
    click.echo(f"{row['id']}: {_v(row['title'])}")
    click.echo(f"  seed {_v(row['seed_id'])} · {_v(row['modality'])} {_v(row['task_type'])} · metric "
               f"{row['metric']} ({direction} is better) · status {row['status']}")
    if row["reason"]:
        click.echo(f"  reason: {row['reason']}")
    click.echo(f"  train {_v(row['n_train'])} / test {_v(row['n_test'])} rows · backend {_v(row['backend'])} · "
               f"rng seed {_v(row['rng_seed'])} · {_v(row['dir'])}")
    profiles = stored_fidelity(store, env_id)
    if profiles:
        click.echo(f"  {fidelity_line(*profiles)}")
    audited = stored_value(row["verification"], "report", "audit")
    if isinstance(audited, dict):
        click.echo(f"  {AuditReport.from_dict(audited).summary()}")
    kind = board_of(row["thresholds"], board)
    if row["thresholds"]:
        click.echo("  medals: " + " · ".join(f"{k} {_g(row['thresholds'].get(k))}"
                                             for k in ("gold", "silver", "bronze", "median"))
                   + f" · {kind or 'no'} board of {len(board)} ({BOARDS.get(kind or '', 'unknown')})")
    if kind == "ladder":
        click.echo(f"  the 9-entry board of the verifier's own scripts: `sandmle envs reboard {env_id}`")
    if board:
        click.echo("\nleaderboard:")
        table([(e["name"], _params(e), e.get("family") or "", _g(e["score"]), _v(e["rng_seed"])) for e in board],
              ["entry", "parameters", "family", "score", "rng seed"], wide=wide)
    if usage["calls"]:
        click.echo(f"\nLLM usage: {usage['calls']} calls · {usage['tokens']:,} tokens · ${usage['cost_usd']:.4f}")
        table([(role, u["calls"], u["input_tokens"], u["output_tokens"], u["cache_read_tokens"], f"{u['cost_usd']:.4f}")
               for role, u in usage["by_role"].items()], ["role", "calls", "input", "output", "cache read", "USD"],
              wide=wide)
    if attempts:
        click.echo("\nsynthesis history:")
        table([(a["role"], a["attempt"], a["verdict"], (a["feedback"] or "").replace("\n", " ")) for a in attempts],
              ["role", "try", "verdict", "feedback"], wide=wide)
    for a in (a for a in attempts if a["verdict"] == "error" and a["output"]):  # a step that raised: its log
        lines = str(a["output"]).rstrip().splitlines()
        click.echo(f"\n{a['role']} #{a['attempt']} raised (the last lines of its traceback; all of it: --json, "
                   "attempts[].log):")
        click.echo("\n".join("  " + line for line in lines[-8:]))


@envs.command("add")
@click.option("--seed", "seed_id", required=True, help="The seed task the program imitates.")
@click.option("--program", "program_path", required=True, type=click.Path(dir_okay=False),
              help="generator.py: `python generator.py --out DIR --seed S` writes public/ and private/answers.csv.")
@click.option("--description", "description_path", type=click.Path(dir_okay=False),
              help="description.md for the task (default: written from the data).")
@click.option("--metric", help="Metric from the library (default: the seed's).")
@click.option("--timeout", "timeout_s", type=float, help="Wall-time limit of the program in seconds "
                                                          "(default: [synthesis] generator_timeout_s).")
@click.option("--rng-seed", type=int, default=0, show_default=True, help="The --seed the program is run with.")
@json_option("the outcome")
@pass_ctx
def add(ctx: Context, seed_id: str, program_path: str, description_path: str | None, metric: str | None,
        timeout_s: float | None, rng_seed: int, as_json: bool) -> None:
    """Verify a hand-written generator program as an environment: exit 0 when verified, 1 when rejected."""
    ctx.store.seeds.get(seed_id)
    description = read_program(description_path) if description_path else None
    outcome = add_program(ctx.store, seed_id, read_program(program_path), description=description, metric=metric,
                          timeout_s=timeout_s, rng_seed=rng_seed)
    if as_json:
        emit_json(outcome.to_dict())
    elif outcome.status == "verified":
        click.echo(f"verified {outcome.env_id}: constant {outcome.trivial:.4g}, strong {outcome.strong:.4g} "
                   f"({outcome.metric})")
    else:
        click.echo(f"rejected {outcome.env_id}: {outcome.reason}")
    if outcome.status != "verified":
        sys.exit(1)


@envs.command("diversity")
@click.option("--seed", "seed_id", help="Only environments of this seed.")
@click.option("--status", type=click.Choice(["verified", "rejected"]), default="verified", show_default=True,
              help="Which environments to compare.")
@json_option()
@pass_ctx
def diversity_(ctx: Context, seed_id: str | None, status: str, as_json: bool) -> None:
    """Distinct domains and source datasets, column-name overlap (with each other and with the seed), fingerprint
    similarity and how text columns read, across stored environments; then the same per synthesis backend, side by
    side, with the verified environments per minute of their runs."""
    rows = ctx.store.envs.list(seed_id=seed_id, status=status)
    seeds = {s["id"]: s for s in ctx.store.seeds.list()}
    report = diversity(rows, seeds)
    per = by_backend(rows, seeds)
    speed = throughput(ctx.store.runs.list(kind="synthesis", status="done", limit=None))
    for name, d in per.items():
        d.verified_per_min = speed.get(name)
    if as_json:
        emit_json({**report.to_dict(), "by_backend": {k: v.to_dict() for k, v in per.items()}})
        return
    click.echo(f"{report.environments} environments · {report.domains} distinct domains · "
               f"{report.source_datasets} source datasets")
    click.echo(f"column-name overlap (Jaccard): mean {report.column_overlap_mean:.3f} · max "
               f"{report.column_overlap_max:.3f}")
    click.echo(f"fingerprint similarity: mean {report.fingerprint_similarity_mean:.3f} · max "
               f"{report.fingerprint_similarity_max:.3f} · near-duplicate pairs {report.near_duplicate_pairs}")
    if report.pairwise_over < report.environments:
        click.echo(f"(pairwise figures over a fixed sample of {report.pairwise_over} environments)")
    if len(per) > 1 or report.seed_overlap_mean is not None:
        def f(v: float | None, fmt: str = ".3f") -> str:
            return "" if v is None else format(v, fmt)

        table([(name, d.environments, d.source_datasets, d.domains, f(d.seed_overlap_mean), f(d.own_columns_share),
                f(d.fingerprint_similarity_mean), f(d.text_function_pairs), f(d.verified_per_min, ".2f"))
               for name, d in per.items()],
              ["backend", "envs", "sources", "domains", "seed", "own", "fp", "fnpairs", "/min"])
        click.echo("seed: share of column names the seed has too · own: share of environments at <= 30% of them · "
                   "fp: fingerprint similarity · fnpairs: adjacent function-word pairs in text (prose ~0.10) · "
                   "/min: verified per minute of their runs")
    table(sorted(report.domain_counts.items(), key=lambda kv: -kv[1]), ["domain", "environments"])


@envs.command("export")
@click.argument("selector")
@click.argument("dest", type=click.Path(file_okay=False))
@click.option("--format", "fmt", type=click.Choice(FORMATS), default=None,
              help="mlebench (competition folders), harbor (Harbor task folders: instruction.md, task.toml, "
                   "environment/, tests/, solution/) or sandmle (the paper's prepared/public + evaluator.py). "
                   "Without it, one env id writes one MLE-bench folder at DEST (as before); a selector, mlebench "
                   "folders under DEST.")
@click.option("--base-image", default=BASE_IMAGE, show_default=True,
              help="harbor: the image environment/Dockerfile builds on (the default is the one `sandmle sandbox "
                   "build-image` makes; any image with Python works, e.g. python:3.11-slim).")
@click.option("--reward", type=click.Choice(REWARDS), default="milestone", show_default=True,
              help="harbor: what tests/test.sh writes to /logs/verifier/reward.txt (the training reward, or the "
                   "metric's value); sandmle: the evaluator's reward when asked for one.")
@click.option("--agent-timeout", "agent_timeout_s", type=float, default=1200.0, show_default=True,
              help="harbor: [agent] timeout_sec (the episode budget of `train grpo` and `eval`).")
@click.option("--paper-compatible", is_flag=True,
              help="sandmle: put answer.csv in prepared/public/ where the paper's tools look (an agent can read it "
                   "there); by default it is in prepared/private/.")
@click.option("--force", is_flag=True, help="Replace DEST if it holds an earlier export.")
@json_option("the result")
@pass_ctx
def export(ctx: Context, selector: str, dest: str, fmt: str | None, base_image: str, reward: str,
           agent_timeout_s: float, paper_compatible: bool, force: bool, as_json: bool) -> None:
    """Export environments for other tools and trainers. SELECTOR as in `eval --envs`: env ids, split:NAME,
    seed:ID or all (comma-separated). Writes one task folder per environment and DEST/index.jsonl."""
    if fmt is None and "," not in selector and ctx.store.envs.find(selector) is not None:
        if paper_compatible:
            raise click.UsageError("--paper-compatible needs --format sandmle")
        _export_one(ctx, selector, dest, force, as_json)
        return
    opts = ExportOptions(fmt=fmt or "mlebench", base_image=base_image, reward=reward,
                         paper_compatible=paper_compatible, agent_timeout_s=agent_timeout_s)
    result = export_envs(ctx.store, selector, dest, opts, force=force)
    if as_json:
        emit_json(result.to_dict())
        return
    n = len(result.rows)
    click.echo(f"exported {n} environment{'s' if n != 1 else ''} as {result.fmt} to {result.dest} "
               f"(index: {result.dest / INDEX})")
    for row in result.rows:
        click.echo(f"  {row['id']}  {row['metric']} ({row['direction']} is better)")
    for warning in result.warnings:
        click.echo(f"warning: {warning}")


def _export_one(ctx: Context, env_id: str, dest: str, force: bool, as_json: bool) -> None:
    """One MLE-bench competition folder at DEST (config.yaml, description.md, prepared/, leaderboard.csv)."""
    folder = Path(dest)
    if folder.is_dir() and any(folder.iterdir()):
        if not force:
            raise click.UsageError(f"{dest} exists and is not empty; add --force to replace an earlier export")
        if not (folder / "config.yaml").is_file() or not (folder / "prepared").is_dir():
            raise click.UsageError(f"{dest} does not hold an export (no config.yaml and prepared/); not replacing it")
        shutil.rmtree(folder)
    path = export_env(ctx.store, env_id, dest)
    if as_json:
        emit_json({"id": env_id, "path": str(path)})
    else:
        click.echo(f"exported {env_id} to {path}")


@envs.command("import")
@click.argument("folder", type=click.Path(file_okay=False))
@click.option("--split", type=click.Choice(["train", "heldout"]), default="train", show_default=True,
              help="The split the imported environments join.")
@json_option("each task's outcome")
@pass_ctx
def import_(ctx: Context, folder: str, split: str, as_json: bool) -> None:
    """Import tasks in the SandMLE paper's layout (one task, or a folder of tasks: <task>/prepared/public/ with
    description.md, train.csv, test.csv, sample_submission.csv, evaluator.py, answer.csv). The answers move to
    private/, the paper's evaluator is run on probe submissions to find our metric, and each task is verified like
    a synthesized environment. One line per task; exit 1 when any task was bad or rejected."""
    outcomes = import_tasks(ctx.store, folder, split=split)
    if as_json:
        emit_json([o.to_dict() for o in outcomes])
    else:
        for outcome in outcomes:
            click.echo(outcome.line())
        counts = {s: sum(o.status == s for o in outcomes) for s in ("verified", "rejected", "bad")}
        click.echo(f"{counts['verified']} verified, {counts['rejected']} rejected, {counts['bad']} bad "
                   f"(of {len(outcomes)} tasks)")
    if any(o.status != "verified" for o in outcomes):
        sys.exit(1)


@envs.command("delete")
@click.argument("env_id")
@json_option("the result")
@pass_ctx
def delete(ctx: Context, env_id: str, as_json: bool) -> None:
    """Delete an environment: its row, files, leaderboard and folder."""
    row = delete_env(ctx.store, env_id)
    if as_json:
        emit_json({"id": env_id, "deleted": True, "dir": row.get("dir")})
    else:
        click.echo(f"deleted {env_id}")


@envs.command("audit")
@click.argument("selector", required=False)
@click.option("--reject", is_flag=True, help="Mark each environment with a finding rejected (files and rows stay).")
@sandbox_options()
@json_option("every environment's audit")
@pass_ctx
def audit(ctx: Context, selector: str | None, reject: bool, sandbox_backend: str | None, isolation: str | None,
          memory_mb: int | None, max_procs: int | None, timeout_s: float | None, as_json: bool) -> None:
    """Rerun the exploit audit (and the verifier's leakage probes) on stored environments, with the lookup probe:
    agent code in the sandbox searching every dataset it can read for the test rows. One line per environment
    (what the probe read and found) and per finding; exit 1 when any is found. SELECTOR as in `eval --envs` (env
    ids, split:NAME, seed:ID, all, real; default: every verified environment)."""
    settings = load_settings().sandbox.override(backend=sandbox_backend, isolation=isolation, memory_mb=memory_mb,
                                                max_procs=max_procs, timeout_s=timeout_s)
    ids = stored_ids(ctx.store, selector)
    with get_backend(store=ctx.store, settings=settings) as box:  # one line when it cannot start
        results = []
        for env_id in ids:
            results.append(audit_stored(ctx.store, env_id, reject=reject, sandbox=box))
            if not as_json:
                click.echo(f"{env_id}: {results[-1].lookup_line}")
                for line in results[-1].lines:
                    click.echo(f"{env_id}: {line}")
    flagged = [r for r in results if r.lines]
    if as_json:
        emit_json([r.to_dict() for r in results])
    else:
        marked = sum(r.rejected for r in results)
        click.echo(f"audited {len(results)} environment{'s' if len(results) != 1 else ''}: "
                   f"{len(flagged)} with findings ({sum(len(r.lines) for r in flagged)} in all)"
                   + (f", {marked} marked rejected" if reject else ""))
    if flagged:
        sys.exit(1)


@envs.command("reboard")
@click.argument("selector", required=False)
@json_option("what was done to each environment")
@pass_ctx
def reboard(ctx: Context, selector: str | None, as_json: bool) -> None:
    """Rebuild stored environments' leaderboards as population boards (distinct independent reference solutions
    run in the sandbox), in place: medals and the rank then mean "better than k of N independent solutions".
    SELECTOR as in `eval --envs` (env ids, split:NAME, seed:ID, all, real); default: every verified environment
    whose board is not one already or was built by an older population, population-1, which counted copies
    (`sandmle doctor --deep` lists them). The verification report and provenance stay; a board
    that would not be a fit yardstick (tiers that tie, a constant reaching a medal, a file that reaches bronze) is
    refused and the old one kept. Exit 1 when any is refused."""
    ids = stored_ids(ctx.store, selector)
    if selector is None:
        ids = [i for i in ids if needs_reboard(ctx.store, i)]
    box = get_backend(store=ctx.store, settings=with_solution_imports(load_settings().sandbox))
    results = []
    try:
        with progress(len(ids), "reboard") as bar:
            for env_id in ids:
                results.append(reboard_stored(ctx.store, env_id, sandbox=box))
                bar.update(1)
    finally:
        box.close()
    refused = [r for r in results if r.status == "refused"]
    if as_json:
        emit_json([r.to_dict() for r in results])
    else:
        for r in results:
            click.echo(r.line())
        click.echo(f"reboarded {sum(r.status == 'rebuilt' for r in results)} of {len(results)} environment"
                   f"{'s' if len(results) != 1 else ''}" + (f", {len(refused)} refused (old board kept)"
                                                            if refused else ""))
    if refused:
        sys.exit(1)


@envs.command("real-suite")
@click.option("--out", type=click.Path(file_okay=False), help="Where the competition folders go (default: "
              "<data dir>/real-suite).")
@click.option("--only", help="Only these datasets (comma-separated: sklearn:wine, Pima.te, real-islr-oj …).")
@click.option("--retired", is_flag=True, help="Let --only name a dataset retired from the suite, to measure it "
              "again (never stored).")
@json_option("every task: dataset, rows, board, thresholds, tiers_distinct, entries, constant_score vs bronze, "
             "determining_columns_dropped, duplicates_removed, error")
@pass_ctx
def real_suite(ctx: Context, out: str | None, only: str | None, retired: bool, as_json: bool) -> None:
    """Build the real held-out suite, offline: every dataset of engine/realdata/heldout.toml (shipped with the
    package) as an MLE-bench competition at its own size (public/ train, test, sample submission, a description
    from the dataset's own documentation; private/ answers), each with its population board (built once in the
    sandbox, cached) and the exploit audit, stored in the split real (evaluation only). A rerun reuses every board.
    A column that determines a class target is left out, no test row repeats a training row's features, and a task
    is stored only if it discriminates: three distinct tiers, at least 40 distinct board entries, no medal for the
    best constant submission; otherwise it is refused with the reason.
    Needs the data extra: pip install 'sandmle[data]'. Exit 1 when a task is refused."""
    suite = build_suite(ctx.store, out=out, only=only, note=note, retired=retired)
    if as_json:
        emit_json(suite.to_dict())
    else:
        for task in suite.tasks:
            click.echo(task.line())
        click.echo(f"{len(suite.stored)} of {len(suite.tasks)} tasks stored in split real (folders in {suite.out})"
                   + ("" if only or len(suite.stored) >= MIN_TASKS else f"; fewer than {MIN_TASKS}"))
    if len(suite.stored) < len(suite.tasks):
        sys.exit(1)
