"""A population board for an environment that comes in without a board of its own: an MLE-bench competition
folder with no ``leaderboard.csv``, an environment folder, a task of the real held-out suite.

Such an environment is graded like a synthetic one: its medals and rank come from the population of independent
reference solutions (:mod:`engine.synthesis.population`) run in the sandbox on its public files, one entry per
distinct submission. The board is built once and cached beside the imported copies
(``envs-imported/.board/<id>.json``), keyed by the files, the grading spec, the board version and the population's
program and plan (its reserve included), so it is rebuilt only when one of them changes: a board cached by an
older population (``population-1``, which counted copies) is never read again. A competition with a
real leaderboard keeps it (HumanRank); the paper's tasks keep their own thresholds (:mod:`engine.exchange`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, cast

from store import Store
from store.common import now

from ..config import Settings, load_settings
from ..envs.layout import AUDIT_CACHE, BOARD_VERSION, FIRST_VERSION, EnvSpec, board_outdated
from ..envs.storage import file_rows
from ..errors import SandmleError
from ..grading.audit import audit_env, file_hashes, require_clean
from ..grading.score import read_frame
from ..grading.thresholds import board_rank, thresholds
from ..sandbox import Limits, SandboxBackend, get_backend
from ..synthesis.population import (MIN_ENTRIES, POPULATION, RESERVE, plan_of, population_program, run_population,
                                    versioned)
from ..synthesis.solutions import with_solution_imports

#: the folder (beside the imported copies) where built boards are kept
BOARD_CACHE = ".board"
#: a real dataset's population may run far longer than one code step: at least this long
MIN_TIMEOUT_S = 3600.0


def board_key(env: EnvSpec) -> str:
    """What a built board depends on: the public files, the answers, the grading spec, the population."""
    answers = hashlib.sha256(env.answers.read_bytes()).hexdigest() if env.answers.is_file() else None
    program = hashlib.sha256(population_program().encode()).hexdigest()
    plan = plan_of(POPULATION, RESERVE, env.grade)
    return hashlib.sha256(json.dumps([file_hashes(env.dir), answers, env.grade.to_dict(), BOARD_VERSION, program,
                                      plan], sort_keys=True, default=str).encode()).hexdigest()


def cached_board(env: EnvSpec, cache_root: Path) -> list[dict[str, Any]] | None:
    path = cache_root / BOARD_CACHE / f"{env.id}.json"
    try:
        data = json.loads(path.read_text())
        if data.get("key") == board_key(env):
            return list(data["board"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return None


def ensure_board(env: EnvSpec, cache_root: str | Path, *, sandbox: SandboxBackend | None = None,
                 settings: Settings | None = None, note: Callable[[str], None] | None = None) -> EnvSpec:
    """``env`` with a board: its own when it has one, else its population board (built in the sandbox, or read
    from the cache), its thresholds from it and its public files audited again at its bronze threshold."""
    if env.leaderboard or env.thresholds:
        return env
    cache_root = Path(cache_root)
    board = cached_board(env, cache_root)
    if board is None:
        if note is not None:
            note(f"{env.id}: no leaderboard of its own; building its population board ({len(POPULATION)} "
                 "reference solutions in the sandbox, once)")
        board = build_board(env, sandbox=sandbox, settings=settings)
        path = cache_root / BOARD_CACHE / f"{env.id}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"key": board_key(env), "version": BOARD_VERSION, "board": board}))
        tmp.replace(path)
    scores = [float(e["score"]) for e in board]
    th = thresholds(scores, env.grade.lower_is_better, "population")
    if not th.distinct() and note is not None:
        note(f"{env.id}: its population board's gold, silver and bronze are not three scores (gold {th.gold:.4g}, "
             f"silver {th.silver:.4g}, bronze {th.bronze:.4g}): standard models nearly saturate this data")
    out = dataclasses.replace(env, leaderboard=scores, board="population", thresholds=versioned(th.to_dict()))
    require_clean(out, audit_env(out, cache=cache_root / AUDIT_CACHE), "environment")
    return out


def build_board(env: EnvSpec, *, sandbox: SandboxBackend | None = None,
                settings: Settings | None = None) -> list[dict[str, Any]]:
    """Run the population on ``env``'s public files and grade each distinct entry: the board's rows (an error when
    fewer than :data:`MIN_ENTRIES` distinct solutions could be scored, saying how many were copies and naming the
    first failure)."""
    settings = settings or load_settings()
    own = sandbox is None
    box = sandbox or get_backend(settings=with_solution_imports(settings.sandbox))
    try:
        limits = Limits.from_settings(settings.sandbox)
        limits = dataclasses.replace(limits, timeout_s=max(limits.timeout_s, MIN_TIMEOUT_S),
                                     cpu_s=max(limits.cpu_s, 2 * MIN_TIMEOUT_S))
        answers = read_frame(env.answers, env.grade.id_column)
        pop = run_population(box, env.public, env.grade, answers, limits=limits)
    finally:
        if own:
            box.close()
    short = pop.shortfall(MIN_ENTRIES)
    if short:
        raise SandmleError(f"{env.id}: its population board has {short}")
    return pop.board()


# ---------------------------------------------------------------------------------------------- stored ones
PAPER_KEYS = ("gold", "silver", "bronze", "median")


def paper_thresholds(paper: dict[str, Any] | None, ours: dict[str, Any] | None) -> dict[str, Any] | None:
    """The thresholds an imported paper task is graded by: the paper's own where its evaluator brings all four
    (board ``paper``: the rank is still among our population), else ``ours``; ours are kept beside."""
    theirs = (paper or {}).get("thresholds") or {}
    if ours is None or not all(isinstance(theirs.get(k), (int, float)) for k in PAPER_KEYS):
        return ours
    return {**ours, **{k: float(theirs[k]) for k in PAPER_KEYS}, "board": "paper",
            "population": {k: ours[k] for k in PAPER_KEYS}}


@dataclass
class Reboard:
    """What ``sandmle envs reboard`` did to one stored environment."""

    env_id: str
    status: str  #: rebuilt | kept (a board of its own: a real leaderboard) | refused (the old board stays)
    reason: str = ""
    before: dict[str, Any] = field(default_factory=dict)  #: board kind, entries, thresholds before
    after: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def line(self) -> str:
        def th(d: dict[str, Any]) -> str:
            t = d.get("thresholds") or {}
            return (f"{d.get('board') or 'no'} board"
                    + (f" ({d['version']})" if d.get("version") else "") + f" of {d.get('entries', 0)}"
                    + (f" (gold {t['gold']:.4g} · silver {t['silver']:.4g} · bronze {t['bronze']:.4g})"
                       if t.get("gold") is not None else ""))
        if self.status == "rebuilt":
            return f"{self.env_id}: {th(self.before)} → {th(self.after)}"
        return f"{self.env_id}: {self.status}: {self.reason}"


def _state(env: EnvSpec) -> dict[str, Any]:
    version = (env.thresholds or {}).get("version") or (FIRST_VERSION if env.board in ("population", "paper")
                                                         else None)
    return {"board": env.board, "version": version, "entries": len(env.leaderboard), "thresholds": env.thresholds}


def reboard_stored(store: Store, env_id: str, *, sandbox: SandboxBackend) -> Reboard:
    """Rebuild one stored environment's board as a population board, in place: the leaderboard rows, the
    thresholds and ``env.json`` swapped in one transaction, the verification report and provenance kept (with a
    ``reboard`` record added). Refused -- the old board stays -- when the new one would not be a fit yardstick:
    fewer than :data:`MIN_ENTRIES` distinct entries scored, tiers that tie, a constant prediction reaching a tier, or
    the exploit audit finding a file that reaches its bronze threshold."""
    row = store.envs.get(env_id)
    env = EnvSpec.from_store(store, env_id)
    before = _state(env)
    if env.board == "human":
        return Reboard(env_id, "kept", "its board is a real leaderboard (HumanRank)", before)
    if not env.answers.is_file():
        return Reboard(env_id, "refused", f"no answers at {env.answers}", before)
    verification: dict[str, Any] = dict(cast(dict[str, Any], row.get("verification") or {}))
    report: dict[str, Any] = dict(verification.get("report") or {})
    try:
        entries = build_board(env, sandbox=sandbox)
    except SandmleError as exc:
        return Reboard(env_id, "refused", str(exc).split(": ", 1)[-1], before)
    scores = [float(e["score"]) for e in entries]
    lib = env.grade.lower_is_better
    th = thresholds(scores, lib, "population")
    if not th.distinct():
        return Reboard(env_id, "refused", f"the population board's gold {th.gold:.4g}, silver {th.silver:.4g} and "
                                          f"bronze {th.bronze:.4g} are not three scores", before)
    trivial = (report.get("means") or {}).get("trivial")
    if isinstance(trivial, (int, float)) and th.medal(float(trivial)):
        return Reboard(env_id, "refused", f"a constant prediction ({trivial:.4g}) reaches {th.medal(float(trivial))} "
                                          "on the population board", before)
    new_th = paper_thresholds(verification.get("paper"), versioned(th.to_dict()))
    candidate = dataclasses.replace(env, leaderboard=scores, board=(new_th or {}).get("board", "population"),
                                    thresholds=new_th)
    strong = (report.get("means") or {}).get("strong")
    screen = report.get("screen_strong")
    audit = audit_env(candidate, strong=float(strong) if isinstance(strong, (int, float)) else None,
                      screen_strong=float(screen) if isinstance(screen, (int, float)) else None)
    if audit.findings:
        return Reboard(env_id, "refused", f"exploit audit at the new bronze threshold: {audit.reason()}", before)
    report["thresholds"] = new_th
    report["strong_rank"] = board_rank(float(strong), scores, lib) if isinstance(strong, (int, float)) else None
    verification["report"] = report
    verification["reboard"] = {"at": now(), "version": BOARD_VERSION, "from": before, "entries": len(entries)}
    meta_path = env.dir / "env.json"
    meta = json.loads(meta_path.read_text()) if meta_path.is_file() else {}
    meta.update(leaderboard=entries, thresholds=new_th)
    tmp = meta_path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(meta, indent=2, default=str, sort_keys=True) + "\n")
    tmp.replace(meta_path)
    store.envs.replace_board(env_id, entries, files=[r for r in file_rows(env.dir) if r["path"] == "env.json"],
                             thresholds=new_th, verification=verification)
    return Reboard(env_id, "rebuilt", "", before, _state(EnvSpec.from_store(store, env_id)))


def needs_reboard(store: Store, env_id: str) -> bool:
    """A stored environment whose board is not a population of distinct independent solutions nor a real
    leaderboard: the 9-entry board of the verifier's own scripts, none, or a population board of an older version
    (``population-1`` counted copies as entries)."""
    env = EnvSpec.from_store(store, env_id)
    return env.board not in ("population", "paper", "human") or \
        bool(board_outdated({**(env.thresholds or {}), "board": env.board}))
