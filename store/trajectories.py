"""Trajectories: whole multi-turn episodes, turn by turn, with grade report and reward breakdown.

:class:`Turn` and :class:`Trajectory` are the one record of an episode: the scaffolds build the turns (the policy
reads them and fills their token ids), the episode runner stores the trajectory, and training reads it back —
the same types live and on resume.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from ._repo import Repo, Row
from .common import JSON, now
from .errors import NotFound


@dataclass
class Turn:
    """One message of the episode. Assistant turns carry the parsed tool and ``well_formed``; tool turns carry the
    code that ran and the observation. ``token_ids`` are the exact tokens the model saw / produced for this message
    (local models), ``logprobs`` one per generated token (assistant turns); for an assistant turn of a sampler, the
    policy version of the weights that produced it and why generation stopped."""

    role: str  #: "system" | "user" | "assistant" | "tool"
    text: str
    tool: str | None = None
    code: str | None = None
    observation: str | None = None
    well_formed: bool | None = None
    wall_s: float = 0.0
    token_ids: list[int] | None = None
    logprobs: list[float] | None = None
    policy_version: int | None = None  #: the sampler's weights version (GRPO updates behind: staleness)
    finish_reason: str | None = None  #: "stop" | "length"

    def to_dict(self) -> dict[str, JSON]:
        return asdict(self)


@dataclass
class Trajectory:
    id: str
    policy: str
    scaffold: str
    env_id: str | None = None
    turns: list[Turn] = field(default_factory=list)
    status: str = "done"  #: done | timeout | failed (the agent broke its workspace: reward 0) | error (infrastructure)
    terminated: bool = False
    truncated: bool = False
    timed_out: bool = False  #: timed out → masked (not punished) by GRPO
    submission_path: str | None = None
    grade: dict[str, JSON] | None = None  #: the grade report's fields
    reward: float = 0.0
    reward_breakdown: dict[str, JSON] = field(default_factory=dict)  #: scheme, terms, uncapped, total
    wall_s: float = 0.0
    sandbox_s: float = 0.0  #: time spent waiting on the sandbox
    group_id: str | None = None
    step: int | None = None
    rng_seed: int | None = None
    run_id: str | None = None
    error: str | None = None
    state: dict[str, JSON] = field(default_factory=dict)  #: the scaffold's final state (steps, score calls, …)
    created_at: str | None = None  #: set by the store
    n_turns: int = 0  #: the number of turns (also when listed without them)
    #: GRPO updates between the weights that sampled its oldest turn and those it trained (None: not trained on)
    staleness: int | None = None

    @property
    def tokens(self) -> int:
        return sum(len(t.token_ids or []) for t in self.turns)

    def to_dict(self) -> dict[str, JSON]:
        return asdict(self)


_EXTRA = ("sandbox_s", "error", "state")  # kept in the reward_breakdown column


class Trajectories(Repo[Row]):
    table = "trajectories"
    json_fields = ("grade", "reward_breakdown")
    bool_fields = ("terminated", "truncated", "timed_out")

    def add(self, trajectory: Trajectory) -> str:
        """Store a trajectory and all its turns in one transaction (both or neither)."""
        t = trajectory
        breakdown: dict[str, JSON] = {**t.reward_breakdown, "sandbox_s": t.sandbox_s}
        if t.error:
            breakdown["error"] = t.error
        if t.state:
            breakdown["state"] = t.state
        row = self._encode({
            "id": t.id, "run_id": t.run_id, "env_id": t.env_id, "policy": t.policy, "scaffold": t.scaffold,
            "group_id": t.group_id, "step": t.step, "rng_seed": t.rng_seed, "status": t.status,
            "terminated": t.terminated, "truncated": t.truncated, "timed_out": t.timed_out,
            "submission_path": t.submission_path, "grade": t.grade, "reward": t.reward,
            "reward_breakdown": breakdown, "wall_s": t.wall_s, "tokens": t.tokens or None,
            "n_turns": len(t.turns), "created_at": t.created_at or now(),
        })
        turn_rows = []
        for i, turn in enumerate(t.turns):
            tr: dict[str, Any] = {**turn.to_dict(), "trajectory_id": t.id, "idx": i}
            for key in ("token_ids", "logprobs"):
                if tr[key] is not None:
                    tr[key] = json.dumps(tr[key])
            if tr["well_formed"] is not None:
                tr["well_formed"] = int(bool(tr["well_formed"]))
            turn_rows.append(tr)
        with self.store.transaction() as db:
            db.table("trajectories").insert(row, pk="id")
            if turn_rows:
                db.table("turns").insert_all(turn_rows, pk=("trajectory_id", "idx"), alter=False)
        return t.id

    def set_staleness(self, values: dict[str, int | None]) -> None:
        """Record, per trajectory id, how many policy updates its sampling weights lagged behind the weights
        GRPO trained with it."""
        with self.store.transaction() as db:
            for trajectory_id, lag in values.items():
                db.conn.execute("UPDATE trajectories SET staleness = ? WHERE id = ?", (lag, trajectory_id))

    def get(self, trajectory_id: str, *, with_turns: bool = True) -> Trajectory:
        row = self._get("id = ?", (trajectory_id,))
        if row is None:
            raise NotFound(f"no trajectory with id {trajectory_id!r}")
        traj = self._record(row)
        if with_turns:
            rows = self.store.query("SELECT * FROM turns WHERE trajectory_id = ? ORDER BY idx", (trajectory_id,))
            traj.turns = [_turn(r) for r in rows]
        return traj

    def list(
        self, *, run_id: str | None = None, env_id: str | None = None, group_id: str | None = None,
        policy: str | None = None, min_reward: float | None = None, step: int | None = None,
        limit: int | None = None, offset: int = 0,
    ) -> list[Trajectory]:
        """Trajectories without their turns (``n_turns`` says how many), oldest first."""
        where, params = self._where(run_id=run_id, env_id=env_id, group_id=group_id, policy=policy,
                                    min_reward=min_reward, step=step)
        sql = "SELECT * FROM trajectories" + where + " ORDER BY created_at, id"
        if limit is not None:
            sql += f" LIMIT {int(limit)} OFFSET {int(offset)}"
        return [self._record(r) for r in self._decode_all(self.store.query(sql, params))]

    def count(self, *, run_id: str | None = None, env_id: str | None = None, group_id: str | None = None,
              policy: str | None = None, min_reward: float | None = None) -> int:
        where, params = self._where(run_id=run_id, env_id=env_id, group_id=group_id, policy=policy,
                                    min_reward=min_reward)
        return int(self.store.query("SELECT COUNT(*) AS n FROM trajectories" + where, params)[0]["n"])

    @staticmethod
    def _where(*, run_id: str | None = None, env_id: str | None = None, group_id: str | None = None,
               policy: str | None = None, min_reward: float | None = None,
               step: int | None = None) -> tuple[str, tuple[str | int | float, ...]]:
        where: list[str] = []
        params: list[str | int | float] = []
        for col, val in (("run_id", run_id), ("env_id", env_id), ("group_id", group_id), ("policy", policy),
                         ("step", step)):
            if val is not None:
                where.append(f"{col} = ?")
                params.append(val)
        if min_reward is not None:
            where.append("reward >= ?")
            params.append(min_reward)
        return (" WHERE " + " AND ".join(where) if where else ""), tuple(params)

    def groups(self, run_id: str, step: int) -> dict[str, str]:
        """Group id → environment id of the groups already started in a step of a run."""
        rows = self.store.query("SELECT DISTINCT group_id, env_id FROM trajectories WHERE run_id = ? AND step = ?",
                                (run_id, step))
        return {r["group_id"]: r["env_id"] for r in rows if r["group_id"]}

    @staticmethod
    def _record(row: dict[str, Any]) -> Trajectory:
        breakdown = dict(row.get("reward_breakdown") or {})
        extra = {k: breakdown.pop(k) for k in _EXTRA if k in breakdown}
        return Trajectory(
            id=row["id"], policy=row["policy"], scaffold=row["scaffold"], env_id=row["env_id"], status=row["status"],
            terminated=bool(row["terminated"]), truncated=bool(row["truncated"]), timed_out=bool(row["timed_out"]),
            submission_path=row["submission_path"], grade=row["grade"], reward=row["reward"] or 0.0,
            reward_breakdown=breakdown,
            wall_s=row["wall_s"] or 0.0, sandbox_s=float(extra.get("sandbox_s") or 0.0), group_id=row["group_id"],
            step=row["step"], rng_seed=row["rng_seed"], run_id=row["run_id"], error=extra.get("error"),
            state=extra.get("state") or {}, created_at=row["created_at"], n_turns=row["n_turns"] or 0,
            staleness=row["staleness"],
        )


def _turn(row: dict[str, Any]) -> Turn:
    return Turn(role=row["role"], text=row["text"], tool=row["tool"], code=row["code"], observation=row["observation"],
                well_formed=None if row["well_formed"] is None else bool(row["well_formed"]),
                wall_s=row["wall_s"] or 0.0, token_ids=json.loads(row["token_ids"]) if row["token_ids"] else None,
                logprobs=json.loads(row["logprobs"]) if row["logprobs"] else None,
                policy_version=row["policy_version"], finish_reason=row["finish_reason"])
