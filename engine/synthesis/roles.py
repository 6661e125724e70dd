"""The role protocol: what each member of the synthesis team is asked and must answer.

A :class:`RoleRequest` has a stable system part (who the role is, the output contract with its JSON Schema and,
for the Data engineer, example programs: cached by providers that cache prompts) and a prompt with this request's
inputs (seed card, blueprint, scenario, realized data, the evidence against a previous program, the validation
errors of a previous answer). Its :class:`RoleContext` carries the same inputs typed, for backends that do not
read text (the procedural one).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from ..config import SynthesisRole
from ..envs.layout import GradeSpec
from ..grading.metrics import METRICS, get_metric
from .contracts import ROLE_CONTRACTS, Blueprint, GeneratorProgram, Scenario
from .evidence import Evidence
from .fewshot import examples_for
from .realized import DataSummary

Role = SynthesisRole
ROLES: tuple[Role, ...] = ("analyst", "designer", "grader", "engineer", "describer", "reviewer")
TITLES: dict[Role, str] = {"analyst": "Analyst", "designer": "Designer", "grader": "Grader",
                           "engineer": "Data engineer", "describer": "Describer", "reviewer": "Reviewer"}

TEAM = "of a team that builds micro-scale machine-learning engineering tasks (50-200 training rows) that imitate " \
       "a real seed task."

INSTRUCTIONS: dict[Role, str] = {
    "analyst": "From the seed task you extract its blueprint: the technical traits (modality, task type, metric, "
               "class balance, missing values, cardinality, free text, temporal order, groups, shift, media shape) "
               "that every imitation must keep. Modality, task type and metric are the seed's own.",
    "designer": "Given a blueprint you invent a NEW scenario in a different domain that keeps the blueprint's "
                "modality, task type, metric and difficulty traits — the same number of classes (n_classes) and "
                "about the same number and kinds of feature columns (n_numeric numeric, n_categorical categorical, "
                "free_text text columns, within 10 %) —: the entity a row describes, every feature "
                "column with its meaning, type and distribution, the target, and in words exactly how the target "
                "depends on the named columns (which raise it, which lower it, interactions, noise) so that domain "
                "reasoning helps. The seed's own domain and the domains already taken are not allowed.",
    "grader": "You choose the metric from the metric library that fits the blueprint (same kind of prediction and "
              "the same direction as the seed's metric). It is proven on the data afterwards.",
    "engineer": "You write generator.py: a complete, self-contained Python program that generates the scenario's "
                "data with the planted dependence the scenario describes in words.",
    "describer": "You write public/description.md for the task from the realized data: the columns, dtypes and "
                 "row counts you are given are the truth.",
    "reviewer": "You check that a task description agrees with the realized data: every column it names exists "
                "and every column of the data is named, the row counts, the metric and the exact submission "
                "header are right, and nothing is promised that the data lacks.",
}

GENERATOR_CONTRACT = """The generator contract (a program that breaks it is refused):
- Command line: `python generator.py --out DIR --seed S [--n-train N] [--n-test N]`; defaults give the
  scenario's sizes (50-200 training rows).
- It writes DIR/public/train.csv (id, features, targets), DIR/public/test.csv (id, features; no target),
  DIR/public/sample_submission.csv (the id and the prediction columns, a valid constant submission),
  media files if any under DIR/public/train/ and DIR/public/test/ (their relative paths in a column), and
  DIR/private/answers.csv (same columns as the sample submission, the true values). It writes no description.
- Ids are unique, shared by no two splits, and carry no information about the target (random, not sorted).
- Deterministic: the same --seed gives byte-identical files; all randomness from numpy's default_rng(seed).
- Imports: numpy, pandas, scikit-learn, scipy, Pillow and the standard library only; no network, no other files.
- Bounded: finishes in well under a minute and writes a few megabytes at most.
- The target depends on the named features exactly as the scenario says, with noise: learnable from the
  training rows, but no reference model may reach the metric's best (no single column may decide it).
- Submission format by metric: probability metrics (roc_auc, mean_columnwise_roc_auc) one probability column
  per target; log_loss one column per class, named exactly as the class labels, answers one-hot 0/1; label
  metrics (accuracy, f1_*, qwk) the label in the target column; regression metrics the value per target."""

#: the Designer sees the most recent domains already taken (near-duplicates are refused by fingerprint anyway)
TAKEN_SHOWN = 40

FOOTER = "Answer with exactly one JSON object that validates against the schema above, in a ```json fenced block."


@dataclass
class RoleContext:
    """The inputs of one role request, typed (which ones are set depends on the role)."""

    seed: Mapping[str, Any]
    rng: np.random.Generator
    blueprint: Blueprint | None = None
    scenario: Scenario | None = None
    metric: str | None = None
    #: designer: why earlier scenarios of this environment were refused
    refused: list[str] = field(default_factory=list)
    #: designer: domains of environments already stored for this seed
    taken_domains: list[str] = field(default_factory=list)
    #: engineer: its previous program and the evidence against it
    previous: GeneratorProgram | None = None
    evidence: Evidence | None = None
    #: describer / reviewer: the realized data, its grading spec, the description under review
    data: DataSummary | None = None
    spec: GradeSpec | None = None
    description: str | None = None
    #: describer: the reviewer's reasons against the previous description
    review_problems: list[str] = field(default_factory=list)
    #: designer: (the batch's seed, this environment's number in it): backends that share one choice across a batch
    #: (the grounded one gives each environment of a batch its own source dataset) read it
    slot: tuple[int, int] | None = None


@dataclass
class RoleRequest:
    role: Role
    system: list[str]
    prompt: str
    context: RoleContext


def role_of(system: str) -> Role:
    """Which role a system prompt addresses (its first sentence names it)."""
    m = re.match(r"You are the (.+?) " + re.escape(TEAM[:2]), system)
    title = m.group(1) if m else ""
    for role, t in TITLES.items():
        if t == title:
            return role
    raise ValueError(f"no role named in the system prompt {system[:80]!r}")


def seed_card(seed: Mapping[str, Any]) -> dict[str, Any]:
    return {k: seed[k] for k in ("id", "title", "modality", "task_type", "metric", "id_column", "target_columns",
                                 "columns", "train_size", "test_size", "hints") if k in seed}


def submission_columns(scenario: Scenario, metric: str) -> list[str]:
    """The sample submission's header the metric asks for."""
    if get_metric(metric).prediction == "proba":
        return [scenario.id_column, *(str(c) for c in scenario.classes or [])]
    return [scenario.id_column, *scenario.target_columns]


