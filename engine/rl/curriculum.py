"""Curriculum: sample environments by the reward variance of their recent groups. An environment whose groups
all earn the same reward (always solved, never solved) teaches nothing; one with spread teaches most. Unseen
environments get the highest weight so everything is tried once; a floor keeps every environment reachable."""

from __future__ import annotations

import random
import statistics
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Curriculum:
    env_ids: list[str]
    window: int = 3
    floor: float = 0.05
    enabled: bool = True
    #: env id → variances of its most recent groups (newest last)
    history: dict[str, list[float]] = field(default_factory=dict)

    def weight(self, env_id: str) -> float:
        recent = self.history.get(env_id)
        if not recent:
            return 1.0
        return max(self.floor, min(1.0, 4.0 * statistics.fmean(recent)))  # variance of rewards in [0,1] ≤ 0.25

    def weights(self) -> dict[str, float]:
        return {e: self.weight(e) for e in self.env_ids}

    def sample(self, k: int, rng: random.Random) -> list[str]:
        """k environments, without replacement while possible."""
        if not self.env_ids:
            return []
        if not self.enabled:
            pool = list(self.env_ids)
            rng.shuffle(pool)
            return [pool[i % len(pool)] for i in range(k)]
        chosen: list[str] = []
        pool = list(self.env_ids)
        while len(chosen) < k:
            if not pool:
                pool = list(self.env_ids)
            w = [self.weight(e) for e in pool]
            pick = rng.choices(range(len(pool)), weights=w, k=1)[0]
            chosen.append(pool.pop(pick))
        return chosen

    def update(self, env_id: str, rewards: list[float]) -> None:
        var = statistics.pvariance(rewards) if len(rewards) >= 2 else 0.0
        hist = self.history.setdefault(env_id, [])
        hist.append(float(var))
        del hist[:-self.window]

    def state_dict(self) -> dict[str, Any]:
        return {"env_ids": list(self.env_ids), "window": self.window, "floor": self.floor,
                "enabled": self.enabled, "history": {k: list(v) for k, v in self.history.items()}}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> "Curriculum":
        return cls(env_ids=list(state["env_ids"]), window=int(state["window"]), floor=float(state["floor"]),
                   enabled=bool(state.get("enabled", True)), history={k: list(v) for k, v in state["history"].items()})
