"""The audit at the doors an environment comes in by without synthesis: a folder given to eval or rollout, an
MLE-bench competition (evaluated, or imported with ``seeds import``), any other import. The bar is the
environment's own leaderboard (its lowest rewarded tier: the bronze threshold); the report is cached beside the imported copies, keyed by the
files, the grading spec and the bar, so a competition is audited once until it changes."""

from __future__ import annotations

import atexit
import functools
import hashlib
import json
from pathlib import Path

from ...envs.layout import EnvSpec
from ...config import load_settings
from ...errors import ExploitFound
from ...sandbox import SandboxBackend, get_backend
from ..grade import env_thresholds
from .files import file_hashes
from .lookup import probe_digest, run_lookup
from .report import AuditReport
from .run import audit


@functools.lru_cache(maxsize=1)
def default_sandbox() -> SandboxBackend:
    """The sandbox the settings name (``[sandbox]``), kept for this process: where the lookup probe runs when the
    caller has none at hand (an imported competition, a folder given to eval). Runs are not recorded (no store)."""
    backend = get_backend(settings=load_settings().sandbox)
    atexit.register(backend.close)
    return backend


def audit_env(env: EnvSpec, *, strong: float | None = None, declared: list[str] | None = None,
              cache: str | Path | None = None, screen_strong: float | None = None,
              sandbox: SandboxBackend | None = None, lookup: bool = True) -> AuditReport:
    """The audit of one environment folder against its leaderboard's bronze threshold (and ``strong``, where a
    reference solution was run; ``screen_strong``, its proxy score where the environment is graded by its own
    evaluator), with the lookup probe run as agent code in ``sandbox`` (default: the sandbox the settings name);
    reused from ``cache`` while nothing it depends on changed."""
    th = env_thresholds(env)
    medal = th.bronze if th is not None else None
    key = hashlib.sha256(json.dumps([file_hashes(env.dir), env.grade.to_dict(), medal, strong, declared,
                                     screen_strong, env.grade.evaluator_code, lookup and probe_digest()],
                                    sort_keys=True, default=str).encode()).hexdigest()
    path = Path(cache) / f"{env.id}.json" if cache is not None else None
    if path is not None and path.is_file():
        try:
            data = json.loads(path.read_text())
            if data.get("key") == key:
                return AuditReport.from_dict(data["report"])
        except (ValueError, KeyError, TypeError):
            pass
    found = run_lookup(env.dir, env.grade, sandbox or default_sandbox()) if lookup else None
    report = audit(env.dir, env.grade, medal=medal, strong=strong, declared=declared, screen_strong=screen_strong,
                   lookup=found)
    if path is not None and not any(f.kind == "error" for f in report.findings):  # a failure is tried again
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"key": key, "report": report.to_dict()}, default=str))
    return report


def require_clean(env: EnvSpec, report: AuditReport, what: str = "environment") -> None:
    """Refuse an environment the audit found a way to win without learning (one line naming the file and the
    column)."""
    if report.findings:
        raise ExploitFound(f"{what} {env.id} refused by the exploit audit: {report.reason()}",
                           hint="see docs/audit.md; `sandmle envs audit` lists every finding of a stored one")
