"""The one entry point of ``sandmle``: the console script (pyproject ``[project.scripts]``), ``python -m workbench``
and ``make run`` all call :func:`main`. It is the CLI, which opens the workbench (the TUI) when no command is
given."""

from __future__ import annotations

from .app import run_app
from .cli.main import main as cli_main


def main(argv: list[str] | None = None) -> None:
    cli_main(argv, open_workbench=run_app)
