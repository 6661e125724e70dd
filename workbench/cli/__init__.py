"""The ``sandmle`` command: the TUI by default, headless subcommands for every job."""

from .main import cli, main

__all__ = ["cli", "main"]
