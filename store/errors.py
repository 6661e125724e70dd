"""The store's errors, and the one line that says why the store cannot be used (read-only, full, missing)."""

from __future__ import annotations

import os
from pathlib import Path


class StoreError(Exception):
    """A problem with the store a user can act on (bad path, newer schema, missing row)."""


class NotFound(StoreError):
    pass


def why_unusable(folder: Path) -> str | None:
    """What about ``folder`` stops the store from being written, in words; None when nothing is visibly wrong."""
    if not folder.is_dir():
        return f"the folder {folder} does not exist"
    try:
        fs = os.statvfs(folder)
    except OSError as exc:
        return f"{folder}: {exc.strerror}"
    if fs.f_flag & os.ST_RDONLY:
        return f"{folder} is on a read-only file system"
    if not os.access(folder, os.W_OK):
        return f"{folder} is not writable"
    if fs.f_bavail * fs.f_frsize < 1024 * 1024:
        return f"no space left on the device of {folder}"
    return None


def store_failure(path: Path, exc: Exception, doing: str = "use") -> StoreError:
    """A :class:`StoreError` naming the store file and the cause (the folder's condition where it explains the
    SQLite error, else SQLite's own words)."""
    cause = why_unusable(path.parent) or str(exc)
    return StoreError(f"cannot {doing} the store {path}: {cause}")
