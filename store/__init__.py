"""SandMLE's SQLite store (sqlite-utils). Imports neither ``engine`` nor ``workbench``."""

from .db import Store, open_store, sha256_file
from .errors import NotFound, StoreError
from .paths import data_dir, db_path

__all__ = ["Store", "StoreError", "NotFound", "open_store", "sha256_file", "data_dir", "db_path"]
