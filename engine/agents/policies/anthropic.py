"""``anthropic`` — a Claude model through the official SDK (Messages API), for baselines and SFT data.

Honours ``ANTHROPIC_BASE_URL`` / ``[anthropic] base_url`` (a local Messages-API server in tests) and retries
429 / 5xx through the SDK's own ``max_retries``. Tool observations go back as user turns.
"""

from __future__ import annotations

import os
from typing import Any

from store.trajectories import Turn

from ...config import load_settings
from ..policy import Action, PolicyError


def to_chat(messages: list[Turn]) -> tuple[str, list[dict]]:
    """(system text, alternating user/assistant turns) — tool observations become user turns."""
    system = "\n\n".join(m.text for m in messages if m.role == "system")
    turns: list[dict] = []
    for m in messages:
        if m.role == "system":
            continue
        role = "assistant" if m.role == "assistant" else "user"
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
                 temperature: float | None = None, settings=None):
        try:
            import anthropic  # heavy optional dependency: loaded only when used
        except ImportError:
            raise PolicyError("the anthropic policy needs the `anthropic` package") from None
        if settings is None:
            settings = load_settings().anthropic
        self.model = model or settings.model
        self.max_tokens = max_tokens or settings.max_tokens
        self.temperature = temperature
        key = os.environ.get("ANTHROPIC_API_KEY")
        if not key:
            raise PolicyError("the anthropic policy needs ANTHROPIC_API_KEY in the environment")
        self.client = anthropic.Anthropic(api_key=key, base_url=base_url or settings.base_url,
                                          max_retries=settings.max_retries)
        self._errors = anthropic.APIError
        self.name = f"anthropic:{self.model}"

    def act(self, messages: list[Turn], *, rng_seed: int | None = None) -> Action:
        system, turns = to_chat(messages)
        kwargs: dict[str, Any] = dict(model=self.model, max_tokens=self.max_tokens, messages=turns)
        if system:
            kwargs["system"] = system
        if self.temperature is not None:
            kwargs["temperature"] = self.temperature
        try:
            resp = self.client.messages.create(**kwargs)
        except self._errors as exc:
            raise PolicyError(f"anthropic API error: {exc}") from None
        text = "".join(getattr(b, "text", "") for b in resp.content)
        usage = {"input_tokens": resp.usage.input_tokens, "output_tokens": resp.usage.output_tokens}
        return Action(text=text, usage=usage)
