"""The SQLite store: one file, WAL, foreign keys, numbered migrations, one transaction per unit of work.

Every connection commits with ``synchronous=FULL``: a committed transaction survives a power cut, not only a
killed process (docs/data.md, "Durability", says why and what it costs).

Only this package writes SQL. The engine and the workbench use the repositories hanging off
:class:`Store` (``store.seeds``, ``store.envs``, ``store.sandbox``, ``store.runs``, ``store.trajectories``).
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from pathlib import Path
from typing import Iterator, Sequence

import sqlite_utils

from . import paths
from ._repo import Params, Rows
from .common import now
from .envs import Environments
from .errors import StoreError, store_failure
from .migrations import LATEST, MIGRATIONS
from .runs import Runs
from .sandbox import SandboxRuns
from .seeds import Seeds
from .trajectories import Trajectories


class Store:
    """A handle on the SQLite store. Thread-safe: writes are serialised with a lock and
    ``BEGIN IMMEDIATE`` plus a busy timeout, so concurrent processes wait instead of failing.

    Opening it marks the runs and sandbox runs whose process is gone (killed) as ``dead``: ``recovered`` lists
    them. A store that cannot be used (read-only or full disk, missing folder) raises one :class:`StoreError`
    naming the file and the cause, at open or at the write that fails."""

    def __init__(self, path: str | Path | None = None, *, busy_timeout_s: float = 60.0, recover: bool = True):
        if path is None:
            path = paths.db_path()
        self.path = Path(path) if str(path) != ":memory:" else Path(":memory:")
        if str(self.path) != ":memory:":
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(f"cannot create the data dir {self.path.parent}: {exc.strerror}") from exc
        self._lock = threading.RLock()
        with self._sql_errors("open"):
            conn = sqlite3.connect(
                str(self.path), timeout=busy_timeout_s, check_same_thread=False, isolation_level=None
            )
            self.db = sqlite_utils.Database(conn)
            conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
            if str(self.path) != ":memory:":
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute("PRAGMA synchronous = FULL")
            #: True when this open created the schema (a fresh store)
            self.created = self.schema_version() == 0
            self.migrate()  # before foreign keys: a migration may rebuild a table that others reference
            conn.execute("PRAGMA foreign_keys = ON")


        self.seeds = Seeds(self)
        self.envs = Environments(self)
        self.sandbox = SandboxRuns(self)
        self.runs = Runs(self)
        self.trajectories = Trajectories(self)
        #: ids of the rows this open found running with their process gone, now ``dead`` (unless ``recover`` is
        #: False: ``doctor --deep`` looks at them first)
        self.recovered: dict[str, Sequence[str]] = (
            {"runs": self.runs.mark_dead(), "sandbox_runs": self.sandbox.mark_dead()} if recover else {})

    # ------------------------------------------------------------------ plumbing
    @property
    def conn(self) -> sqlite3.Connection:
        return self.db.conn

    @property
    def data_dir(self) -> Path:
        """Folder for big artifacts that belong to this store (beside the DB file)."""
        if str(self.path) == ":memory:":
            return paths.data_dir()
        return self.path.parent

    @contextlib.contextmanager
    def _sql_errors(self, doing: str) -> Iterator[None]:
        """SQLite's operational errors (read-only, full, missing folder, locked) as one StoreError line."""
        try:
            yield
        except sqlite3.OperationalError as exc:
            raise store_failure(self.path, exc, doing) from exc

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite_utils.Database]:
        """One unit of work. Nested calls join the outer transaction (as savepoints)."""
        with self._lock:
            if self.conn.in_transaction:
                with self.db.atomic():
                    yield self.db
                return
            with self._sql_errors("write"):
                self.conn.execute("BEGIN IMMEDIATE")
                try:
                    yield self.db
                    self.conn.execute("COMMIT")
                except BaseException:
                    if self.conn.in_transaction:
                        self.conn.execute("ROLLBACK")
                    raise

    def query(self, sql: str, params: Params = ()) -> Rows:
        with self._lock, self._sql_errors("read"):
            cur = self.conn.execute(sql, params)
            cols = [c[0] for c in cur.description] if cur.description else []
            return [dict(zip(cols, row)) for row in cur.fetchall()]

    def execute(self, sql: str, params: Params = ()) -> int:
        """Run one write statement in its own transaction; returns rows changed."""
        with self.transaction():
            return self.conn.execute(sql, params).rowcount

    def close(self) -> None:
        with self._lock:
            self.conn.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ schema
    def schema_version(self) -> int:
        if "schema_version" not in self.db.table_names():
            return 0
        row = self.conn.execute("SELECT MAX(version) FROM schema_version").fetchone()
        return int(row[0] or 0)

    def migrate(self) -> int:
        with self.transaction():
            self.conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_version ("
                "version INTEGER PRIMARY KEY, description TEXT NOT NULL, applied_at TEXT NOT NULL)"
            )
            current = self.schema_version()
            if current > LATEST:
                raise StoreError(
                    f"the store {self.path} has schema version {current}, newer than this sandmle "
                    f"({LATEST}); upgrade sandmle or point SANDMLE_HOME elsewhere"
                )
            for version, description, statements in MIGRATIONS:
                if version <= current:
                    continue
                for sql in statements:
                    self.conn.execute(sql)
                self.conn.execute(
                    "INSERT INTO schema_version (version, description, applied_at) VALUES (?, ?, ?)",
                    (version, description, now()),
                )
        return self.schema_version()

    def integrity_check(self) -> str:
        return self.conn.execute("PRAGMA integrity_check").fetchone()[0]

    def foreign_key_problems(self) -> list[tuple[str, int, str]]:
        """(table, rowid, parent table) of every row that points at a missing row (``PRAGMA foreign_key_check``)."""
        return [(r["table"], r["rowid"], r["parent"]) for r in self.query("PRAGMA foreign_key_check")]

    def data_version(self) -> int:
        """A number that changes whenever another connection commits (``PRAGMA data_version``): cheap polling."""
        return int(self.query("PRAGMA data_version")[0]["data_version"])

    def counts(self) -> dict[str, int]:
        names = ["seeds", "environments", "sandbox_runs", "runs", "trajectories", "checkpoints", "eval_results"]
        return {n: self.db[n].count for n in names}
