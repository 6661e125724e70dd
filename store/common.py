"""What every part of the store shares: timestamps, JSON columns, file hashes, and fsyncs for the files the
store records (so a power cut cannot leave a row pointing at a folder that never reached the disk)."""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
from pathlib import Path
from typing import Any


def now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds")


def dumps(value: object) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def loads(text: str | None, default: Any = None) -> Any:
    if text is None or text == "":
        return default
    return json.loads(text)


def sha256_file(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def fsync_dir(path: Path) -> None:
    """Make a rename in ``path`` durable (a directory's entries reach the disk only when it is synced)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_folder(folder: Path) -> None:
    """Put a folder written in place on the disk before the store records it: every file under it, every folder's
    entries, and the folder's own entry in its parent."""
    folder = Path(folder)
    for root, _dirs, files in os.walk(folder):
        for name in files:
            with open(Path(root) / name, "rb") as fh:
                os.fsync(fh.fileno())
        fsync_dir(Path(root))
    fsync_dir(folder.parent)


def mkdir_synced(path: Path) -> None:
    """``mkdir -p`` whose new folders' entries reach the disk (a power cut cannot take back a folder made here)."""
    path = Path(path)
    missing = []
    while not path.exists():
        missing.append(path)
        path = path.parent
    for new in reversed(missing):
        new.mkdir(exist_ok=True)
        fsync_dir(new.parent)


#: a value that round-trips through a JSON column
JSON = str | int | float | bool | None | list["JSON"] | dict[str, "JSON"]
