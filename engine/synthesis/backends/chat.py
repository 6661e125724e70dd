"""An LLM plays the roles through one provider client (``engine.llm``): Anthropic or any OpenAI-compatible
endpoint, one model per role if configured (``[synthesis] models``), the stable system prompt cached."""

from __future__ import annotations

from typing import Mapping

from ...config import Settings, SynthesisRole
from ...llm import clients
from ...llm.anthropic import AnthropicClient
from ...llm.openai import OpenAIClient
from ..roles import RoleRequest
from .base import Completion, SynthesisBackend, MalformedOutput, extract_json


class ChatBackend(SynthesisBackend):
    def __init__(self, client: AnthropicClient | OpenAIClient, *, models: Mapping[SynthesisRole, str] | None = None,
                 max_tokens: int | None = None):
        self.client, self.models, self.max_tokens = client, dict(models or {}), max_tokens
        self.name = client.provider

    def complete(self, request: RoleRequest) -> Completion:
        reply = self.client.chat([{"role": "user", "content": request.prompt}], system=request.system,
                                 model=self.models.get(request.role), max_tokens=self.max_tokens)
        try:
            data = extract_json(reply.text)
        except MalformedOutput as exc:
            raise MalformedOutput(str(exc), text=reply.text, usage=reply.usage) from None
        return Completion(data=data, text=reply.text, usage=reply.usage)

    def close(self) -> None:
        self.client.close()


def anthropic(settings: Settings) -> ChatBackend:
    """The roles played by Claude (``[anthropic]``, ``[synthesis] models`` and ``max_tokens``)."""
    return ChatBackend(clients.anthropic(settings.anthropic), models=settings.synthesis.models,
                       max_tokens=settings.synthesis.max_tokens)


def openai(settings: Settings) -> ChatBackend:
    """The roles played by an OpenAI-compatible endpoint (``[openai]``, ``[synthesis] models`` and ``max_tokens``)."""
    return ChatBackend(clients.openai(settings.openai), models=settings.synthesis.models,
                       max_tokens=settings.synthesis.max_tokens)
