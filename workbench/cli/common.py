"""Helpers shared by the subcommands: the store, JSON output, tables, one-line errors."""

from __future__ import annotations

import json
import sys
from typing import Any, Sequence

import click


class Context:
    def __init__(self, debug: bool = False):
        self.debug = debug
        self._store = None

    @property
    def store(self):
        if self._store is None:
            from store import Store

            self._store = Store()
        return self._store

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None


pass_ctx = click.make_pass_decorator(Context, ensure=True)


def emit_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, sort_keys=False, default=str))


def table(rows: Sequence[Sequence[Any]], headers: Sequence[str]) -> None:
    """Print a plain aligned table (no colours: it must read well over SSH and in logs)."""
    cells = [[str(h) for h in headers]] + [["" if c is None else str(c) for c in r] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    for n, row in enumerate(cells):
        click.echo("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
        if n == 0:
            click.echo("  ".join("-" * w for w in widths))


def fail(message: str, code: int = 1) -> None:
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


def progress(length: int, label: str = "", **options: Any) -> Any:
    """The one progress bar of the CLI: on stderr (stdout stays clean for --json), with position and ETA."""
    return click.progressbar(length=length, label=label, file=sys.stderr, show_pos=True, show_eta=True, **options)
