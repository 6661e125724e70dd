"""The ``sandmle`` command group. Every subcommand group lives in its own module; with no command it opens what
:func:`main` is given (:mod:`workbench.main` passes the TUI, so this package never imports the app)."""

from __future__ import annotations

import importlib
import os
import sys
from typing import Callable

import click

from engine.errors import SandmleError
from store import Store, StoreError

from .common import Context

#: subcommand name → "module:attribute" (loaded lazily so `sandmle --help` stays fast)
COMMANDS = {
    "seeds": "workbench.cli.seeds:seeds",
    "doctor": "workbench.cli.doctor:doctor",
    "bench": "workbench.cli.bench:bench",
    "sandbox": "workbench.cli.sandbox:sandbox",
    "train": "workbench.cli.train:train",
    "runs": "workbench.cli.runs:runs",
    "synth": "workbench.cli.synth:synth",
    "envs": "workbench.cli.envs:envs",
    "grade": "workbench.cli.grade:grade",
    "rollout": "workbench.cli.rollout:rollout",
    "eval": "workbench.cli.eval:eval_",
    "trajectories": "workbench.cli.trajectories:trajectories",
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        target = COMMANDS.get(name)
        if target is None:
            return None
        module, _, attr = target.partition(":")
        return getattr(importlib.import_module(module), attr)


@click.group(cls=LazyGroup, invoke_without_command=True,
             context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--debug", is_flag=True, help="Show full tracebacks instead of one-line errors.")
@click.version_option(package_name="sandmle", prog_name="sandmle")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """SandMLE Workbench: synthesize micro-scale MLE environments and train agents on them with RL.

    With no command, opens the workbench (a terminal UI; works over SSH).
    """
    open_workbench, argv = ctx.obj or (None, [])  # given by main(); no workbench: print the help
    ctx.obj = Context(debug=debug, argv=argv)
    ctx.call_on_close(ctx.obj.close)
    if ctx.invoked_subcommand is None:
        if open_workbench is None:
            click.echo(ctx.get_help())
        else:
            open_workbench(ctx.obj.store)


def main(argv: list[str] | None = None, *, open_workbench: Callable[[Store], None] | None = None) -> None:
    """Run the CLI; user errors become one line on stderr and a non-zero exit code. ``open_workbench`` is what
    ``sandmle`` with no command opens."""
    args = sys.argv[1:] if argv is None else argv
    debug = "--debug" in args
    try:
        cli.main(args=args, prog_name="sandmle", standalone_mode=False, obj=(open_workbench, list(args)))
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except (SandmleError, StoreError) as exc:
        if debug:
            raise
        click.echo(f"error: {exc}", err=True)
        sys.exit(getattr(exc, "exit_code", 1))
    except OSError as exc:  # a file under the data dir could not be written: read-only, full disk, gone
        if debug:
            raise
        where = exc.filename or f"the data dir {os.environ.get('SANDMLE_HOME') or '(default)'}"
        click.echo(f"error: {where}: {exc.strerror or exc}", err=True)
        sys.exit(1)
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(130)
