"""Who owns a row that says ``running``: the process id, its start time (so that a reused pid does not pass for
the owner) and the host. A row whose owner is gone was left by a process killed before it could close it."""

from __future__ import annotations

import os
import socket
from typing import Mapping


def start_time(pid: int) -> str | None:
    """The process's start time (clock ticks since boot, from /proc), or None when there is no such process
    (or no /proc to read it from)."""
    try:
        with open(f"/proc/{int(pid)}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError, ValueError):
        return None
    if fields[0] in ("Z", "X"):  # a zombie has ended; only its exit status is left
        return None
    return fields[19]


def owner() -> dict[str, int | str | None]:
    """This process as the owner of a row: ``pid``, ``pid_start``, ``host``."""
    pid = os.getpid()
    return {"pid": pid, "pid_start": start_time(pid), "host": socket.gethostname()}


def gone(row: Mapping[str, object]) -> bool:
    """True when the row's owner process has ended. Only processes of this host are judged (another host's are
    never called gone), and a row with no pid recorded is not judged either."""
    pid = row.get("pid")
    if not isinstance(pid, int) or not pid or row.get("host") != socket.gethostname():
        return False
    if os.path.isdir("/proc"):
        started = start_time(pid)
        return started is None or (row.get("pid_start") is not None and started != row["pid_start"])
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def tag() -> str:
    """This process as one line for an ``.owner`` file beside what it makes (``pid start host``)."""
    me = owner()
    return f"{me['pid']} {me['pid_start'] or '?'} {me['host']}"


def tag_gone(text: str | None) -> bool:
    """True when an owner line (see :func:`tag`; ``pid start`` without a host is read as this host) names a
    process that has ended. An unreadable line is never judged gone."""
    parts = (text or "").split()
    if len(parts) < 2 or not parts[0].isdigit():
        return False
    host = parts[2] if len(parts) > 2 else socket.gethostname()
    return gone({"pid": int(parts[0]), "pid_start": None if parts[1] == "?" else parts[1], "host": host})
