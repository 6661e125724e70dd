"""The procedural Data engineer: a scenario becomes a generator program, the template
``templates/generator.py`` (package data, read as text) with the environment's CONFIG written in (a self-contained script:
``python generator.py --out DIR --seed S``). Its difficulty knobs — signal strength, noise, label noise,
missingness, shift — are set here and adjusted on the Verifier's feedback. Running any generator program (this
one or an LLM's) is :mod:`.generator_run`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from ..envs.layout import GradeSpec
from ..errors import SynthesisError
from .blueprint import Blueprint
from .describe import write_description

#: the program every procedural environment runs, CONFIG left empty (a file, never imported)
TEMPLATE = Path(__file__).resolve().parent / "templates" / "generator.py"

SIGNAL_RANGE = {"tabular": (0.9, 1.5), "text": (0.8, 1.3), "image": (0.55, 0.9), "audio": (0.18, 0.4),
                "timeseries": (0.7, 1.2)}


def difficulty(blueprint: Blueprint, rng: np.random.Generator) -> dict[str, Any]:
    lo, hi = SIGNAL_RANGE.get(blueprint.modality, (0.8, 1.4))
    return {
        "signal": round(float(rng.uniform(lo, hi)), 4),
        "noise": round(float(rng.uniform(0.3, 0.8)), 4),
        "label_noise": round(float(blueprint.label_noise or rng.uniform(0.0, 0.05)), 4),
        "missing_rate": round(float(blueprint.missing_rate * rng.uniform(0.7, 1.3)) if blueprint.missing_rate else 0.0,
                              4),
        "shift": round(float(rng.uniform(0.3, 0.8)), 4) if blueprint.shift else 0.0,
    }


def build_config(blueprint: Blueprint, scenario: dict[str, Any], spec: GradeSpec,
                 knobs: dict[str, Any]) -> dict[str, Any]:
    cfg = {k: v for k, v in scenario.items()}
    cfg.update(knobs)
    cfg.update({"modality": blueprint.modality, "task_type": blueprint.task_type, "metric": spec.metric,
                "grade": spec.to_dict(), "nonnegative": blueprint.nonnegative_target})
    if blueprint.modality == "text":
        tx = dict(cfg["text"])
        tx["p_signal"] = round(0.09 * knobs["signal"], 4)
        tx["p_confuse"] = round(0.03, 4)
        cfg["text"] = tx
    cfg["description"] = write_description(scenario, spec.to_dict())
    return cfg


def render_program(config: dict[str, Any]) -> str:
    source = TEMPLATE.read_text(encoding="utf-8")
    marker = "CONFIG = None  # replaced by the Data engineer with the environment's configuration"
    if marker not in source:
        raise SynthesisError("the generator template lost its CONFIG marker")
    literal = json.dumps(config, indent=1, sort_keys=True, default=_jsonable, ensure_ascii=True)
    return source.replace(marker, "CONFIG = json.loads(r'''" + literal.replace("'", "\\u0027") + "''')")


def _jsonable(v: Any) -> Any:
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating,)):
        return float(v)
    if isinstance(v, np.ndarray):
        return v.tolist()
    raise TypeError(f"{type(v).__name__} is not JSON serialisable")
