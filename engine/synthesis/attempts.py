"""What one synthesis attempt came to, and what ends a run. An environment's attempt ends as an
:class:`EnvOutcome` (verified, rejected with its reason, or an ``error`` that is no verdict); a run's are its
:class:`SynthReport`. An exception in one attempt's step rejects that attempt only — its reason is
:func:`one_line` of the exception after the step's name (:data:`STEP_ROLES`), its traceback goes in an ``error``
attempt of the step's role — unless it is the infrastructure failing (:func:`infrastructure`: the store, the disk,
memory), which ends the run."""

from __future__ import annotations

import errno
import traceback
from dataclasses import asdict, dataclass, field
from typing import Any

from store import StoreError

from .draft import Draft


@dataclass
class EnvOutcome:
    env_id: str
    seed_id: str
    status: str  #: verified | rejected | error (could not run: nothing stored)
    reason: str = ""
    wall_s: float = 0.0
    metric: str = ""
    strong: float | None = None
    trivial: float | None = None
    programs: int = 0  #: generator programs run
    cost_usd: float = 0.0
    #: rejected because a step raised: the step, and the traceback (also in the attempt's log, the ``error``
    #: attempt's output)
    failed_step: str = ""
    traceback: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class SynthReport:
    run_id: str
    seed_id: str
    backend: str
    outcomes: list[EnvOutcome] = field(default_factory=list)
    wall_s: float = 0.0
    stopped: bool = False
    stop_reason: str = ""
    usage: dict[str, Any] = field(default_factory=dict)

    @property
    def verified(self) -> list[EnvOutcome]:
        return [o for o in self.outcomes if o.status == "verified"]

    @property
    def errors(self) -> list[EnvOutcome]:
        """Attempts that could not run (an unreachable backend): not verdicts, nothing stored."""
        return [o for o in self.outcomes if o.status == "error"]

    @property
    def failed(self) -> list[EnvOutcome]:
        """Attempts rejected because a step raised (their tracebacks are in their ``error`` attempts)."""
        return [o for o in self.outcomes if o.failed_step]

    def summary(self) -> dict[str, Any]:
        n_ok, n_err = len(self.verified), len(self.errors)
        programs = sum(o.programs for o in self.outcomes)
        reasons = list(dict.fromkeys(o.reason for o in self.outcomes if o.status == "rejected"))
        return {"run_id": self.run_id, "seed_id": self.seed_id, "backend": self.backend,
                "attempted": len(self.outcomes), "verified": n_ok, "rejected": len(self.outcomes) - n_ok - n_err,
                "errors": n_err, "failed": len(self.failed), "reasons": reasons[:3], "wall_s": round(self.wall_s, 2),
                "verified_per_min": round(n_ok / self.wall_s * 60, 2) if self.wall_s > 0 else 0.0,
                "programs": programs, "programs_per_verified": round(programs / n_ok, 2) if n_ok else None,
                "stopped": self.stopped, "stop_reason": self.stop_reason, "usage": self.usage}

    def to_dict(self) -> dict[str, Any]:
        return {**self.summary(), "environments": [o.to_dict() for o in self.outcomes]}


#: the errno of an OSError that says the data dir cannot take more (read-only, full): the infrastructure's
DISK_ERRNOS = frozenset({errno.EROFS, errno.ENOSPC, errno.EDQUOT})

#: the step of an attempt → the role its ``error`` attempt is recorded under
STEP_ROLES = {"analyst": "analyst", "designer (planning)": "designer", "grader": "grader", "engineer": "engineer",
              "generator run": "engineer", "output checks": "engineer", "grader proof": "grader",
              "verification": "verifier", "exploit audit": "verifier", "describer": "describer",
              "reviewer": "reviewer", "storing": "verifier"}


def infrastructure(exc: BaseException) -> bool:
    """Whether ``exc`` is the infrastructure failing (the store cannot be read or written, the disk is read-only
    or full, memory is gone) rather than one environment's attempt: such an exception ends the run."""
    if isinstance(exc, (StoreError, MemoryError)) or from_sqlite(exc):
        return True
    return isinstance(exc, OSError) and exc.errno in DISK_ERRNOS


def from_sqlite(exc: BaseException) -> bool:
    """Whether ``exc`` is SQLite's (the store owns SQL: the engine never imports sqlite3)."""
    return any(cls.__module__ in ("sqlite3", "_sqlite3") for cls in type(exc).__mro__)


def one_line(exc: BaseException, limit: int = 240) -> str:
    """``Type: message`` on one line (the message's lines joined), at most ``limit`` characters."""
    text = " ".join(str(exc).split())
    line = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return line if len(line) <= limit else line[: limit - 1] + "…"


def trace(exc: BaseException) -> str:
    """The whole traceback of ``exc``, as Python prints it."""
    return "".join(traceback.format_exception(exc))


def bare(draft: Draft) -> Draft:
    """``draft`` with only what any state of it can store (no scenario, program, spec, proof or verdict): what is
    stored when storing the draft itself failed."""
    return Draft(env_id=draft.env_id, env_dir=draft.env_dir, final_dir=draft.final_dir, rng=draft.rng,
                 index=draft.index, title=draft.scenario.title if draft.scenario else draft.title,
                 blueprint=draft.blueprint, data_seed=draft.data_seed, calls=draft.calls)
