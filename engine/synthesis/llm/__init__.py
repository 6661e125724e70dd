"""LLM backends behind one small interface (:class:`LLMBackend`): ``procedural`` (offline, deterministic),
``anthropic`` (official SDK) and ``openai`` (any OpenAI-compatible endpoint; optional extra). Each backend imports
its SDK only when it is built."""

from __future__ import annotations

from ...errors import SynthesisError
from .anthropic_backend import AnthropicBackend
from .base import Completion, LLMBackend, MalformedOutput, extract_json
from .openai_backend import OpenAIBackend
from .procedural import ProceduralBackend


def get_llm(name: str, settings=None) -> LLMBackend:
    """A backend by name; ``settings`` is the full :class:`engine.config.Settings`."""
    if name == "procedural":
        return ProceduralBackend()
    if name == "anthropic":
        return AnthropicBackend(settings.anthropic if settings is not None else None)
    if name == "openai":
        return OpenAIBackend(settings.openai if settings is not None else None)
    raise SynthesisError(f"unknown synthesis backend {name!r}; expected procedural, anthropic or openai")


__all__ = ["Completion", "LLMBackend", "MalformedOutput", "extract_json", "get_llm"]
