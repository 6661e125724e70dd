"""A seed and its folder format: parse and validate ``seed.toml`` + ``description.md``. Every problem is a
:class:`SeedError` naming the file and the key."""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Mapping

from ..errors import SeedError
from ..grading.metrics import METRICS

MODALITIES = ("tabular", "text", "image", "timeseries", "audio", "sequence")
TASK_TYPES = ("binary", "multiclass", "regression", "multi_target_regression", "multilabel", "ordinal")
DTYPES = ("int", "float", "category", "text", "bool", "datetime", "path")
ROLES = ("id", "feature", "target", "group", "time", "media")
ID_RE = re.compile(r"^[a-z0-9][a-z0-9-]*$")

_TOP_KEYS: dict[str, tuple[type | tuple, bool]] = {
    "id": (str, True),
    "title": (str, True),
    "modality": (str, True),
    "task_type": (str, True),
    "metric": (str, True),
    "direction": (str, False),
    "id_column": (str, True),
    "target_columns": (list, True),
    "origin": (str, False),
    "tags": (list, False),
    "size": (dict, True),
    "columns": (list, True),
    "hints": (dict, False),
}
_COLUMN_KEYS = {"name": (str, True), "dtype": (str, True), "role": (str, True),
                "description": (str, False), "values": (list, False)}
_HINT_KEYS: dict[str, type | tuple] = {
    "class_balance": (float, int), "n_classes": int, "missing_rate": (float, int), "high_cardinality": list,
    "free_text": list, "temporal": bool, "groups": str, "label_noise": (float, int), "shift": bool,
    "image_size": int, "sequence_length": int, "notes": str, "id_in_test": bool,
}


@dataclass
class Seed:
    id: str
    title: str
    modality: str
    task_type: str
    metric: str
    lower_is_better: bool
    id_column: str
    target_columns: list[str]
    columns: list[dict[str, Any]]
    train_size: int
    test_size: int
    description: str
    origin: str | None = None
    tags: list[str] = field(default_factory=list)
    hints: dict[str, Any] = field(default_factory=dict)
    source_path: str | None = None
    source_format: str = "sandmle"
    leaderboard: list[float] | None = None

    def content_hash(self) -> str:
        body = {k: v for k, v in asdict(self).items() if k not in ("source_path",)}
        return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()

    def to_row(self) -> dict[str, Any]:
        row = asdict(self)
        row["lower_is_better"] = int(self.lower_is_better)
        row["content_hash"] = self.content_hash()
        return row

    @classmethod
    def from_row(cls, row: Mapping[str, object]) -> "Seed":
        names = {f for f in cls.__dataclass_fields__}
        data: dict[str, Any] = {k: v for k, v in row.items() if k in names}  # the columns, as the table types them
        data["lower_is_better"] = bool(data["lower_is_better"])
        return cls(**data)


def _type_name(t: type | tuple) -> str:
    names = {str: "a string", list: "a list", dict: "a table", int: "an integer", float: "a number", bool: "true/false"}
    if isinstance(t, tuple):
        return names.get(t[0], t[0].__name__)
    return names.get(t, t.__name__)


def _check_type(value: Any, t: type | tuple) -> bool:
    if isinstance(value, bool) and t is not bool and (t is int or (isinstance(t, tuple) and bool not in t)):
        return False
    return isinstance(value, t)


def _check_keys(data: dict, spec: dict, where: str, file: Path) -> None:
    for key in data:
        if key not in spec:
            raise SeedError(f"{file}: unknown key {where}{key!r}", hint=f"allowed: {', '.join(spec)}")
    for key, (t, required) in spec.items():
        if key not in data:
            if required:
                raise SeedError(f"{file}: missing required key {where}{key!r}")
            continue
        if not _check_type(data[key], t):
            raise SeedError(f"{file}: key {where}{key!r} must be {_type_name(t)}, got {type(data[key]).__name__}")