def _system(role: Role, ctx: RoleContext) -> list[str]:
    contract = ROLE_CONTRACTS[role]
    head = f"You are the {TITLES[role]} {TEAM} {INSTRUCTIONS[role]}"
    if role == "engineer":
        head += "\n\n" + GENERATOR_CONTRACT
    parts = [head + f"\n\nOutput schema ({contract.__name__}, JSON Schema):\n" + contract.schema_text() + "\n\n"
             + FOOTER]
    modality = ctx.blueprint.modality if ctx.blueprint else str(ctx.seed["modality"])
    if role == "engineer":
        parts.append("\n\n".join(
            f"Example (a verified {ex.metric} task; scenario, then generator.py):\n```json\n"
            + json.dumps(ex.scenario.for_prompt(), indent=1) + "\n```\n```python\n" + ex.program() + "```"
            for ex in examples_for(modality)))
    elif role == "designer":
        ex = examples_for(modality)[0]
        parts.append("Example of the exact output shape (use another domain, names and classes):\n```json\n"
                     + json.dumps(ex.scenario.for_prompt(), indent=1) + "\n```")
    return parts


def _prompt(role: Role, ctx: RoleContext) -> list[str]:
    blueprint_json = ctx.blueprint.model_dump_json(indent=1) if ctx.blueprint else ""
    scenario = json.dumps(ctx.scenario.for_prompt(), indent=1) if ctx.scenario else ""
    if role == "analyst":
        return ["Seed task card:", json.dumps(seed_card(ctx.seed), indent=1, default=str),
                "Seed description:", str(ctx.seed.get("description", ""))[:3000]]
    if role == "designer":
        taken = ctx.taken_domains[-TAKEN_SHOWN:]
        parts = ["Blueprint:", blueprint_json, f"Not allowed: the seed's own domain ({ctx.seed['title']})"
                 + (", and the domains already taken: " + "; ".join(taken) if taken else "") + "."]
        if ctx.refused:
            parts += ["Earlier scenarios for this task were refused:", "\n".join(f"- {r}" for r in ctx.refused),
                      "Design a different scenario that avoids these problems."]
        return parts
    if role == "grader":
        return ["Blueprint:", blueprint_json, "Scenario:", scenario, "Metric library: " + "; ".join(
            f"{m.name} ({m.description}; {'lower' if m.lower_is_better else 'higher'} is better)"
            for m in METRICS.values())]
    if role == "engineer":
        if ctx.scenario is None or ctx.metric is None:
            raise ValueError("the engineer needs the scenario and the metric")
        parts = ["Blueprint:", blueprint_json, "Scenario:", scenario,
                 f"Metric: {ctx.metric}. The sample submission's header must be: "
                 f"{','.join(submission_columns(ctx.scenario, ctx.metric))}"]
        if ctx.previous is not None and ctx.evidence is not None:
            parts += ["Your previous generator.py:", "```python\n" + ctx.previous.program + "\n```",
                      "It was refused. The evidence:", ctx.evidence.render(),
                      "Write a corrected, complete generator.py."]
        return parts
    if ctx.data is None or ctx.spec is None:
        raise ValueError(f"the {role} needs the realized data and its grading spec")
    facts = ["Realized data (the truth: columns with kind, dtype, where they appear, missing share, distinct values, "
             "examples; row counts; the submission header; label counts):", "```json\n" + ctx.data.to_json() + "\n```",
             f"Metric: {ctx.spec.metric} ({'lower' if ctx.spec.lower_is_better else 'higher'} is better)."]
    if role == "describer":
        parts = (["Scenario:", scenario] if ctx.scenario else []) + facts
        if ctx.review_problems:
            parts += ["The reviewer rejected your previous description:",
                      "\n".join(f"- {p}" for p in ctx.review_problems)]
        return parts + ["Name every column in backticks, give both row counts as '<n> rows', state the metric by "
                        "its name and show the submission header exactly."]
    return facts + ["Description under review:", str(ctx.description)]


def build_request(role: Role, ctx: RoleContext, feedback: list[str] | None = None) -> RoleRequest:
    parts = _prompt(role, ctx)
    if feedback:
        parts += ["Your previous answer was rejected:", "\n".join(f"- {f}" for f in feedback)]
    return RoleRequest(role, _system(role, ctx), "\n\n".join(parts), ctx)
