"""``sandmle envs audit``: the exploit audit and the verifier's leakage probes rerun on stored environments —
after an upgrade of the audit, on environments stored before it existed, on environments whose files were
touched — with the findings of each, and optionally the environment marked rejected."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from store import Store

from ..envs.layout import AUDIT_CACHE, REAL_SPLIT, EnvSpec
from ..errors import SandmleError
from ..sandbox import SandboxBackend
from ..grading.audit import AuditReport, audit_env
from ..grading.audit.view import media_columns
from ..grading.score import read_frame, screening_spec
from ..synthesis.verifier import leakage
from .select import select_envs


@dataclass
class StoredAudit:
    env_id: str
    report: AuditReport
    #: what the verifier's leakage probes say now (not run on real competitions: they hold full-size data)
    probes: list[str] = field(default_factory=list)
    rejected: bool = False

    @property
    def lookup_line(self) -> str:
        """What the lookup probe saw from inside the agent's sandbox (one line), or why it did not run."""
        lk = self.report.lookup
        if not isinstance(lk, dict):
            return "lookup probe: not run"
        if lk.get("skipped"):
            return f"lookup probe not run: {lk['skipped']}"
        if lk.get("error"):
            return f"lookup probe failed: {lk['error']}"
        readable = lk.get("readable") or {}
        found = ", ".join(f"{f['dataset']} ({f['rows']:.0%} of the test rows)" for f in lk.get("found") or [])
        others = readable.get("package_files", 0) + readable.get("system_files", 0)
        return (f"lookup probe: {lk.get('data_packages', 0)} datasets readable from data packages, {others} other "
                f"tables; test rows found in {found or 'none'} ({lk.get('seconds', 0):.1f} s"
                + ("" if lk.get("complete", True) else ", incomplete") + ")")

    @property
    def lines(self) -> list[str]:
        return [f.line() for f in self.report.findings] + [f"verifier probe: {p}" for p in self.probes]

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.env_id, "lookup": self.report.lookup, "findings": [{**f.to_dict(), "line": f.line()} for f in self.report.findings],
                "probes": self.probes, "attempts": self.report.attempts, "candidates": self.report.candidates,
                "best": self.report.best, "bar": self.report.bar, "skipped": self.report.skipped,
                "wall_s": self.report.wall_s, "rejected": self.rejected}


def stored_value(data: object, *keys: str) -> object:
    """``data[k1][k2]…`` of a stored JSON value (a verification report), None where a level is missing."""
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None
    return data


def stored_ids(store: Store, selector: str | None) -> list[str]:
    """The stored environments a selector names (as ``eval --envs`` reads it; default: every verified one, the
    real competitions included). Folders are not stored: they are audited when they are used."""
    if selector is None:
        return [r["id"] for r in store.envs.list(status="verified")]
    for part in (p.strip() for p in selector.split(",") if p.strip()):
        if Path(part).expanduser().is_dir() or part.startswith("mlebench:"):
            raise SandmleError(f"{part}: envs audit reads stored environments (a folder is audited whenever eval, "
                               "rollout or seeds import uses it)", hint="give env ids, split:NAME, seed:ID, all or real")
    return [spec.id for spec in select_envs(store, selector)]


def audit_stored(store: Store, env_id: str, *, reject: bool = False,
                 sandbox: SandboxBackend | None = None) -> StoredAudit:
    """Audit one stored environment against its stored bronze threshold and strong reference, the lookup probe run
    as agent code in ``sandbox`` (default: the settings' sandbox); the new report replaces the stored one (so
    ``doctor --deep`` sees it). With ``reject``, one with findings is marked rejected (its files and rows stay)."""
    row = store.envs.get(env_id)
    env = EnvSpec.from_store(store, env_id)
    if not env.answers.is_file():
        raise SandmleError(f"environment {env_id}: no answers at {env.answers}")
    strong = stored_value(row["verification"], "report", "means", "strong")
    real = row["split"] == REAL_SPLIT
    cache = Path(store.data_dir) / "envs-imported" / AUDIT_CACHE if real else None
    screen = stored_value(row["verification"], "report", "screen_strong")  # graded by its own evaluator
    out = StoredAudit(env_id, audit_env(env, strong=float(strong) if isinstance(strong, (int, float)) else None,
                                        cache=cache, sandbox=sandbox,
                                        screen_strong=float(screen) if isinstance(screen, (int, float)) else None))
    verification = row["verification"]
    if not real and isinstance(verification, dict) and isinstance(verification.get("report"), dict):
        report: dict[str, Any] = dict(cast(dict[str, Any], verification["report"]))
        report["audit"] = out.report.to_dict()
        store.envs.update(env_id, verification={**verification, "report": report})
    if not real and (env.public / "train.csv").is_file() and (env.public / "test.csv").is_file():
        test = read_frame(env.public / "test.csv", env.grade.id_column)
        media = next(iter(media_columns(test, env.public)), None)
        _, out.probes = leakage(screening_spec(env.grade), env.public, read_frame(env.answers, env.grade.id_column),
                                media)
    if reject and out.lines and row["status"] != "rejected":
        store.envs.update(env_id, status="rejected", reason=f"exploit audit: {out.lines[0]}")
        out.rejected = True
    return out
