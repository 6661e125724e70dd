"""Synthesis backends behind one small interface (:class:`LLMBackend`): ``procedural`` (offline, deterministic) and
a chat backend for ``anthropic`` (official SDK) and ``openai`` (any OpenAI-compatible endpoint; optional extra).
The provider clients (``engine.llm``) import their SDKs only when they are built."""

from __future__ import annotations

from typing import Any

from ...config import Settings
from ...errors import SynthesisError
from ...llm import clients
from .base import Completion, LLMBackend, MalformedOutput, extract_json
from .chat import ChatBackend
from .procedural import ProceduralBackend


def get_llm(name: str, settings: Settings | None = None) -> LLMBackend:
    """A backend by name; ``settings`` is the full :class:`engine.config.Settings`."""
    settings = settings or Settings()
    if name == "procedural":
        return ProceduralBackend()
    if name == "anthropic":
        client: Any = clients.anthropic(settings.anthropic)
    elif name == "openai":
        client = clients.openai(settings.openai)
    else:
        raise SynthesisError(f"unknown synthesis backend {name!r}; expected procedural, anthropic or openai")
    return ChatBackend(client, models=settings.synthesis.models, max_tokens=settings.synthesis.max_tokens)


__all__ = ["ChatBackend", "Completion", "LLMBackend", "MalformedOutput", "ProceduralBackend", "extract_json",
           "get_llm"]