def parse_seed_toml(data: dict[str, Any], file: Path, description: str) -> Seed:
    _check_keys(data, _TOP_KEYS, "", file)
    if not ID_RE.match(data["id"]):
        raise SeedError(f"{file}: key 'id' = {data['id']!r} must match [a-z0-9][a-z0-9-]*")
    for key, allowed in (("modality", MODALITIES), ("task_type", TASK_TYPES)):
        if data[key] not in allowed:
            raise SeedError(f"{file}: key {key!r} = {data[key]!r} is not one of {', '.join(allowed)}")
    if data["metric"] not in METRICS:
        raise SeedError(f"{file}: key 'metric' = {data['metric']!r} is not a known metric",
                        hint=f"known: {', '.join(sorted(METRICS))}")
    lower = METRICS[data["metric"]].lower_is_better
    direction = data.get("direction")
    if direction is not None:
        if direction not in ("maximize", "minimize"):
            raise SeedError(f"{file}: key 'direction' = {direction!r} must be 'maximize' or 'minimize'")
        if (direction == "minimize") != lower:
            raise SeedError(f"{file}: key 'direction' = {direction!r} disagrees with metric {data['metric']!r}")
    size = data["size"]
    _check_keys(size, {"train": (int, True), "test": (int, True)}, "size.", file)
    for key in ("train", "test"):
        if size[key] <= 0:
            raise SeedError(f"{file}: key 'size.{key}' must be > 0")
    columns = data["columns"]
    if not columns:
        raise SeedError(f"{file}: key 'columns' must list at least the id and target columns")
    names = []
    for i, col in enumerate(columns):
        if not isinstance(col, dict):
            raise SeedError(f"{file}: key 'columns[{i}]' must be a table")
        _check_keys(col, _COLUMN_KEYS, f"columns[{i}].", file)
        if col["dtype"] not in DTYPES:
            raise SeedError(f"{file}: key 'columns[{i}].dtype' = {col['dtype']!r} is not one of {', '.join(DTYPES)}")
        if col["role"] not in ROLES:
            raise SeedError(f"{file}: key 'columns[{i}].role' = {col['role']!r} is not one of {', '.join(ROLES)}")
        names.append(col["name"])
    if len(set(names)) != len(names):
        raise SeedError(f"{file}: key 'columns' names a column twice")
    by_name = {c["name"]: c for c in columns}
    if data["id_column"] not in by_name or by_name[data["id_column"]]["role"] != "id":
        raise SeedError(f"{file}: key 'id_column' = {data['id_column']!r} must name a column with role 'id'")
    targets = data["target_columns"]
    if not targets or not all(isinstance(t, str) for t in targets):
        raise SeedError(f"{file}: key 'target_columns' must be a non-empty list of strings")
    for t in targets:
        if t not in by_name or by_name[t]["role"] != "target":
            raise SeedError(f"{file}: key 'target_columns' entry {t!r} must name a column with role 'target'")
    hints = data.get("hints", {})
    for key, value in hints.items():
        if key not in _HINT_KEYS:
            raise SeedError(f"{file}: unknown key 'hints.{key}'", hint=f"allowed: {', '.join(_HINT_KEYS)}")
        if not _check_type(value, _HINT_KEYS[key]):
            raise SeedError(f"{file}: key 'hints.{key}' must be {_type_name(_HINT_KEYS[key])}")
    for key in ("class_balance", "missing_rate", "label_noise"):
        if key in hints and not (0 <= hints[key] < 1):
            raise SeedError(f"{file}: key 'hints.{key}' must be in [0, 1)")
    tags = data.get("tags", [])
    if not all(isinstance(t, str) for t in tags):
        raise SeedError(f"{file}: key 'tags' must be a list of strings")
    if not description.strip():
        raise SeedError(f"{file.parent / 'description.md'}: the description is empty")
    return Seed(
        id=data["id"], title=data["title"], modality=data["modality"], task_type=data["task_type"],
        metric=data["metric"], lower_is_better=lower, id_column=data["id_column"], target_columns=list(targets),
        columns=columns, train_size=size["train"], test_size=size["test"], description=description,
        origin=data.get("origin"), tags=list(tags), hints=dict(hints), source_path=str(file.parent),
    )


def load_seed_folder(folder: str | Path) -> Seed:
    """Parse one seed folder of our format (``seed.toml`` + ``description.md``)."""
    folder = Path(folder)
    toml_path = folder / "seed.toml"
    if not toml_path.is_file():
        raise SeedError(f"{folder}: no seed.toml here (and no MLE-bench config.yaml)")
    try:
        data = tomllib.loads(toml_path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise SeedError(f"{toml_path}: invalid TOML: {exc}") from None
    except UnicodeDecodeError:
        raise SeedError(f"{toml_path}: not UTF-8 text") from None
    desc_path = folder / "description.md"
    if not desc_path.is_file():
        raise SeedError(f"{desc_path}: missing (every seed needs a description.md)")
    return parse_seed_toml(data, toml_path, desc_path.read_text(encoding="utf-8"))
