"""Trajectories as an HF-datasets-compatible file (JSONL or Parquet) for SFT elsewhere.

One row per trajectory: identifiers, outcome columns (reward, valid, medal, score), ``messages`` (a list of
``{role, content}`` in chat format: tool observations keep the role ``tool``) and JSON text columns for the grade
report and reward breakdown, so every row has the same schema. ``datasets.load_dataset("json" | "parquet",
data_files=PATH)`` loads it as is.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

from store import Store
from store.common import JSON
from store.trajectories import Trajectory

from ..errors import SandmleError

FORMATS = ("jsonl", "parquet")


def trajectory_record(traj: Trajectory, *, with_tokens: bool = False) -> dict[str, JSON]:
    g = traj.grade or {}
    messages: list[JSON] = [{"role": t.role, "content": t.text} for t in traj.turns]
    rec: dict[str, JSON] = {
        "id": traj.id, "env_id": traj.env_id, "run_id": traj.run_id, "policy": traj.policy,
        "scaffold": traj.scaffold, "rng_seed": traj.rng_seed, "status": traj.status,
        "reward": traj.reward, "valid": bool(g.get("valid_submission")),
        "any_medal": bool(g.get("any_medal")), "gold": bool(g.get("gold_medal")),
        "score": g.get("score"), "rank": g.get("rank", g.get("human_rank")), "board": g.get("board"),
        "terminated": traj.terminated, "truncated": traj.truncated,
        "timed_out": traj.timed_out, "n_turns": len(messages), "messages": messages,
        "well_formed": [t.well_formed for t in traj.turns if t.role == "assistant"],
        "grade": json.dumps(g, sort_keys=True), "reward_breakdown": json.dumps(traj.reward_breakdown,
                                                                            sort_keys=True, default=str),
    }
    if with_tokens:
        rec["token_ids"] = [list(t.token_ids or []) for t in traj.turns]
    return rec


def iter_records(store: Store, *, with_tokens: bool = False, **filters: Any) -> Iterator[dict[str, JSON]]:
    for head in store.trajectories.list(**filters):
        yield trajectory_record(store.trajectories.get(head.id), with_tokens=with_tokens)


def export_trajectories(store: Store, path: str | Path, *, fmt: str | None = None, with_tokens: bool = False,
                        only_valid: bool = False, **filters: Any) -> int:
    """Write the selected trajectories to ``path`` (format from ``fmt`` or the suffix); returns the row count."""
    path = Path(path)
    fmt = fmt or ("parquet" if path.suffix == ".parquet" else "jsonl")
    if fmt not in FORMATS:
        raise SandmleError(f"unknown export format {fmt!r}; expected jsonl or parquet")
    records = [r for r in iter_records(store, with_tokens=with_tokens, **filters) if r["valid"] or not only_valid]
    if not records:
        raise SandmleError("no trajectory matches the filters", hint="see `sandmle trajectories list`")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".part")
    if fmt == "jsonl":
        with open(tmp, "w", encoding="utf-8") as f:
            for r in records:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
    else:
        import pyarrow as pa  # optional: only for Parquet exports
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pylist(records), tmp)
    tmp.replace(path)
    return len(records)
