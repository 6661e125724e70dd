"""An LLM plays the roles through one provider client (``engine.llm``): Anthropic or any OpenAI-compatible
endpoint, one model per role if configured (``[synthesis] models``), the stable system prompt cached."""

from __future__ import annotations

from typing import Mapping

from ...config import SynthesisRole
from ...llm.anthropic import AnthropicClient
from ...llm.openai import OpenAIClient
from ..roles import RoleRequest
from .base import Completion, LLMBackend, MalformedOutput, extract_json


class ChatBackend(LLMBackend):
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
