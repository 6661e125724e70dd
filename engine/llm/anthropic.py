"""Claude through the official SDK (Messages API). Honours ``ANTHROPIC_BASE_URL`` / ``base_url`` (a local
stand-in server in tests), retries 429 / 5xx with the SDK's own backoff (``max_retries``), marks the stable system
prompt for prompt caching, and prices every call (cache writes and reads included)."""

from __future__ import annotations

import os
import time
from typing import Any, Sequence

from .base import ChatReply, ChatTurn, LLMError, Usage, anthropic_price, cost_usd, sdk_call


class AnthropicClient:
    provider = "anthropic"

    def __init__(self, *, model: str, base_url: str | None = None, max_tokens: int = 4096, max_retries: int = 4,
                 timeout_s: float = 600.0):
        try:
            import anthropic  # heavy optional dependency: only when a Claude model is used
        except ImportError:
            raise LLMError("Claude models need the 'anthropic' package", hint="pip install anthropic") from None
        key = os.environ.get("ANTHROPIC_API_KEY")
        if not key:
            raise LLMError("Claude models need ANTHROPIC_API_KEY in the environment",
                           hint="export ANTHROPIC_API_KEY=... (or use the procedural synthesis backend)")
        self.model, self.max_tokens = model, max_tokens
        self.client = anthropic.Anthropic(api_key=key, base_url=base_url or os.environ.get("ANTHROPIC_BASE_URL"),
                                          max_retries=max_retries, timeout=timeout_s)
        self._errors = (anthropic.APIStatusError, anthropic.APIConnectionError)

    def chat(self, turns: Sequence[ChatTurn], *, system: Sequence[str] = (), model: str | None = None,
             max_tokens: int | None = None, temperature: float | None = None) -> ChatReply:
        """One Messages call. ``system`` parts become text blocks; the last one is marked for prompt caching,
        so everything up to it (role instructions, schema, examples) is cached across calls."""
        model = model or self.model
        kwargs: dict = {"model": model, "max_tokens": max_tokens or self.max_tokens, "messages": list(turns)}
        blocks: list[dict[str, Any]] = [{"type": "text", "text": part} for part in system if part]
        if blocks:
            blocks[-1]["cache_control"] = {"type": "ephemeral"}
            kwargs["system"] = blocks
        if temperature is not None:
            kwargs["temperature"] = temperature
        start = time.perf_counter()
        raw = sdk_call(self.client.messages.with_raw_response.create, kwargs, self._errors, api="anthropic API",
                       where="the anthropic API")
        msg = raw.parse()
        u = msg.usage
        tokens = {"input_tokens": u.input_tokens, "output_tokens": u.output_tokens,
                  "cache_write_tokens": u.cache_creation_input_tokens or 0,
                  "cache_read_tokens": u.cache_read_input_tokens or 0}
        usage = Usage(self.provider, msg.model or model, **tokens, cost_usd=cost_usd(anthropic_price(model), **tokens),
                      retries=int(raw.retries_taken), wall_s=round(time.perf_counter() - start, 3))
        return ChatReply("".join(getattr(b, "text", "") for b in msg.content), usage)

    def close(self) -> None:
        self.client.close()
