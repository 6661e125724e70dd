"""Trajectories: whole multi-turn episodes, turn by turn, with grade report and reward breakdown."""

from __future__ import annotations

import json
from typing import Any, Iterable

from ._repo import Repo
from .common import now
from .errors import NotFound


class Trajectories(Repo):
    table = "trajectories"
    json_fields = ("grade", "reward_breakdown")
    bool_fields = ("terminated", "truncated", "timed_out")

    def add(self, trajectory: dict[str, Any], turns: Iterable[dict[str, Any]]) -> str:
        """Store a trajectory and all its turns in one transaction (both or neither)."""
        row = self.encode(trajectory)
        row.setdefault("created_at", now())
        turn_rows = []
        for i, t in enumerate(turns):
            tr = dict(t)
            tr["trajectory_id"] = trajectory["id"]
            tr.setdefault("idx", i)
            for key in ("token_ids", "logprobs"):
                if tr.get(key) is not None and not isinstance(tr[key], str):
                    tr[key] = json.dumps(tr[key])
            if tr.get("well_formed") is not None:
                tr["well_formed"] = int(bool(tr["well_formed"]))
            turn_rows.append(tr)
        row["n_turns"] = len(turn_rows)
        with self.store.transaction() as db:
            db["trajectories"].insert(row, pk="id")
            if turn_rows:
                db["turns"].insert_all(turn_rows, pk=("trajectory_id", "idx"), alter=False)
        return trajectory["id"]

    def get(self, trajectory_id: str, *, with_turns: bool = True) -> dict[str, Any]:
        row = self._get("id = ?", (trajectory_id,))
        if row is None:
            raise NotFound(f"no trajectory with id {trajectory_id!r}")
        if with_turns:
            turns = self.store.query("SELECT * FROM turns WHERE trajectory_id = ? ORDER BY idx", (trajectory_id,))
            for t in turns:
                for key in ("token_ids", "logprobs"):
                    if t.get(key):
                        t[key] = json.loads(t[key])
            row["turns"] = turns
        return row

    def list(
        self, *, run_id: str | None = None, env_id: str | None = None, group_id: str | None = None,
        policy: str | None = None, min_reward: float | None = None, limit: int | None = None,
    ) -> list[dict[str, Any]]:
        where, params = [], []
        for col, val in (("run_id", run_id), ("env_id", env_id), ("group_id", group_id), ("policy", policy)):
            if val is not None:
                where.append(f"{col} = ?")
                params.append(val)
        if min_reward is not None:
            where.append("reward >= ?")
            params.append(min_reward)
        sql = "SELECT * FROM trajectories" + (" WHERE " + " AND ".join(where) if where else "")
        sql += " ORDER BY created_at, id"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return self.decode_all(self.store.query(sql, tuple(params)))

    def count(self, **filters: Any) -> int:
        return len(self.list(**filters))
