"""The one guard in front of every resume (``runs resume`` of an eval, a GRPO or an SFT run): the run exists, is of
the kind the caller resumes, and has not finished."""

from __future__ import annotations

from store import Store
from store.runs import RunRow

from ..errors import SandmleError


def resumable(store: Store, run_id: str, kind: str) -> RunRow:
    """The ``runs`` row of ``run_id`` (an id or a unique prefix), when it is a ``kind`` run that has not finished;
    else one :class:`SandmleError` line saying which."""
    row = store.runs.get(run_id)
    if row["kind"] != kind:
        raise SandmleError(f"run {row['id']} is a {row['kind']} run, not a {kind} run")
    if row["status"] == "done":
        raise SandmleError(f"{kind} run {row['id']} already finished")
    return row
