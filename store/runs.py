"""Runs (synthesis, sft, grpo, eval, bench, rollout): config, status, metric series, checkpoints, eval results."""

from __future__ import annotations

import uuid
from typing import Any, Iterable, Mapping, Sequence, TypedDict, cast

from . import owners
from ._repo import KeyedRepo
from .common import JSON, now

#: one metric's (step, value) points
Series = list[tuple[int, float]]

KINDS = ("synthesis", "sft", "grpo", "eval", "bench", "rollout")
#: 'dead': the run's process ended without closing it (killed); set when a store is opened
STATUSES = ("pending", "running", "done", "failed", "stopped", "dead")


def new_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


class RunRow(TypedDict):
    """A row of ``runs``: a training run, an eval, a synthesis batch, a benchmark or a rollout."""

    id: str
    kind: str  #: synthesis | sft | grpo | eval | bench | rollout
    name: str | None
    status: str  #: pending | running | done | failed | stopped | dead
    config: dict[str, JSON]
    summary: dict[str, JSON]
    parent_id: str | None
    pid: int | None
    pid_start: str | None
    host: str | None
    dir: str | None
    error: str | None
    created_at: str
    started_at: str | None
    ended_at: str | None
    heartbeat_at: str | None


class Checkpoint(TypedDict):
    id: int
    run_id: str
    step: int
    path: str
    sha256: str
    state: dict[str, JSON]
    created_at: str


class EvalResult(TypedDict):
    """One episode of an eval run (``error`` when it could not run: then it is not a result)."""

    id: int
    run_id: str
    env_id: str | None
    trajectory_id: str | None
    policy: str
    scaffold: str
    rng_seed: int | None
    score: float | None
    valid: int
    gold: int
    silver: int
    bronze: int
    above_median: int
    rank: float | None  #: on the board (HumanRank on a real leaderboard, else among reference solutions)
    reward: float | None
    created_at: str
    error: str | None
    has_leaderboard: int
    board: str | None  #: the board it was graded on: human | population | paper | ladder (None: none, or before)
    board_entries: int | None


#: lists of rows (aliases: inside the class, ``list`` names its ``list`` method)
RunRows = list[RunRow]
Checkpoints = list[Checkpoint]
EvalResults = list[EvalResult]
#: the columns given to create or update a row (a subset of the row's)
Columns = Mapping[str, object]


