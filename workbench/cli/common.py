"""Helpers shared by the subcommands: the store, JSON output, tables, one-line errors."""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from typing import Any, Iterable, Sequence

import click

from engine.backends import EXECUTORS
from engine.config import load_settings
from engine.upkeep import open_store


#: set by the workbench for its jobs: the id of the run row it made for the command (see ``store.runs.adopt``)
JOB_ID_VARIABLE = "SANDMLE_JOB_ID"


class Context:
    def __init__(self, debug: bool = False, argv: list[str] | None = None):
        self.debug = debug
        #: the command line this command was started with (a command that relaunches itself runs it again)
        self.argv = list(argv or [])
        #: clear what killed processes left when the store opens (``doctor --deep`` looks at it first)
        self.clear_leftovers = True
        self._store = None

    @property
    def store(self):
        """The store, opened as every command opens it (see :func:`engine.upkeep.open_store`), once the settings
        are known to be valid (a bad config is one line and exit 2 for every command)."""
        if self._store is None:
            load_settings()
            self._store = open_store(clear_leftovers=self.clear_leftovers)
            # a workbench job made its run row in advance: the run this command creates takes it over, and
            # commands this one starts do not (the variable leaves the environment here)
            self._store.runs.adopt_id = os.environ.pop(JOB_ID_VARIABLE, None)
        return self._store

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None


pass_ctx = click.make_pass_decorator(Context, ensure=True)


def emit_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, sort_keys=False, default=str))


#: a duration in seconds given on the command line: more than 0 (0 or less is a usage error)
POSITIVE_S = click.FloatRange(min=0, min_open=True)

#: the width tables fit when stdout is not a terminal (pipes, logs, an 80x24 SSH session)
TABLE_WIDTH = 80

def json_option(what: str = "", *, detail: str = "") -> Any:
    """``--json`` (as ``as_json``): "Print WHAT as JSON (DETAIL)." — the one way a command offers JSON output."""
    shown = f"Print {what} as JSON" if what else "Print as JSON"
    return click.option("--json", "as_json", is_flag=True, help=shown + (f" ({detail})." if detail else "."))


wide_option = click.option("--wide", is_flag=True, help="Show every column in full (tables fit 80 columns by default).")


class NameChoice(click.Choice):
    """A choice among the names of a registry (an executor, a scaffold, ...), read when the command runs: an entry
    added to the registry is a choice at once. ``extra`` names come first (``sandbox run``'s ``inline``)."""

    def __init__(self, names: Iterable[str], *, extra: Sequence[str] = ()):
        super().__init__((), case_sensitive=True)
        self._names, self._extra = names, tuple(extra)

    @property  # type: ignore[override]
    def choices(self) -> tuple[str, ...]:
        return (*self._extra, *self._names)

    @choices.setter
    def choices(self, value: Any) -> None:  # click.Choice.__init__ assigns it; the registry is the source
        pass


def executor_options(fn: Any) -> Any:
    """``--executor`` (one of :data:`engine.backends.EXECUTORS`) and ``--address`` (defaults: ``[executor]`` of the
    settings)."""
    fn = click.option("--address", help="Address of an existing Ray cluster (with --executor ray; default: "
                                        "[executor] ray_address, else a local Ray started on demand).")(fn)
    return click.option("--executor", type=NameChoice(EXECUTORS),
                        help=f"Who runs the work: {EXECUTORS.described()} (default: [executor] kind).")(fn)


def note(line: str) -> None:
    """One line of what is happening on stderr (long work about to start): stdout stays the result."""
    click.echo(line, err=True)


def warn(line: str) -> None:
    """One warning line on stderr (a worker that died, a skipped item): the command goes on."""
    click.echo(f"warning: {line}", err=True)


def _table_width() -> int:
    if sys.stdout.isatty():
        return max(40, shutil.get_terminal_size((TABLE_WIDTH, 24)).columns)
    return TABLE_WIDTH


def clip(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters, ending with … when something was cut."""
    return text if len(text) <= width else text[:max(0, width - 1)] + "…"


def fit_widths(widths: list[int], limit: int, keep: Sequence[int] = (0,)) -> list[int]:
    """Column widths whose sum (plus two spaces between columns) fits ``limit``. The widest column not in
    ``keep`` loses one character at a time: first down to 12 characters, then (only if still too wide) to 4."""
    widths = list(widths)
    for floor in (12, 4):
        floors = [w if i in keep else min(w, floor) for i, w in enumerate(widths)]
        while sum(widths) + 2 * (len(widths) - 1) > limit:
            candidates = [i for i in range(len(widths)) if widths[i] > floors[i]]
            if not candidates:
                break
            widths[max(candidates, key=lambda i: widths[i])] -= 1
    return widths


def table(rows: Sequence[Sequence[Any]], headers: Sequence[str], *, wide: bool = False,
          keep: Sequence[int] = (0,)) -> None:
    """Print a plain aligned table (no colours: it must read well over SSH and in logs). It fits the terminal
    (80 columns when stdout is not one): long cells end with …, except in the columns of ``keep`` (ids);
    ``wide`` prints every cell in full."""
    cells = [[str(h) for h in headers]] + [
        ["" if c is None else " ".join(str(c).split("\n")) for c in r] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    if not wide:
        widths = fit_widths(widths, _table_width(), keep)
    for n, row in enumerate(cells):
        click.echo("  ".join(clip(c, w).ljust(w) for c, w in zip(row, widths)).rstrip())
        if n == 0:
            click.echo("  ".join("-" * w for w in widths))


class LineProgress:
    """Progress for a stderr that is not a terminal (a log file, a pipe, a workbench job): one plain line at the
    start, then one at most every ``every_s`` seconds, and one at the end, instead of a bar redrawn with \\r."""

    def __init__(self, length: int, label: str, item_show_func: Any = None, every_s: float = 10.0):
        self.length, self.label, self.item_show_func, self.every_s = length, label, item_show_func, every_s
        self.pos = 0
        self._start = self._last = time.monotonic()
        self._last_pos = -1
        self._item: Any = None

    def __enter__(self) -> "LineProgress":
        self._print()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._last_pos != self.pos:
            self._print()

    def update(self, n_steps: int, current_item: Any = None) -> None:
        self.pos += n_steps
        if current_item is not None:
            self._item = current_item
        if n_steps and (self.pos >= self.length or time.monotonic() - self._last >= self.every_s):
            self._print()

    def _print(self) -> None:
        self._last, self._last_pos = time.monotonic(), self.pos
        elapsed = self._last - self._start
        line = f"{self.label}: {self.pos}/{self.length}"
        if self.length:
            line += f" ({100 * self.pos // self.length}%)"
        line += f" · {elapsed:.0f}s"
        if 0 < self.pos < self.length:
            line += f" · eta {elapsed / self.pos * (self.length - self.pos):.0f}s"
        shown = self.item_show_func(self._item) if self.item_show_func and self._item is not None else None
        if shown:
            line += f" · {shown}"
        click.echo(line, err=True)


def progress(length: int, label: str = "", **options: Any) -> Any:
    """The one progress of the CLI, on stderr (stdout stays clean for --json): a bar with position and ETA on a
    terminal, plain progress lines elsewhere (logs, pipes, workbench jobs)."""
    if not sys.stderr.isatty():
        return LineProgress(length, label, item_show_func=options.get("item_show_func"))
    return click.progressbar(length=length, label=label, file=sys.stderr, show_pos=True, show_eta=True, **options)
