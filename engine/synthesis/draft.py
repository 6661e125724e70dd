"""The working state of one environment on its way through the roles (:class:`Draft`): what each role has made so
far — blueprint, scenario, program, grading spec, proof, verdict — and how many calls each has had. Storing it is
:mod:`.record`."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..envs.layout import GradeSpec
from ..errors import SynthesisError
from .contracts import Blueprint, GeneratorProgram, Scenario
from .verifier import Verdict


@dataclass
class Draft:
    env_id: str
    #: the private build folder; ``final_dir`` (``envs/<id>``) once stored
    env_dir: Path
    final_dir: Path
    rng: np.random.Generator
    #: the environment's number in its synthesis batch
    index: int = 0
    #: the title when there is no scenario (a program brought with ``sandmle envs add``)
    title: str | None = None
    blueprint: Blueprint | None = None
    scenario: Scenario | None = None
    metric: str | None = None
    program: GeneratorProgram | None = None
    data_seed: int | None = None
    spec: GradeSpec | None = None
    proof: dict[str, Any] | None = None
    verdict: Verdict | None = None
    programs_run: int = 0
    #: role → calls made so far (numbers the stored attempts)
    calls: dict[str, int] = field(default_factory=dict)

    @property
    def grading(self) -> GradeSpec:
        """The grading spec, once the program's output has passed the layout checks."""
        if self.spec is None:
            raise SynthesisError(f"{self.env_id}: no grading spec yet (the program's output was not checked)")
        return self.spec

    def next_call(self, role: str) -> int:
        self.calls[role] = self.calls.get(role, 0) + 1
        return self.calls[role]
