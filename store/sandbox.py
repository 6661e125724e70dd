"""Sandbox runs: every execution of untrusted code, with limits, timings, status and log path."""

from __future__ import annotations

from typing import Mapping, Sequence, TypedDict, cast

from . import owners
from ._repo import KeyedRepo, Params
from .common import JSON, dumps, now


class SandboxRunRow(TypedDict):
    """A row of ``sandbox_runs``: one command or snippet run in a sandbox (JSON columns decoded)."""

    id: str
    env_id: str | None
    run_id: str | None
    trajectory_id: str | None
    backend: str
    executor: str | None
    command: str
    status: str  #: running | ok | error | timeout | memory | killed | output_limit | dead
    exit_code: int | None
    limits: dict[str, JSON]
    isolation: dict[str, JSON]
    warnings: list[str]
    wall_s: float | None
    cpu_s: float | None
    peak_rss_mb: float | None
    stdout_tail: str | None
    stderr_tail: str | None
    log_path: str | None
    workdir: str | None
    started_at: str
    ended_at: str | None
    pid: int | None
    pid_start: str | None
    host: str | None


#: several rows (an alias: inside the class, ``list`` names its ``list`` method)
SandboxRunRows = list[SandboxRunRow]


class SandboxRuns(KeyedRepo[SandboxRunRow]):
    table = "sandbox_runs"
    json_fields = ("limits", "isolation", "warnings")
    noun = "sandbox run"
    listing = "sandmle sandbox runs list"
    by_prefix = True

    def start(self, run: Mapping[str, object]) -> str:
        """Record a run that starts now, owned by this process (pid, start time, host)."""
        row = self._encode({**owners.owner(), **run})
        row.setdefault("started_at", now())
        row.setdefault("status", "running")
        with self.store.transaction() as db:
            db.table("sandbox_runs").insert(row, pk="id")
        return str(run["id"])

    def finish(self, run_id: str, **fields: object) -> None:
        row = self._encode(fields)
        row.setdefault("ended_at", now())
        with self.store.transaction() as db:
            db.table("sandbox_runs").update(run_id, row)

    def mark_dead(self, rows: Sequence[SandboxRunRow] | None = None) -> list[str]:
        """Mark ``running`` runs whose process is gone (killed before it could record the end) as ``dead``;
        returns their ids. ``rows`` limits the check to those rows."""
        dead = self.stuck() if rows is None else [r for r in rows if r["status"] == "running" and owners.gone(r)]
        stamp = now()
        with self.store.transaction() as db:
            for r in dead:
                note = f"its process (pid {r['pid']}) ended before the run did (killed?)"
                db.conn.execute("UPDATE sandbox_runs SET status = 'dead', ended_at = ?, warnings = ? "
                                "WHERE id = ? AND status = 'running'", (stamp, dumps([*(r["warnings"] or []), note]),
                                                                        r["id"]))
        return [r["id"] for r in dead]

    def list(
        self, *, status: str | None = None, env_id: str | None = None, run_id: str | None = None,
        text: str | None = None, limit: int | None = 200, offset: int = 0,
    ) -> SandboxRunRows:
        """Newest first; ``text`` matches part of the id, run id, environment id or command."""
        where, params = self._where(status=status, env_id=env_id, run_id=run_id, text=text)
        sql = "SELECT * FROM sandbox_runs" + where + " ORDER BY started_at DESC, id"
        if limit is not None:
            sql += f" LIMIT {int(limit)} OFFSET {int(offset)}"
        return cast(SandboxRunRows, self._decode_all(self.store.query(sql, params)))

    def count(self, *, status: str | None = None, env_id: str | None = None, run_id: str | None = None,
              text: str | None = None) -> int:
        if status is None and env_id is None and run_id is None and not text:
            return self.store.db.table("sandbox_runs").count
        where, params = self._where(status=status, env_id=env_id, run_id=run_id, text=text)
        return int(self.store.query("SELECT COUNT(*) AS n FROM sandbox_runs" + where, params)[0]["n"])

    @staticmethod
    def _where(*, status: str | None = None, env_id: str | None = None, run_id: str | None = None,
               text: str | None = None) -> tuple[str, Params]:
        where: list[str] = []
        params: list[str] = []
        for col, val in (("status", status), ("env_id", env_id), ("run_id", run_id)):
            if val is not None:
                where.append(f"{col} = ?")
                params.append(val)
        if text:
            where.append("(id LIKE ? OR run_id LIKE ? OR env_id LIKE ? OR command LIKE ?)")
            params += [f"%{text}%"] * 4
        return (" WHERE " + " AND ".join(where) if where else ""), tuple(params)
