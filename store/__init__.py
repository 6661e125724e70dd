"""SandMLE's SQLite store (sqlite-utils). Imports neither ``engine`` nor ``workbench``."""

from .common import sha256_file
from .db import Store, open_store
from .errors import NotFound, StoreError
from .paths import data_dir, db_path

__all__ = ["Store", "StoreError", "NotFound", "open_store", "sha256_file", "data_dir", "db_path"]
