"""Clients built from the user's settings (``[anthropic]``, ``[openai]``), for synthesis and the policies alike."""

from __future__ import annotations

from ..config import AnthropicSettings, OpenAISettings
from .anthropic import AnthropicClient
from .openai import OpenAIClient


def anthropic(settings: AnthropicSettings, *, model: str | None = None, base_url: str | None = None,
              max_tokens: int | None = None) -> AnthropicClient:
    return AnthropicClient(model=model or settings.model, base_url=base_url or settings.base_url,
                           max_tokens=max_tokens or settings.max_tokens, max_retries=settings.max_retries)


def openai(settings: OpenAISettings, *, model: str | None = None, base_url: str | None = None) -> OpenAIClient:
    return OpenAIClient(model=model or settings.model, base_url=base_url or settings.base_url,
                        api_key_env=settings.api_key_env, max_retries=settings.max_retries,
                        price=(settings.price_input_per_mtok, settings.price_output_per_mtok))
