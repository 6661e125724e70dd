"""Turn and Trajectory: what an episode leaves behind (stored as rows of ``trajectories`` and ``turns``)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class Turn:
    """One message in the trajectory. Assistant turns carry the parsed tool and ``well_formed``; tool turns carry
    the code that ran and the observation. ``token_ids`` / ``logprobs`` as the hf policy saw / produced them, and for
    its assistant turns the policy version and finish reason of the sample."""

    role: str
    text: str
    tool: str | None = None
    code: str | None = None
    observation: str | None = None
    well_formed: bool | None = None
    wall_s: float = 0.0
    token_ids: list[int] | None = None
    logprobs: list[float] | None = None
    policy_version: int | None = None  #: assistant turns of a sampler: the weights' version (GRPO updates behind)
    finish_reason: str | None = None  #: assistant turns of a sampler: "stop" | "length"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Trajectory:
    id: str
    env_id: str
    policy: str
    scaffold: str
    turns: list[Turn]
    terminated: bool
    truncated: bool
    timed_out: bool  #: timed out → masked (not punished) by GRPO
    submission_path: str | None
    grade: dict | None
    reward: float
    reward_breakdown: dict
    wall_s: float
    sandbox_s: float  #: time spent waiting on the sandbox
    group_id: str | None = None
    step: int | None = None
    rng_seed: int | None = None
    run_id: str | None = None
    status: str = "done"  #: done | error | timeout
    error: str | None = None
    state: dict = field(default_factory=dict)  #: the scaffold's final EpisodeState (steps, score calls, …)

    @property
    def tokens(self) -> int:
        return sum(len(t.token_ids or []) for t in self.turns)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def row(self) -> dict[str, Any]:
        """The ``trajectories`` row (turns go separately)."""
        breakdown = dict(self.reward_breakdown)
        breakdown.setdefault("sandbox_s", self.sandbox_s)
        if self.error:
            breakdown["error"] = self.error
        if self.state:
            breakdown["state"] = self.state
        return {
            "id": self.id, "run_id": self.run_id, "env_id": self.env_id, "policy": self.policy,
            "scaffold": self.scaffold, "group_id": self.group_id, "step": self.step, "rng_seed": self.rng_seed,
            "status": self.status, "terminated": self.terminated, "truncated": self.truncated,
            "timed_out": self.timed_out, "submission_path": self.submission_path, "grade": self.grade,
            "reward": self.reward, "reward_breakdown": breakdown, "wall_s": self.wall_s,
            "tokens": self.tokens or None,
        }

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> "Trajectory":
        """Rebuild from ``store.trajectories.get(id)`` (with turns)."""
        turns = [Turn(**{k: t.get(k) for k in Turn.__dataclass_fields__ if k in t}) for t in row.get("turns", [])]
        for t in turns:
            t.wall_s = t.wall_s or 0.0
            t.well_formed = None if t.well_formed is None else bool(t.well_formed)
        breakdown = dict(row.get("reward_breakdown") or {})
        return cls(
            id=row["id"], env_id=row.get("env_id"), policy=row["policy"], scaffold=row["scaffold"], turns=turns,
            terminated=bool(row.get("terminated")), truncated=bool(row.get("truncated")),
            timed_out=bool(row.get("timed_out")), submission_path=row.get("submission_path"),
            grade=row.get("grade"), reward=row.get("reward") or 0.0, reward_breakdown=breakdown,
            wall_s=row.get("wall_s") or 0.0, sandbox_s=breakdown.get("sandbox_s", 0.0),
            group_id=row.get("group_id"), step=row.get("step"), rng_seed=row.get("rng_seed"),
            run_id=row.get("run_id"), status=row.get("status", "done"), error=breakdown.get("error"),
            state=breakdown.get("state") or {},
        )
