"""Who answers the synthesis roles, behind one small interface (:class:`SynthesisBackend`): ``procedural``
(templates: offline, deterministic, no LLM) and a chat backend for ``anthropic`` (official SDK) and ``openai`` (any
OpenAI-compatible endpoint), listed in :data:`engine.backends.SYNTHESIS_BACKENDS`. The provider clients
(``engine.llm``) import their SDKs only when they are built."""

from __future__ import annotations

from ...backends import SYNTHESIS_BACKENDS
from ...config import Settings
from ...errors import SynthesisError
from .base import Completion, MalformedOutput, SynthesisBackend, extract_json
from .chat import ChatBackend
from .procedural import ProceduralBackend


def get_synthesis_backend(name: str, settings: Settings | None = None) -> SynthesisBackend:
    """The backend ``name`` of :data:`engine.backends.SYNTHESIS_BACKENDS`, built from the full ``settings``."""
    if name not in SYNTHESIS_BACKENDS:
        raise SynthesisError(SYNTHESIS_BACKENDS.unknown(name))
    return SYNTHESIS_BACKENDS.get(name).load()(settings or Settings())


__all__ = ["ChatBackend", "Completion", "MalformedOutput", "ProceduralBackend", "SynthesisBackend", "extract_json",
           "get_synthesis_backend"]
