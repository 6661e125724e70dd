"""Where an environment came from: synthesized from a seed (a backend's run), brought with ``sandmle envs add`` (a
hand-written generator program), imported from another layout (``sandmle envs import``: the paper's released
tasks), or a real competition. Imported environments record theirs in ``verification.provenance``
(``{"imported": "sandmle", "source": ..., "task": ...}``); the others are read from the row."""

from __future__ import annotations

from typing import Any

from store.envs import EnvironmentRow

from .layout import REAL_SPLIT

#: the ``backend`` column of an environment brought with ``sandmle envs add``
PROGRAM_BACKEND = "program"
#: the ``backend`` column of an environment imported in the paper's layout
IMPORTED_BACKEND = "imported"


def provenance(row: EnvironmentRow) -> dict[str, Any]:
    """The ids that say where an environment came from (what an export's index and task.toml record)."""
    stored = (row.get("verification") or {}).get("provenance")
    if isinstance(stored, dict):
        return {"origin": origin(row), **stored, "env_id": row["id"]}
    out: dict[str, Any] = {"origin": origin(row), "env_id": row["id"], "seed_id": row.get("seed_id"),
                           "run_id": row.get("run_id"), "backend": row.get("backend"), "rng_seed": row.get("rng_seed")}
    return {k: v for k, v in out.items() if v is not None}


def origin(row: EnvironmentRow) -> str:
    """``synthesized``, ``envs add``, ``imported: <layout>`` or ``real competition``: one word or two for a human."""
    stored = (row.get("verification") or {}).get("provenance")
    if isinstance(stored, dict) and stored.get("imported"):
        return f"imported: {stored['imported']}"
    if row.get("split") == REAL_SPLIT:
        return "real competition"
    if row.get("backend") == PROGRAM_BACKEND:
        return "envs add"
    return "synthesized"
