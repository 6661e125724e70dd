"""The policy interface: the conversation so far (a list of :class:`~store.trajectories.Turn`) in, one action
(text, plus tokens and log-probs for local models) out. A local model fills the turns' ``token_ids`` in place.

Implementations live one per module under :mod:`engine.agents.policies`, built from a spec string by
:func:`engine.agents.policies.load_policy`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from store.trajectories import Turn

from ..errors import SandmleError


@dataclass
class Action:
    text: str
    token_ids: list[int] | None = None  #: generated tokens (hf), exactly as sampled
    logprobs: list[float] | None = None  #: their log-probs under the sampling policy
    usage: dict = field(default_factory=dict)
    policy_version: int | None = None  #: which weights sampled it (hf: the number of GRPO updates behind them)
    finish_reason: str | None = None  #: "stop" | "length" (hf)


@runtime_checkable
class Policy(Protocol):
    name: str

    def act(self, messages: list[Turn], *, rng_seed: int | None = None) -> Action: ...


@runtime_checkable
class ScaffoldAware(Protocol):
    """A policy that writes its replies itself (the scripted teacher) and so must know the reply format of the
    scaffold it plays in (:data:`engine.agents.scaffolds.REPLIES`): an episode hands it the scaffold first. A model
    reads the format from its prompt instead."""

    def in_scaffold(self, scaffold: str, reply: str) -> Policy: ...


class PolicyError(SandmleError):
    """A bad policy spec or a policy that cannot act (missing model, unreachable endpoint)."""
