"""SandMLE's SQLite store (sqlite-utils). Imports neither ``engine`` nor ``workbench``."""

from .common import fsync_dir, fsync_folder, mkdir_synced, sha256_file
from .db import Store
from .errors import NotFound, StoreError
from .paths import data_dir, db_path

__all__ = ["Store", "StoreError", "NotFound", "sha256_file", "fsync_dir", "fsync_folder", "mkdir_synced", "data_dir",
           "db_path"]
