from __future__ import annotations

import click

from .common import Context, emit_json, pass_ctx


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the checks as JSON.")
@pass_ctx
def doctor(ctx: Context, as_json: bool) -> None:
    """Check Python, torch (CPU/CUDA), the data dir, the store schema, sandbox isolation and optional backends."""
    from engine.doctor import run_checks

    checks = run_checks(ctx.store)
    if as_json:
        emit_json([c.to_dict() for c in checks])
    else:
        width = max(len(c.name) for c in checks)
        for c in checks:
            mark = "ok  " if c.ok else ("--  " if c.optional else "FAIL")
            line = f"{mark} {c.name.ljust(width)}  {c.detail}"
            if not c.ok and c.fix:
                line += f"  → {c.fix}"
            click.echo(line)
    if any(not c.ok and not c.optional for c in checks):
        raise SystemExit(1)
