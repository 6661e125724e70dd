"""``anthropic`` — a Claude model through the provider client of ``engine.llm`` (official SDK, Messages API), for
baselines and SFT data.

Honours ``ANTHROPIC_BASE_URL`` / ``[anthropic] base_url`` (a local Messages-API server in tests), retries 429 / 5xx
through the SDK's own ``max_retries``, caches the system prompt and records tokens and cost per turn. Tool
observations go back as user turns.
"""

from __future__ import annotations

from typing import Literal

from store.trajectories import Turn

from ...config import AnthropicSettings, load_settings
from ...llm import ChatTurn, clients
from ..policy import Action


def to_chat(messages: list[Turn]) -> tuple[str, list[ChatTurn]]:
    """(system text, alternating user/assistant turns) — tool observations become user turns."""
    system = "\n\n".join(m.text for m in messages if m.role == "system")
    turns: list[ChatTurn] = []
    for m in messages:
        if m.role == "system":
            continue
        role: Literal["user", "assistant"] = "assistant" if m.role == "assistant" else "user"
        text = f"[observation]\n{m.text}" if m.role == "tool" else m.text
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"] += "\n\n" + text
        else:
            turns.append({"role": role, "content": text})
    if not turns or turns[0]["role"] != "user":
        turns.insert(0, {"role": "user", "content": "(start)"})
    return system, turns


class AnthropicPolicy:
    def __init__(self, model: str | None = None, *, max_tokens: int | None = None, base_url: str | None = None,
                 temperature: float | None = None, settings: AnthropicSettings | None = None):
        settings = settings or load_settings().anthropic
        self.client = clients.anthropic(settings, model=model, base_url=base_url, max_tokens=max_tokens)
        self.temperature = temperature
        self.name = f"anthropic:{self.client.model}"

    def act(self, messages: list[Turn], *, rng_seed: int | None = None) -> Action:
        system, turns = to_chat(messages)
        reply = self.client.chat(turns, system=[system], temperature=self.temperature)
        return Action(text=reply.text, usage=reply.usage.to_dict())
