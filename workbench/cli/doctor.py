from __future__ import annotations

import click

from .common import Context, emit_json, pass_ctx


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the checks as JSON.")
@pass_ctx
def doctor(ctx: Context, as_json: bool) -> None:
    """Check Python, torch (CPU/CUDA), the data dir, the store schema, sandbox isolation and optional backends."""
    from engine.doctor import run_checks

    config = _config_check()
    checks = [config, *run_checks(ctx.store)]
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
    if not config.ok:
        raise SystemExit(2)  # a bad config is a usage error, as for every other command
    if any(not c.ok and not c.optional for c in checks):
        raise SystemExit(1)


def _config_check():
    """The settings file (and SANDMLE_* variables) validated as every command does."""
    from engine.config import config_path, load_settings
    from engine.doctor import Check
    from engine.errors import ConfigError

    try:
        load_settings()
    except ConfigError as exc:
        return Check("config", False, str(exc), "fix the key, or point SANDMLE_CONFIG at a valid file")
    path = config_path()
    return Check("config", True, f"{path}" + ("" if path.is_file() else " (absent: defaults)"))
