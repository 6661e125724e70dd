"""What every scaffold builds: the messages the policy saw and the parallel list of stored turns."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

from ..policy import Action, Message, Policy
from ..trajectory import Turn


@dataclass
class Transcript:
    messages: list[Message] = field(default_factory=list)
    turns: list[Turn] = field(default_factory=list)
    usage: dict = field(default_factory=dict)
    extra: dict = field(default_factory=dict)  #: scaffold-specific records (e.g. the aide journal)
    #: called with each observation turn as it lands (progress output); never with the system/user prompt
    on_turn: Callable[[Turn], None] | None = None

    def add(self, role: str, text: str, **turn) -> Message:
        msg = Message(role=role, content=text)
        self.messages.append(msg)
        self.turns.append(Turn(role=role, text=text, **turn))
        if self.on_turn is not None and role == "tool":
            self.on_turn(self.turns[-1])
        return msg

    def act(self, policy: Policy, context: list[Message], rng_seed: int | None) -> tuple[Action, float]:
        """Ask the policy; the reply becomes an assistant message (with its tokens) in the transcript."""
        t = time.monotonic()
        action = policy.act(context, rng_seed=rng_seed)
        wall = time.monotonic() - t
        for k, v in (action.usage or {}).items():
            if isinstance(v, (int, float)):
                self.usage[k] = self.usage.get(k, 0) + v
        msg = Message(role="assistant", content=action.text, token_ids=action.token_ids, logprobs=action.logprobs)
        self.messages.append(msg)
        self.turns.append(Turn(role="assistant", text=action.text, wall_s=wall, policy_version=action.policy_version,
                               finish_reason=action.finish_reason))
        return action, wall

    def sync_tokens(self) -> None:
        """Copy the token ids / log-probs the policy filled into the messages over to the turns."""
        for msg, turn in zip(self.messages, self.turns):
            turn.token_ids = msg.token_ids
            turn.logprobs = msg.logprobs


def seed_for(rng_seed: int | None, turn: int) -> int | None:
    return None if rng_seed is None else rng_seed * 1000 + turn
