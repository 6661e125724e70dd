"""What every scaffold builds: the turns of the episode — what the policy read and wrote, and what ran."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

from store.common import JSON
from store.trajectories import Turn

from ..policy import Action, Policy


@dataclass
class Transcript:
    turns: list[Turn] = field(default_factory=list)
    usage: dict[str, int | float] = field(default_factory=dict)
    extra: dict[str, JSON] = field(default_factory=dict)  #: scaffold-specific records (e.g. the aide journal)
    #: called with each observation turn as it lands (progress output); never with the system/user prompt
    on_turn: Callable[[Turn], None] | None = None

    def add(self, role: str, text: str, *, tool: str | None = None, code: str | None = None,
            observation: str | None = None, wall_s: float = 0.0) -> Turn:
        turn = Turn(role=role, text=text, tool=tool, code=code, observation=observation, wall_s=wall_s)
        self.turns.append(turn)
        if self.on_turn is not None and role == "tool":
            self.on_turn(turn)
        return turn

    def act(self, policy: Policy, context: list[Turn], rng_seed: int | None) -> tuple[Action, float]:
        """Ask the policy (it reads ``context``, usually the turns so far); its reply becomes an assistant turn
        with the tokens it generated."""
        t = time.monotonic()
        action = policy.act(context, rng_seed=rng_seed)
        wall = time.monotonic() - t
        for k, v in (action.usage or {}).items():
            if isinstance(v, (int, float)):
                self.usage[k] = self.usage.get(k, 0) + v
        self.turns.append(Turn(role="assistant", text=action.text, wall_s=wall, token_ids=action.token_ids,
                               logprobs=action.logprobs, policy_version=action.policy_version,
                               finish_reason=action.finish_reason))
        return action, wall


def seed_for(rng_seed: int | None, turn: int) -> int | None:
    return None if rng_seed is None else rng_seed * 1000 + turn
