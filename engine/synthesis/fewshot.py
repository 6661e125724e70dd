"""Few-shot examples for the Designer and the Data engineer: verified generator programs with their scenarios,
one per kind of data (``examples/``), chosen by the blueprint's modality. Each is a complete program under the
generator contract (``tests/test_synth_add.py::test_every_few_shot_example_verifies_against_its_seed`` verifies
every one)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from .contracts import Scenario

EXAMPLES_DIR = Path(__file__).resolve().parent / "examples"


@dataclass(frozen=True)
class Example:
    name: str
    metric: str
    task_type: str
    #: a shipped seed whose blueprint this example fits (the test verifies it against that seed)
    seed_id: str

    @property
    def path(self) -> Path:
        return EXAMPLES_DIR / f"{self.name}.py"

    def program(self) -> str:
        return self.path.read_text(encoding="utf-8")

    @property
    def scenario(self) -> Scenario:
        return _scenario(self.name)


@cache
def _scenario(name: str) -> Scenario:
    return Scenario.model_validate(json.loads((EXAMPLES_DIR / f"{name}.json").read_text(encoding="utf-8")))


EXAMPLES = {
    "bike_docks": Example("bike_docks", "rmse", "regression", "taxi-fare"),
    "recipe_cuisine": Example("recipe_cuisine", "log_loss", "multiclass", "author-style"),
    "panel_debris": Example("panel_debris", "roc_auc", "binary", "cactus-aerial"),
    "hive_piping": Example("hive_piping", "roc_auc", "binary", "whale-calls"),
}

#: modality → examples shown (the first one is also the Designer's shape example)
BY_MODALITY = {
    "tabular": ["bike_docks"], "text": ["recipe_cuisine", "bike_docks"], "image": ["panel_debris"],
    "audio": ["hive_piping"], "timeseries": ["hive_piping", "bike_docks"],
}


def examples_for(modality: str) -> list[Example]:
    return [EXAMPLES[n] for n in BY_MODALITY.get(modality, ["bike_docks"])]
