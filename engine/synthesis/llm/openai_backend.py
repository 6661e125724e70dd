"""The ``openai`` backend: any OpenAI-compatible chat endpoint (e.g. a local vLLM server). Optional extra:
``pip install sandmle[openai]``."""

from __future__ import annotations

import os
import time
from typing import Any

from ...config import OpenAISettings
from ...errors import InfrastructureError, SynthesisError
from .base import Completion, LLMBackend, extract_json


class OpenAIBackend(LLMBackend):
    name = "openai"

    def __init__(self, settings=None, *, client=None):
        self.settings = settings or OpenAISettings()
        if client is None:
            try:
                import openai  # heavy optional dependency: loaded only when used
            except ImportError:
                raise SynthesisError("the openai backend needs the optional 'openai' package",
                                     hint="pip install 'sandmle[openai]'") from None
            key = os.environ.get(self.settings.api_key_env) or "EMPTY"
            client = openai.OpenAI(api_key=key, base_url=self.settings.base_url, max_retries=4)
        self.client = client

    def complete(self, role: str, system: str, prompt: str, *, context: dict[str, Any]) -> Completion:
        import openai  # heavy optional dependency: loaded only when used

        start = time.perf_counter()
        try:
            resp = self.client.chat.completions.create(
                model=self.settings.model,
                messages=[{"role": "system", "content": system}, {"role": "user", "content": prompt}],
            )
        except openai.APIStatusError as exc:
            raise InfrastructureError(
                f"OpenAI-compatible API error {exc.status_code} for role {role}: {exc.message}") from None
        except openai.APIConnectionError as exc:
            raise InfrastructureError(f"cannot reach {self.settings.base_url}: {exc}") from None
        text = resp.choices[0].message.content or ""
        u = resp.usage
        usage = {"backend": self.name, "model": resp.model or self.settings.model,
                 "input_tokens": getattr(u, "prompt_tokens", 0) if u else 0,
                 "output_tokens": getattr(u, "completion_tokens", 0) if u else 0, "cost_usd": 0.0,
                 "wall_s": round(time.perf_counter() - start, 3)}
        try:
            data = extract_json(text)
        except Exception as exc:
            exc.usage = usage  # type: ignore[attr-defined]
            exc.text = text  # type: ignore[attr-defined]
            raise
        return Completion(data=data, text=text, usage=usage)
