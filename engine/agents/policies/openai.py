"""``openai`` — any OpenAI-compatible chat endpoint (a local vLLM on a GPU server, or OpenAI itself) through the
provider client of ``engine.llm``; tokens and cost (``[openai]`` prices) per turn."""

from __future__ import annotations

from store.trajectories import Turn

from ...config import OpenAISettings, load_settings
from ...llm import clients
from ..policy import Action
from .anthropic import to_chat


class OpenAIPolicy:
    def __init__(self, model: str | None = None, *, base_url: str | None = None, max_tokens: int | None = None,
                 temperature: float | None = None, settings: OpenAISettings | None = None):
        settings = settings or load_settings().openai
        self.client = clients.openai(settings, model=model, base_url=base_url)
        self.max_tokens, self.temperature = max_tokens, temperature
        self.name = f"openai:{self.client.model}"

    def act(self, messages: list[Turn], *, rng_seed: int | None = None) -> Action:
        system, turns = to_chat(messages)
        reply = self.client.chat(turns, system=[system], max_tokens=self.max_tokens, temperature=self.temperature,
                                 seed=rng_seed)
        return Action(text=reply.text, usage=reply.usage.to_dict())
