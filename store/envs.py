"""Environments: synthetic (or imported) tasks with their files, leaderboard and synthesis history."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Callable, Iterable, Mapping, Sequence, TypedDict, TypeVar, cast

from ._repo import KeyedRepo, Params
from .common import JSON, dumps, loads, now


class EnvironmentRow(TypedDict):
    """A row of ``environments`` (JSON columns decoded)."""

    id: str
    seed_id: str | None
    run_id: str | None
    title: str
    status: str  #: pending | verified | rejected
    reason: str | None
    split: str  #: train | heldout | imported | real
    modality: str
    task_type: str
    metric: str
    lower_is_better: int
    id_column: str
    target_columns: list[str]
    n_train: int | None
    n_test: int | None
    backend: str | None
    rng_seed: int | None
    blueprint: dict[str, JSON]
    scenario: dict[str, JSON]
    thresholds: dict[str, float] | None
    verification: dict[str, JSON]
    dir: str | None
    fingerprint: str | None
    created_at: str


class EnvFile(TypedDict):
    """A file of an environment: its path under the environment folder, role, hash and size."""

    env_id: str
    path: str
    role: str  #: public | private | generator | other
    sha256: str
    size: int


class LeaderboardEntry(TypedDict):
    id: int
    env_id: str
    name: str
    score: float
    rng_seed: int | None
    source: str  #: population | human | paper | import; reference | variant (the 9-entry board before populations)
    wall_s: float | None
    created_at: str
    family: str | None  #: a population entry's family (tree ensemble, linear, ...)
    params: str | None  #: a population entry's parameters and feature set (JSON)


class Attempt(TypedDict):
    """One call of a synthesis role: what it was asked, what it answered, the verdict, the tokens and cost."""

    id: int
    run_id: str | None
    seed_id: str | None
    env_id: str | None
    role: str
    attempt: int
    backend: str | None
    prompt: str | None
    output: str | None
    verdict: str  #: ok | retry | reject | refused
    feedback: str | None
    usage: dict[str, JSON]
    wall_s: float | None
    created_at: str


class AttemptUsage(TypedDict):
    """Who spent what: the role, environment and usage (tokens, cost) of an attempt that called an LLM."""

    role: str
    env_id: str | None
    usage: dict[str, JSON]


T = TypeVar("T")

#: lists of rows (aliases: inside the class, ``list`` names its ``list`` method)
EnvironmentRows = list[EnvironmentRow]
EnvFiles = list[EnvFile]
Leaderboard = list[LeaderboardEntry]
Attempts = list[Attempt]
AttemptUsages = list[AttemptUsage]
#: the columns given to store or update an environment (a subset of :class:`EnvironmentRow`'s)
Columns = Mapping[str, object]


class Environments(KeyedRepo[EnvironmentRow]):
    table = "environments"
    json_fields = ("target_columns", "blueprint", "scenario", "thresholds", "verification")
    noun = "environment"
    listing = "sandmle envs list"

    def add(
        self,
        env: Columns,
        *,
        files: Iterable[Columns] = (),
        leaderboard: Iterable[Columns] = (),
        replace: bool = False,
    ) -> str:
        """Store an environment with its files (path, role, sha256, size) and leaderboard entries
        (name, score, rng_seed, source, wall_s, family, params) in one transaction."""
        env_id = str(env["id"])
        row = self._encode(dict(env))
        row.setdefault("created_at", now())
        with self.store.transaction() as db:
            if replace:
                db.conn.execute("DELETE FROM environments WHERE id = ?", (env_id,))
            db.table("environments").insert(row, pk="id")
            file_rows = [{"env_id": env_id, **f} for f in files]
            if file_rows:
                db.table("env_files").insert_all(file_rows, pk=("env_id", "path"))
            lb_rows = [{"env_id": env_id, "created_at": row["created_at"], **e} for e in leaderboard]
            if lb_rows:
                db.table("leaderboard").insert_all(lb_rows)
        return env_id

    def reserve(self, base_id: str, row: Columns, folder: Path) -> str:
        """Claim the first free id of ``base_id``, ``base_id-2``, ``base_id-3``… with a ``pending`` row (``row``
        gives its other columns; ``dir`` becomes ``folder / id``). The id's uniqueness decides in one insert, so
        two processes never claim the same one; returns the id."""
        n = 1
        while True:
            env_id = base_id if n == 1 else f"{base_id}-{n}"
            try:
                with self.store.transaction() as db:
                    db.table("environments").insert(self._encode({**row, "id": env_id, "status": "pending",
                                                           "dir": str(folder / env_id), "created_at": now()}))
                return env_id
            except sqlite3.IntegrityError:
                if self.find(env_id) is None:  # not the id: a bad row
                    raise
                n += 1

    def list(
        self,
        *,
        seed_id: str | None = None,
        status: str | None = None,
        split: str | None = None,
        text: str | None = None,
        limit: int | None = None,
        offset: int = 0,
        ids: list[str] | None = None,
        since: str | None = None,
        exclude_split: str | None = None,
    ) -> EnvironmentRows:
        """Environments matching every filter given (``exclude_split``: any split but this one)."""
        where, params = self._where(seed_id=seed_id, status=status, split=split, text=text, ids=ids, since=since,
                                    exclude_split=exclude_split)
        sql = "SELECT * FROM environments" + where + " ORDER BY created_at, id"
        if limit is not None:
            sql += f" LIMIT {int(limit)} OFFSET {int(offset)}"
        return cast(EnvironmentRows, self._decode_all(self.store.query(sql, params)))

    def count(self, *, seed_id: str | None = None, status: str | None = None, split: str | None = None,
              text: str | None = None, ids: Sequence[str] | None = None, since: str | None = None,
              exclude_split: str | None = None) -> int:
        where, params = self._where(seed_id=seed_id, status=status, split=split, text=text, ids=ids, since=since,
                                    exclude_split=exclude_split)
        return int(self.store.query("SELECT COUNT(*) AS n FROM environments" + where, params)[0]["n"])

    @staticmethod
    def _where(*, seed_id: str | None, status: str | None, split: str | None, text: str | None,
               ids: Sequence[str] | None, since: str | None, exclude_split: str | None = None) -> tuple[str, Params]:
        where: list[str] = []
        params: list[str] = []
        if exclude_split is not None:
            where.append("split != ?")
            params.append(exclude_split)
        if since is not None:
            where.append("created_at >= ?")
            params.append(since)
        for col, val in (("seed_id", seed_id), ("status", status), ("split", split)):
            if val is not None:
                where.append(f"{col} = ?")
                params.append(val)
        if text:
            where.append("(id LIKE ? OR title LIKE ? OR seed_id LIKE ? OR metric LIKE ?)")
            params += [f"%{text}%"] * 4
        if ids is not None:
            where.append(f"id IN ({','.join('?' * len(ids))})" if ids else "0")
            params += list(ids)
        return (" WHERE " + " AND ".join(where) if where else ""), tuple(params)

    def set_split(self, env_ids: Sequence[str], split: str) -> None:
        with self.store.transaction() as db:
            db.conn.executemany("UPDATE environments SET split = ? WHERE id = ?", [(split, e) for e in env_ids])

    def update(self, env_id: str, **fields: object) -> None:
        self.get(env_id)
        row = self._encode(fields)
        with self.store.transaction() as db:
            db.table("environments").update(env_id, row)

    def replace_board(self, env_id: str, leaderboard: Iterable[Columns], *, files: Iterable[Columns] = (),
                      **fields: object) -> None:
        """Swap an environment's leaderboard for ``leaderboard`` and update ``fields`` (its thresholds and
        verification report), with the hashes of any ``files`` rewritten beside it, in one transaction: a crash
        leaves the old board or the new one, never a mix."""
        self.get(env_id)
        row = self._encode(fields)
        stamp = now()
        with self.store.transaction() as db:
            db.conn.execute("DELETE FROM leaderboard WHERE env_id = ?", (env_id,))
            lb_rows = [{"env_id": env_id, "created_at": stamp, **e} for e in leaderboard]
            if lb_rows:
                db.table("leaderboard").insert_all(lb_rows)
            for f in files:
                db.table("env_files").upsert({"env_id": env_id, **f}, pk=("env_id", "path"))
            if row:
                db.table("environments").update(env_id, row)

    def delete(self, env_id: str) -> EnvironmentRow:
        env = self.get(env_id)
        self.store.execute("DELETE FROM environments WHERE id = ?", (env_id,))
        return env

    def drop_pending(self, env_id: str) -> bool:
        """Delete a ``pending`` row (a reservation whose environment was never stored); True if there was one."""
        return self.store.execute("DELETE FROM environments WHERE id = ? AND status = 'pending'", (env_id,)) > 0

    def files(self, env_id: str) -> EnvFiles:
        return cast(EnvFiles, self.store.query("SELECT * FROM env_files WHERE env_id = ? ORDER BY path",
                                                    (env_id,)))

    def leaderboard(self, env_id: str) -> Leaderboard:
        env = self.get(env_id)
        order = "ASC" if env["lower_is_better"] else "DESC"
        return cast(Leaderboard, self.store.query(
            f"SELECT * FROM leaderboard WHERE env_id = ? ORDER BY score {order}, id", (env_id,)))

    def folders(self) -> dict[str, str | None]:
        """Environment id → its folder, for every environment (pending and rejected ones too)."""
        return {r["id"]: r["dir"] for r in self.store.query("SELECT id, dir FROM environments")}

    def fingerprints(self, seed_id: str | None = None) -> Sequence[tuple[str, str]]:
        sql = "SELECT id, fingerprint FROM environments WHERE fingerprint IS NOT NULL"
        params: tuple = ()
        if seed_id:
            sql += " AND seed_id = ?"
            params = (seed_id,)
        return [(r["id"], r["fingerprint"]) for r in self.store.query(sql, params)]

    def claim_scenario(self, env_id: str, scenario: Columns, fingerprint: str,
                       clash: Callable[[Sequence[tuple[str, str]]], T | None]) -> T | None:
        """Give the reserved environment ``env_id`` its scenario and fingerprint unless ``clash`` finds a conflict
        among the fingerprints of its seed's other environments (those other processes are building included).
        The read and the write are one transaction, so two workers never both claim near-duplicates. Returns what
        ``clash`` found (None: claimed)."""
        with self.store.transaction():
            seed_id = self.get(env_id)["seed_id"]
            found = clash([(i, fp) for i, fp in self.fingerprints(seed_id) if i != env_id])
            if found is None:
                self.update(env_id, scenario=dict(scenario), fingerprint=fingerprint)
            return found

    def domains(self, seed_id: str) -> Sequence[str]:
        """The scenario domains of a seed's environments (those being built too), the most recent last."""
        rows = self.store.query(
            "SELECT json_extract(scenario, '$.domain') AS domain FROM environments WHERE seed_id = ? "
            "AND json_extract(scenario, '$.domain') IS NOT NULL GROUP BY domain ORDER BY MAX(created_at), domain",
            (seed_id,))
        return [r["domain"] for r in rows]

    # --------------------------------------------------------------- synthesis history
    def run_cost(self, run_id: str) -> float:
        """USD the LLM calls of a synthesis run have cost so far (the usage its attempts recorded)."""
        rows = self.store.query("SELECT COALESCE(SUM(json_extract(usage, '$.cost_usd')), 0) AS usd "
                                "FROM synthesis_attempts WHERE run_id = ?", (run_id,))
        return float(rows[0]["usd"])

    def add_attempt(self, attempt: Columns) -> int:
        row = dict(attempt)
        row.setdefault("created_at", now())
        if not isinstance(row.get("usage", ""), str):
            row["usage"] = dumps(row["usage"])
        for key in ("prompt", "output", "feedback"):
            if row.get(key) is not None and not isinstance(row[key], str):
                row[key] = dumps(row[key])
        with self.store.transaction() as db:
            return cast(int, db.table("synthesis_attempts").insert(row).last_pk)  # an INTEGER PRIMARY KEY

    def attempt_usage(self, *, seed_id: str | None = None, run_id: str | None = None,
                      env_id: str | None = None) -> AttemptUsages:
        """Role, env id and usage of the attempts that called an LLM (cost accounting without the prompts)."""
        where, params = ["usage LIKE '%\"provider\"%'"], []
        for col, val in (("seed_id", seed_id), ("run_id", run_id), ("env_id", env_id)):
            if val is not None:
                where.append(f"{col} = ?")
                params.append(val)
        rows = self.store.query("SELECT role, env_id, usage FROM synthesis_attempts WHERE " + " AND ".join(where)
                                + " ORDER BY id", tuple(params))
        for r in rows:
            r["usage"] = loads(r["usage"], {})
        return cast(AttemptUsages, rows)

    def attempts(self, *, env_id: str | None = None, run_id: str | None = None) -> Attempts:
        if env_id is None and run_id is None:
            raise ValueError("give env_id or run_id")
        col, val = ("env_id", env_id) if env_id is not None else ("run_id", run_id)
        rows = self.store.query(f"SELECT * FROM synthesis_attempts WHERE {col} = ? ORDER BY id", (val,))
        for r in rows:
            r["usage"] = loads(r["usage"], {})
        return cast(Attempts, rows)
