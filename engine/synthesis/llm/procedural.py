"""The ``procedural`` backend: every role from templates and parametrized generators — offline, no LLM,
deterministic for a given RNG (carried in the request context)."""

from __future__ import annotations

from typing import Any

from ..blueprint import Blueprint, analyze
from ..designer import design
from ..engineer import difficulty
from .base import Completion, LLMBackend


class ProceduralBackend(LLMBackend):
    name = "procedural"

    def complete(self, role: str, system: str, prompt: str, *, context: dict[str, Any]) -> Completion:
        rng = context["rng"]
        if role == "analyst":
            data = analyze(context["seed"]).to_dict()
        elif role == "designer":
            data = design(Blueprint.from_dict(context["blueprint"]), context["seed"], rng)
        elif role == "engineer":
            data = difficulty(Blueprint.from_dict(context["blueprint"]), rng)
            prev = context.get("previous")
            if prev:
                # feedback from the verifier: scale the signal, keep the rest
                data = dict(prev)
                data["signal"] = round(min(4.5, max(0.1, float(prev["signal"]) * float(context.get("signal_factor", 1.0)))), 4)
        elif role == "grader":
            data = {"metric": context["blueprint"]["metric"]}
        else:
            raise ValueError(f"the procedural backend has no role {role!r}")
        return Completion(data=data, text="", usage={"backend": self.name})
