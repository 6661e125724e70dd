"""The one entry point of ``sandmle``: the console script (pyproject ``[project.scripts]``), ``python -m workbench``
and ``make run`` all call :func:`main`. It is the CLI, which opens the workbench (the TUI) when no command is
given."""

from __future__ import annotations

from store import Store

from .cli.main import main as cli_main


def open_workbench(store: Store) -> None:
    """``sandmle`` with no command: the Textual app on the store."""
    from .app import run_app  # lazy: textual and every screen load only when the workbench opens, not for `--help`

    run_app(store)


def main(argv: list[str] | None = None) -> None:
    cli_main(argv, open_workbench=open_workbench)
