"""Folders that come in and environments that leave hold regular files and folders only.

A symbolic link in an MLE-bench competition's ``public/`` (to a host file, or to another environment's answers) would
become a file agents can read and one that exports carry; a device file, a FIFO or a socket is no data at all (a
read of a FIFO blocks forever). Every incoming tree — seed folders, MLE-bench competitions, the paper's tasks,
environment folders given to eval — and every environment an export writes is walked with ``lstat`` first (nothing
is followed), and the first such entry refuses the whole folder, naming its path, before anything is copied or
stored. (What a generator program writes comes out of its sandbox through ``Workspace.copy_out``, which takes
regular files only.) The folder the user names is taken as given: a link to it is theirs to make.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ..errors import UnsafeTree

#: what each refused kind of entry is called in the message
KINDS = ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
         (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"))


def _kind(mode: int) -> str | None:
    for test, name in KINDS:
        if test(mode):
            return name
    return None if stat.S_ISREG(mode) or stat.S_ISDIR(mode) else "not a regular file"


def special_entries(root: str | Path) -> list[tuple[Path, str]]:
    """Every entry under ``root`` that is not a regular file or a folder, with what it is (sorted by path); links
    are never followed, so a linked folder is one entry, not its contents."""
    root = Path(root)
    found: list[tuple[Path, str]] = []
    todo = [root]
    while todo:
        folder = todo.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError as exc:
            raise UnsafeTree(f"{folder}: cannot be read ({exc.strerror or exc})") from None
        for entry in entries:
            mode = entry.stat(follow_symlinks=False).st_mode
            kind = _kind(mode)
            if kind is not None:
                path = Path(entry.path)
                if stat.S_ISLNK(mode):
                    kind += f" (to {os.readlink(path)})"
                found.append((path, kind))
            elif stat.S_ISDIR(mode):
                todo.append(Path(entry.path))
    return sorted(found)


def require_plain_tree(root: str | Path, what: str) -> None:
    """Raise :class:`UnsafeTree` naming the first entry under ``root`` that is a link, a device, a FIFO or a
    socket; ``what`` says what the folder is ("an MLE-bench competition folder")."""
    found = special_entries(root)
    if found:
        path, kind = found[0]
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise UnsafeTree(f"{path}: {kind} in {what} {root}{more}: refused, nothing was copied or stored",
                         hint="put the real file there: links, device files, FIFOs and sockets never come in or "
                              "go out")
