"""The policy interface: messages in, one action (text, plus tokens and log-probs for local models) out.

Implementations live one per module under :mod:`engine.agents.policies`, built from a spec string by
:func:`engine.agents.policies.load_policy`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..errors import SandmleError


@dataclass
class Message:
    role: str  #: "system" | "user" | "assistant" | "tool"
    content: str
    #: the exact tokens of this message as the model saw / produced them (filled by the hf policy)
    token_ids: list[int] | None = None
    #: per generated token (assistant messages of the hf policy)
    logprobs: list[float] | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


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

    def act(self, messages: list[Message], *, rng_seed: int | None = None) -> Action: ...


class PolicyError(SandmleError):
    """A bad policy spec or a policy that cannot act (missing model, unreachable endpoint)."""
