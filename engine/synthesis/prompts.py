"""Role prompts for the LLM backends: a system message naming the role and its output schema, and a user message
with the structured inputs (as JSON) plus an example of the exact output shape. The procedural backend ignores
the text and uses the context directly; the prompt is still stored with every attempt."""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from ..grading.metrics import METRICS
from .blueprint import Blueprint
from .designer import design

SYSTEM = {
    "analyst": "You are the Analyst of a team that builds machine-learning engineering tasks. From a seed task "
               "you extract its blueprint: the technical traits every imitation must keep.",
    "designer": "You are the Designer. Given a blueprint, invent a NEW scenario in a different domain that keeps the "
                "blueprint's modality, task type, metric and difficulty traits. Column names are snake_case.",
    "engineer": "You are the Data engineer. You set the difficulty knobs of a data generator so that the planted "
                "signal is learnable from 50-200 training rows but not trivially (no perfect score).",
    "grader": "You are the Grader. You choose the metric from the shared metric library that fits the blueprint.",
}
FOOTER = "Answer with exactly one JSON object (no prose), in a ```json fenced block."


def _example_scenario(context: dict[str, Any]) -> dict[str, Any]:
    return design(Blueprint.from_dict(context["blueprint"]), context["seed"], np.random.default_rng(0))


def render(role: str, context: dict[str, Any], feedback: str | None = None) -> tuple[str, str]:
    seed = context["seed"]
    card = {k: seed[k] for k in ("id", "title", "modality", "task_type", "metric", "id_column", "target_columns",
                                 "columns", "train_size", "test_size", "hints") if k in seed}
    parts: list[str] = []
    if role == "analyst":
        fields = {k: f.type for k, f in Blueprint.__dataclass_fields__.items()}
        parts += ["Seed task card:", json.dumps(card, indent=1, default=str),
                  "Seed description:", str(seed.get("description", ""))[:3000],
                  "Return the blueprint with these fields (types as Python hints): " + json.dumps(fields)]
    elif role == "designer":
        parts += ["Blueprint:", json.dumps(context["blueprint"], indent=1),
                  f"The seed's own domain ({seed['title']}) is not allowed.",
                  "Example of the exact output shape (use a different domain, names and classes):",
                  json.dumps(_example_scenario(context), indent=1, default=str)]
    elif role == "engineer":
        sc = context.get("scenario") or {}
        parts += ["Blueprint:", json.dumps(context["blueprint"], indent=1),
                  "Scenario (summary):", json.dumps({k: sc.get(k) for k in ("domain", "title", "target_columns",
                                                                             "classes", "n_train", "n_test")},
                                                    default=str),
                  "Return {\"signal\": 0.05-5 (strength of the planted signal; ~1 is typical), \"noise\": 0-3, "
                  "\"label_noise\": 0-0.3, \"missing_rate\": 0-0.5, \"shift\": 0-2 (train/test drift)}."]
        if context.get("previous"):
            parts += ["Your previous knobs:", json.dumps(context["previous"]),
                      f"Verifier verdict: {context.get('feedback') or 'n/a'}"]
    elif role == "grader":
        parts += ["Blueprint:", json.dumps(context["blueprint"], indent=1),
                  "Metric library: " + ", ".join(f"{m.name} ({m.description})" for m in METRICS.values()),
                  "Return {\"metric\": NAME}."]
    if feedback:
        parts += ["Your previous answer was rejected: " + feedback]
    parts.append(FOOTER)
    return SYSTEM.get(role, "You are a member of a synthesis team.") + " " + FOOTER, "\n\n".join(parts)
