"""The synthesis backend interface: a role request in, the role's JSON answer out (plus usage: tokens, cost)."""

from __future__ import annotations

import abc
import json
import re
from dataclasses import dataclass
from typing import Any

from ...errors import SynthesisError
from ...llm import Usage
from ..roles import RoleRequest


class MalformedOutput(SynthesisError):
    """The model's answer holds no JSON object (the role is asked again with this message)."""

    def __init__(self, message: str, *, text: str = "", usage: Usage | None = None):
        super().__init__(message)
        self.text, self.usage = text, usage


@dataclass
class Completion:
    data: dict[str, Any]
    text: str = ""
    usage: Usage | None = None


class SynthesisBackend(abc.ABC):
    name: str = ""

    @abc.abstractmethod
    def complete(self, request: RoleRequest) -> Completion:
        """Answer one role request: an LLM reads ``request.system`` and ``request.prompt``; the procedural backend
        uses the typed ``request.context``."""

    def close(self) -> None:
        """Release clients."""


class OfflineBackend(SynthesisBackend):
    """A backend without a model (procedural, grounded): each role is answered by the method of its name
    (``analyst``, ``designer``, ``grader``, ``engineer``, ``describer``, ``reviewer``), from the typed context."""

    def complete(self, request: RoleRequest) -> Completion:
        return Completion(data=getattr(self, request.role)(request.context))


def extract_json(text: str) -> dict[str, Any]:
    """The first JSON object in a model's answer (a ```json fence or a bare {...}); MalformedOutput otherwise."""
    candidates = re.findall(r"```(?:json)?\s*(\{.*\})\s*```", text, flags=re.S)
    start, end = text.find("{"), text.rfind("}")
    if start >= 0 and end > start:
        candidates.append(text[start:end + 1])
    for c in candidates:
        try:
            data = json.loads(c)
        except ValueError:
            continue
        if isinstance(data, dict):
            return data
    snippet = text.strip().replace("\n", " ")[:120]
    raise MalformedOutput(f"the answer holds no JSON object: {snippet!r}", text=text)
