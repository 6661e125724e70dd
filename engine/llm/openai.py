"""Any OpenAI-compatible chat endpoint (a local vLLM on a GPU server, or OpenAI itself) through the official
``openai`` SDK (optional extra ``sandmle[openai]``), with the SDK's retry/backoff and a configurable price."""

from __future__ import annotations

import os
import time
from typing import Sequence

from .base import ChatReply, ChatTurn, LLMError, Usage, cost_usd, sdk_call


class OpenAIClient:
    provider = "openai"

    def __init__(self, *, model: str, base_url: str, api_key_env: str = "OPENAI_API_KEY", max_retries: int = 4,
                 price: tuple[float, float] = (0.0, 0.0), timeout_s: float = 600.0):
        try:
            import openai  # optional extra: only when an OpenAI-compatible endpoint is used
        except ImportError:
            raise LLMError("OpenAI-compatible endpoints need the optional 'openai' package",
                           hint="pip install 'sandmle[openai]'") from None
        self.model, self.base_url, self.price = model, base_url, price
        self.client = openai.OpenAI(base_url=base_url, api_key=os.environ.get(api_key_env) or "EMPTY",
                                    max_retries=max_retries, timeout=timeout_s)
        self._errors = (openai.APIStatusError, openai.APIConnectionError)

    def chat(self, turns: Sequence[ChatTurn], *, system: Sequence[str] = (), model: str | None = None,
             max_tokens: int | None = None, temperature: float | None = None,
             seed: int | None = None) -> ChatReply:
        """One chat-completions call; the ``system`` parts are joined into one system message."""
        model = model or self.model
        text = "\n\n".join(part for part in system if part)
        kwargs: dict = {"model": model,
                        "messages": ([{"role": "system", "content": text}] if text else []) + list(turns)}
        for key, value in (("max_tokens", max_tokens), ("temperature", temperature), ("seed", seed)):
            if value is not None:
                kwargs[key] = value
        start = time.perf_counter()
        raw = sdk_call(self.client.chat.completions.with_raw_response.create, kwargs, self._errors,
                       api="OpenAI-compatible endpoint", where=self.base_url)
        resp = raw.parse()
        u = resp.usage
        cached = (getattr(u.prompt_tokens_details, "cached_tokens", 0) or 0) if u and u.prompt_tokens_details else 0
        tokens = {"input_tokens": (u.prompt_tokens - cached) if u else 0,
                  "output_tokens": u.completion_tokens if u else 0, "cache_read_tokens": cached}
        usage = Usage(self.provider, resp.model or model, **tokens, cost_usd=cost_usd(self.price, **tokens),
                      retries=int(raw.retries_taken), wall_s=round(time.perf_counter() - start, 3))
        return ChatReply(resp.choices[0].message.content or "", usage)

    def close(self) -> None:
        self.client.close()
