"""The LLM backend interface: a role sends a prompt and gets back a JSON object plus usage (tokens, cost)."""

from __future__ import annotations

import abc
import json
import re
from dataclasses import dataclass, field
from typing import Any

from ...errors import SynthesisError


class MalformedOutput(SynthesisError):
    """The model's answer is not the JSON object the role asked for (the role retries with this message)."""


@dataclass
class Completion:
    data: dict[str, Any]
    text: str = ""
    usage: dict[str, Any] = field(default_factory=dict)


class LLMBackend(abc.ABC):
    name: str = ""

    @abc.abstractmethod
    def complete(self, role: str, system: str, prompt: str, *, context: dict[str, Any]) -> Completion:
        """Answer one role request. ``context`` carries the structured inputs (seed, blueprint, scenario, rng,
        feedback) that a procedural backend uses directly and an LLM sees rendered in ``prompt``."""

    def close(self) -> None:
        """Release clients."""


def extract_json(text: str) -> dict[str, Any]:
    """The first JSON object in a model's answer (a ```json fence or a bare {...}); MalformedOutput otherwise."""
    candidates = re.findall(r"```(?:json)?\s*(\{.*?\})\s*```", text, flags=re.S)
    if not candidates:
        start = text.find("{")
        end = text.rfind("}")
        if start >= 0 and end > start:
            candidates = [text[start:end + 1]]
    for c in candidates:
        try:
            data = json.loads(c)
        except ValueError:
            continue
        if isinstance(data, dict):
            return data
    snippet = text.strip().replace("\n", " ")[:120]
    raise MalformedOutput(f"the answer holds no JSON object: {snippet!r}")


#: USD per million tokens (input, output); unknown models cost the default
PRICES: dict[str, tuple[float, float]] = {
    "claude-sonnet-4-5": (3.0, 15.0), "claude-opus-4-1": (15.0, 75.0), "claude-haiku-4-5": (1.0, 5.0),
    "claude-3-5-haiku-latest": (0.8, 4.0),
}
DEFAULT_PRICE = (3.0, 15.0)


def cost_usd(model: str, input_tokens: int, output_tokens: int, prices: dict | None = None) -> float:
    p = (prices or PRICES).get(model)
    if p is None:
        p = next((v for k, v in (prices or PRICES).items() if model.startswith(k)), DEFAULT_PRICE)
    return round(input_tokens / 1e6 * p[0] + output_tokens / 1e6 * p[1], 6)
