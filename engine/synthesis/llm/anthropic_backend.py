"""The ``anthropic`` backend: the official SDK (``anthropic.Anthropic``), model configurable, retries with
backoff on 429/5xx (the SDK's ``max_retries``), token usage and cost recorded per call."""

from __future__ import annotations

import os
import time
from typing import Any

from ...config import AnthropicSettings
from ...errors import InfrastructureError, SynthesisError
from .base import Completion, LLMBackend, cost_usd, extract_json


class AnthropicBackend(LLMBackend):
    name = "anthropic"

    def __init__(self, settings=None, *, client=None):
        self.settings = settings or AnthropicSettings()
        if client is None:
            try:
                import anthropic  # heavy optional dependency: loaded only when used
            except ImportError:
                raise SynthesisError("the anthropic backend needs the 'anthropic' package",
                                     hint="pip install anthropic") from None
            base_url = self.settings.base_url or os.environ.get("ANTHROPIC_BASE_URL")
            key = os.environ.get("ANTHROPIC_API_KEY")
            if not key:
                raise SynthesisError("the anthropic backend needs ANTHROPIC_API_KEY in the environment",
                                     hint="or use --backend procedural (offline)")
            client = anthropic.Anthropic(api_key=key, base_url=base_url, max_retries=self.settings.max_retries)
        self.client = client

    def complete(self, role: str, system: str, prompt: str, *, context: dict[str, Any]) -> Completion:
        import anthropic  # heavy optional dependency: loaded only when used

        model = self.settings.model
        start = time.perf_counter()
        try:
            raw = self.client.messages.with_raw_response.create(
                model=model, max_tokens=self.settings.max_tokens, system=system,
                messages=[{"role": "user", "content": prompt}],
            )
        except anthropic.APIStatusError as exc:
            raise InfrastructureError(
                f"anthropic API error {exc.status_code} for role {role}: {exc.message}") from None
        except anthropic.APIConnectionError as exc:
            raise InfrastructureError(f"cannot reach the anthropic API: {exc}") from None
        msg = raw.parse()
        text = "".join(getattr(b, "text", "") for b in msg.content)
        usage = {"backend": self.name, "model": msg.model or model, "input_tokens": msg.usage.input_tokens,
                 "output_tokens": msg.usage.output_tokens,
                 "cost_usd": cost_usd(model, msg.usage.input_tokens, msg.usage.output_tokens),
                 "retries": int(raw.retries_taken), "wall_s": round(time.perf_counter() - start, 3)}
        try:
            data = extract_json(text)
        except Exception as exc:
            exc.usage = usage  # type: ignore[attr-defined]
            exc.text = text  # type: ignore[attr-defined]
            raise
        return Completion(data=data, text=text, usage=usage)

    def close(self) -> None:
        close = getattr(self.client, "close", None)
        if close:
            close()
