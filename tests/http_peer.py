"""The local stand-in LLM server for tests (the real Anthropic / OpenAI SDKs talk to it over HTTP on 127.0.0.1):
:class:`JsonPeer` for hand-rolled answers, :class:`CannedLLM` for both wire formats (``engine/bench/_canned_llm.py``,
which ``sandmle bench synth`` uses too), and
:class:`RolePeer`, which answers each synthesis role from a script of hand-written fixtures and keeps the requests
each role received."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Callable

from engine.bench._canned_llm import CannedLLM, CannedRequest, JsonPeer
from engine.synthesis.roles import role_of

GENERATORS = Path(__file__).resolve().parent / "data" / "generators"

__all__ = ["GENERATORS", "CannedLLM", "CannedRequest", "JsonPeer", "RolePeer", "fixture"]


def fixture(name: str) -> str:
    """A hand-written fixture (a generator program, a scenario, a description) from tests/data/generators/."""
    return (GENERATORS / name).read_text(encoding="utf-8")


class RolePeer(CannedLLM):
    """Each role's answers in order (the last one repeats); an answer is a text or a function of the request."""

    def __init__(self, script: dict[str, list[str | Callable[[CannedRequest], str]]], *, fail_first: int = 0):
        super().__init__(self._route, fail_first=fail_first)
        self.script = script
        self.by_role: dict[str, list[CannedRequest]] = defaultdict(list)

    def _route(self, request: CannedRequest) -> str:
        role = role_of(request.system)
        with self.lock:
            self.by_role[role].append(request)
            answers = self.script[role]
            answer = answers[min(len(self.by_role[role]), len(answers)) - 1]
        return answer(request) if callable(answer) else answer
