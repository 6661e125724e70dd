"""The one entry point of ``sandmle``: the console script (pyproject ``[project.scripts]``), ``python -m workbench``
and ``make run`` all call :func:`main`. It is the CLI, which opens the workbench (the TUI) when no command is
given. The TUI (Textual and the screens) is imported only then: a headless subcommand does not pay for it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .cli.main import main as cli_main

if TYPE_CHECKING:
    from store import Store


def open_workbench(store: "Store") -> None:
    """Open the workbench on ``store`` (imports the app on first use)."""
    from .app import run_app

    run_app(store)


def main(argv: list[str] | None = None) -> None:
    cli_main(argv, open_workbench=open_workbench)
