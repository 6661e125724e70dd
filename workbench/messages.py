"""Messages the workbench's screens and widgets post to each other (dataclasses, one place)."""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message


@dataclass
class JobStarted(Message):
    """A background job (a ``sandmle`` child process) was launched."""

    run_id: str
    label: str


@dataclass
class JobFinished(Message):
    """A background job ended (``done``, ``failed`` or ``stopped``)."""

    run_id: str
    status: str


@dataclass
class LogLoaded(Message):
    """The log viewer finished indexing a file."""

    path: str
    lines: int


@dataclass
class SearchDone(Message):
    """A search in the log viewer ended: the matching line, or None."""

    query: str
    line: int | None
