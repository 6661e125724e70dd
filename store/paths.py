"""Where SandMLE keeps its data: ``SANDMLE_HOME`` or the platform's user data dir."""

from __future__ import annotations

import os
from pathlib import Path

from platformdirs import user_data_dir

from .errors import StoreError

DB_NAME = "sandmle.db"


def data_dir() -> Path:
    """The data dir (created on first use): ``$SANDMLE_HOME`` if set, else the user data dir."""
    home = os.environ.get("SANDMLE_HOME")
    if home:
        path = Path(home).expanduser()
    else:
        path = Path(user_data_dir("sandmle", appauthor=False))
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"cannot create the data dir {path}: {exc.strerror}") from None
    return path.resolve()


def db_path() -> Path:
    return data_dir() / DB_NAME
