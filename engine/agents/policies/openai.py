"""``openai`` — any OpenAI-compatible chat endpoint (a local vLLM on a GPU server, or OpenAI itself)."""

from __future__ import annotations

import os
from typing import Any

from store.trajectories import Turn

from ...config import load_settings
from ..policy import Action, PolicyError
from .anthropic import to_chat


class OpenAIPolicy:
    def __init__(self, model: str | None = None, *, base_url: str | None = None, max_tokens: int | None = None,
                 temperature: float | None = None, settings=None):
        try:
            import openai  # heavy optional dependency: loaded only when used
        except ImportError:
            raise PolicyError("the openai policy needs the `openai` package (pip install 'sandmle[openai]')") from None
        if settings is None:
            settings = load_settings().openai
        self.model = model or settings.model
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.client = openai.OpenAI(base_url=base_url or settings.base_url,
                                    api_key=os.environ.get(settings.api_key_env) or "EMPTY", max_retries=3)
        self._errors = openai.OpenAIError
        self.name = f"openai:{self.model}"

    def act(self, messages: list[Turn], *, rng_seed: int | None = None) -> Action:
        system, turns = to_chat(messages)
        chat = ([{"role": "system", "content": system}] if system else []) + turns
        kwargs: dict[str, Any] = dict(model=self.model, messages=chat)
        if self.max_tokens:
            kwargs["max_tokens"] = self.max_tokens
        if self.temperature is not None:
            kwargs["temperature"] = self.temperature
        if rng_seed is not None:
            kwargs["seed"] = int(rng_seed)
        try:
            resp = self.client.chat.completions.create(**kwargs)
        except self._errors as exc:
            raise PolicyError(f"openai-compatible endpoint error: {exc}") from None
        text = resp.choices[0].message.content or ""
        usage = {}
        if resp.usage is not None:
            usage = {"input_tokens": resp.usage.prompt_tokens, "output_tokens": resp.usage.completion_tokens}
        return Action(text=text, usage=usage)
