"""SandMLE's SQLite store (sqlite-utils). Imports neither ``engine`` nor ``workbench``."""

from .common import sha256_file
from .db import Store
from .errors import NotFound, StoreError
from .paths import data_dir, db_path

__all__ = ["Store", "StoreError", "NotFound", "sha256_file", "data_dir", "db_path"]
