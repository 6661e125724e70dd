"""LLM backends behind one small interface (:class:`LLMBackend`): ``procedural`` (offline, deterministic),
``anthropic`` (official SDK) and ``openai`` (any OpenAI-compatible endpoint; optional extra)."""

from .base import Completion, LLMBackend, MalformedOutput, extract_json, get_llm

__all__ = ["Completion", "LLMBackend", "MalformedOutput", "extract_json", "get_llm"]