class Runs(KeyedRepo[RunRow]):
    table = "runs"
    json_fields = ("config", "summary")
    noun = "run"
    listing = "sandmle runs list"
    by_prefix = True
    #: a row a launcher made in advance for this process's work (the workbench's job id): the first ``create``
    #: of that kind without an explicit id fills it in rather than adding a second run (see ``adopt``)
    adopt_id: str | None = None

    def create(
        self, kind: str, config: Mapping[str, object] | None = None, *, name: str | None = None,
        parent_id: str | None = None, dir: str | None = None, status: str = "running", run_id: str | None = None,
    ) -> str:
        if kind not in KINDS:
            raise ValueError(f"unknown run kind {kind!r}; expected one of {', '.join(KINDS)}")
        if run_id is None:
            adopted = self.adopt(kind, config, name=name, parent_id=parent_id, dir=dir, status=status)
            if adopted is not None:
                return adopted
        run_id = run_id or new_id(kind)
        stamp = now()
        row = self._encode({
            "id": run_id, "kind": kind, "name": name, "status": status, "config": config or {},
            "parent_id": parent_id, "dir": dir, **owners.owner(), "created_at": stamp, "started_at": stamp if status == "running" else None, "heartbeat_at": stamp,
        })
        with self.store.transaction() as db:
            db.table("runs").insert(row, pk="id")
        return run_id

    def adopt(self, kind: str, config: Mapping[str, object] | None = None, *, name: str | None = None,
              parent_id: str | None = None, dir: str | None = None, status: str = "running") -> str | None:
        """Fill in the row ``adopt_id`` names (once, and only with a run of its kind) and return its id, so that
        one piece of work started by a launcher is one run; None when there is nothing to adopt. The launcher's own
        config keys are kept beside the run's config."""
        row = self.find(self.adopt_id) if self.adopt_id else None
        if row is None or row["kind"] != kind:
            return None
        self.adopt_id = None
        stamp = now()
        self.update(row["id"], config={**(config or {}), **(row["config"] or {})}, name=name or row["name"],
                    parent_id=parent_id, dir=dir or row["dir"], status=status, **owners.owner(),
                    started_at=stamp if status == "running" else None, heartbeat_at=stamp)
        return row["id"]

    def list(self, *, kind: str | None = None, status: str | None = None, limit: int | None = 500) -> RunRows:
        where: list[str] = []
        params: list[str] = []
        for col, val in (("kind", kind), ("status", status)):
            if val is not None:
                where.append(f"{col} = ?")
                params.append(val)
        sql = "SELECT * FROM runs" + (" WHERE " + " AND ".join(where) if where else "")
        sql += " ORDER BY created_at DESC"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return cast(RunRows, self._decode_all(self.store.query(sql, tuple(params))))

    def update(self, run_id: str, **fields: object) -> None:
        if fields.get("pid") and "pid_start" not in fields:  # a new owner: record its start time with its pid
            fields["pid_start"] = owners.start_time(int(cast(int, fields["pid"])))
        row = self._encode(fields)
        with self.store.transaction() as db:
            db.table("runs").update(run_id, row)

    def start(self, run_id: str) -> None:
        stamp = now()
        self.update(run_id, status="running", started_at=stamp, heartbeat_at=stamp, **owners.owner(), error=None,
                    ended_at=None)

    def finish(self, run_id: str, status: str = "done", *, summary: Mapping[str, object] | None = None, error: str | None = None) -> None:
        if status not in STATUSES:
            raise ValueError(f"unknown status {status!r}")
        fields: dict[str, Any] = {"status": status, "ended_at": now(), "error": error}
        if summary is not None:
            fields["summary"] = summary
        self.update(run_id, **fields)

    def mark_dead(self, rows: Sequence[RunRow] | None = None) -> Sequence[str]:
        """Mark ``running`` runs whose process is gone as ``dead`` (resumable); returns their ids. ``rows`` limits
        the check to those rows."""
        dead = self.stuck() if rows is None else [r for r in rows if owners.gone(r)]
        stamp = now()
        with self.store.transaction() as db:
            for r in dead:
                db.conn.execute("UPDATE runs SET status = 'dead', ended_at = ?, error = ? WHERE id = ? "
                                "AND status = 'running'",
                                (stamp, f"its process (pid {r['pid']}) ended while the run was running (killed?)",
                                 r["id"]))
        return [r["id"] for r in dead]

    def heartbeat(self, run_id: str) -> None:
        self.store.execute("UPDATE runs SET heartbeat_at = ? WHERE id = ?", (now(), run_id))

    # --------------------------------------------------------------- metrics
    def log_metrics(self, run_id: str, step: int, values: Mapping[str, float | int | None]) -> None:
        stamp = now()
        rows = [(run_id, int(step), k, None if v is None else float(v), stamp) for k, v in values.items()]
        with self.store.transaction() as db:
            db.conn.executemany(
                "INSERT OR REPLACE INTO metrics (run_id, step, name, value, ts) VALUES (?, ?, ?, ?, ?)", rows
            )
            db.conn.execute("UPDATE runs SET heartbeat_at = ? WHERE id = ?", (stamp, run_id))

    def metrics(self, run_id: str, names: Iterable[str] | None = None) -> dict[str, Series]:
        wanted = set(names) if names is not None else None
        if wanted is not None:
            marks = ",".join("?" * len(wanted))
            rows = self.store.query(f"SELECT step, name, value FROM metrics WHERE run_id = ? AND name IN ({marks}) "
                                    "ORDER BY step", (run_id, *sorted(wanted)))
        else:
            rows = self.store.query("SELECT step, name, value FROM metrics WHERE run_id = ? ORDER BY step", (run_id,))
        out: dict[str, Series] = {}
        for r in rows:
            if wanted is None or r["name"] in wanted:
                out.setdefault(r["name"], []).append((r["step"], r["value"]))
        return out

    def metric_points(self, run_id: str) -> int:
        """How many metric values a run has (a cheap "did anything change?" for live views)."""
        return self.store.query("SELECT COUNT(*) AS n FROM metrics WHERE run_id = ?", (run_id,))[0]["n"]

    def last_step(self, run_id: str) -> int | None:
        row = self.store.query("SELECT MAX(step) AS s FROM metrics WHERE run_id = ?", (run_id,))[0]
        return row["s"]

    # --------------------------------------------------------------- checkpoints
    def add_checkpoint(self, run_id: str, step: int, path: str, sha256: str, state: Mapping[str, object] | None = None) -> int:
        with self.store.transaction() as db:
            return cast(int, db.table("checkpoints").insert(  # an INTEGER PRIMARY KEY
                {"run_id": run_id, "step": int(step), "path": str(path), "sha256": sha256,
                 "state": self._encode({"config": state or {}})["config"], "created_at": now()},
                replace=True,
            ).last_pk)

    def checkpoints(self, run_id: str) -> Checkpoints:
        rows = self.store.query("SELECT * FROM checkpoints WHERE run_id = ? ORDER BY step", (run_id,))
        for r in rows:
            r["state"] = self._decode({"config": r["state"]})["config"]
        return cast(Checkpoints, rows)

    def latest_checkpoint(self, run_id: str) -> Checkpoint | None:
        rows = self.checkpoints(run_id)
        return rows[-1] if rows else None

    # --------------------------------------------------------------- eval results
    def add_eval_results(self, run_id: str, results: Iterable[Columns]) -> None:
        stamp = now()
        rows = [{"run_id": run_id, "created_at": stamp, **r} for r in results]
        for r in rows:
            for key in ("valid", "gold", "silver", "bronze", "above_median", "has_leaderboard"):
                if key in r:
                    r[key] = int(bool(r[key]))
        with self.store.transaction() as db:
            if rows:
                db.table("eval_results").insert_all(rows)

    def drop_eval_errors(self, run_id: str) -> int:
        """Forget the episodes of an eval run that could not run (so that resuming plays them again)."""
        return self.store.execute("DELETE FROM eval_results WHERE run_id = ? AND error IS NOT NULL", (run_id,))

    def eval_results(self, run_id: str) -> EvalResults:
        return cast(EvalResults, self.store.query(
            "SELECT * FROM eval_results WHERE run_id = ? ORDER BY env_id, rng_seed, id", (run_id,)))
