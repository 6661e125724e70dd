"""Environment selectors: which environments an eval (or one rollout) runs on.

Comma-separated, combinable: ``ID`` (a stored environment), ``split:heldout`` (every verified environment of a
split), ``seed:SEED_ID`` (every verified environment synthesized from a seed), ``all`` (every verified environment
except the real competitions), ``real`` (the real competitions evaluated or graded before), ``mlebench:DIR`` /
``mlebench:DIR:lite`` (an MLE-bench data directory, or its MLE-bench Lite competitions: :mod:`engine.eval.mlebench`),
or a folder: one environment folder (``public/`` + ``private/``), one MLE-bench competition folder
(``config.yaml``), or a folder holding several of either. A folder's environments pass the exploit audit first
(:mod:`engine.grading.audit`): one that can be won by reading a file is refused with the file and the column. One
that brings no leaderboard gets its population board (:mod:`.boards`: built once, cached).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from store import Store
from store.envs import EnvironmentRow

from ..config import load_settings
from ..envs.layout import AUDIT_CACHE, REAL_SPLIT, EnvSpec
from ..envs.tree import require_plain_tree
from ..errors import SandmleError
from ..grading.audit import audit_env, require_clean
from ..seeds.competition import env_from_mlebench
from ..seeds.mlebench import is_mlebench_folder
from .boards import ensure_board
from .mlebench import Skipped, data_dir_competitions, parse_selector, quota_problem


@dataclass
class Selection:
    """What a selector chose, and the competitions it had to skip (missing, not prepared, too large)."""

    envs: list[EnvSpec]
    skipped: list[Skipped] = field(default_factory=list)


def _is_env_dir(path: Path) -> bool:
    return (path / "public").is_dir() and (path / "private" / "grade.json").is_file()


def audited_folder(folder: Path, cache_root: Path) -> EnvSpec:
    """An environment folder (``public/`` + ``private/``) from outside the store, once it passes the exploit
    audit against its own leaderboard."""
    require_plain_tree(folder, "an environment folder")
    env = EnvSpec.from_dir(folder)
    require_clean(env, audit_env(env, cache=cache_root / AUDIT_CACHE), "environment folder")
    return env


def envs_from_folder(folder: Path, cache_root: Path, *, metric: str | None = None,
                     store: Store | None = None) -> list[EnvSpec]:
    if _is_env_dir(folder):
        return [audited_folder(folder, cache_root)]
    if is_mlebench_folder(folder):
        return [env_from_mlebench(folder, cache_root, metric=metric, store=store)]
    out: list[EnvSpec] = []
    for child in sorted(p for p in folder.iterdir() if p.is_dir()):
        if _is_env_dir(child):
            out.append(audited_folder(child, cache_root))
        elif is_mlebench_folder(child):
            out.append(env_from_mlebench(child, cache_root, metric=metric, store=store))
    if not out:
        raise SandmleError(f"{folder}: holds no environment folder and no MLE-bench competition folder")
    return out


def _stored(store: Store, rows: list[EnvironmentRow]) -> list[EnvSpec]:
    return [EnvSpec.from_store(store, r["id"]) for r in rows]


def _select_part(store: Store, part: str, cache: Path, metric: str | None) -> tuple[list[EnvSpec], list[Skipped]]:
    data_dir = parse_selector(part)
    if data_dir is not None:
        return data_dir_competitions(*data_dir, load_settings().mlebench.competitions, cache, metric=metric,
                                     store=store)
    path = Path(part).expanduser()
    if path.is_dir():
        return envs_from_folder(path, cache, metric=metric, store=store), []
    if part == "all":  # every verified environment but the real competitions
        return _stored(store, store.envs.list(status="verified", exclude_split=REAL_SPLIT)), []
    if part == REAL_SPLIT:
        return _stored(store, store.envs.list(status="verified", split=REAL_SPLIT)), []
    if part.startswith("split:"):
        return _stored(store, store.envs.list(split=part[6:], status="verified")), []
    if part.startswith("seed:"):
        return _stored(store, store.envs.list(seed_id=part[5:], status="verified")), []
    if store.envs.find(part) is None:
        raise SandmleError(f"no environment or folder {part!r}", hint="give stored env ids, split:NAME, seed:ID, "
                                                                     "all, real, mlebench:DIR[:lite] or a folder")
    return [EnvSpec.from_store(store, part)], []


def select(store: Store, selector: str, *, limit: int | None = None, metric: str | None = None,
           quota_mb: float | None = None, note: Callable[[str], None] | None = None) -> Selection:
    """Resolve an environment selector (see the module docstring) to environment specs, in a stable order.
    ``metric`` overrides the metric of real competitions; environments whose public data exceed ``quota_mb``
    are skipped with the reason, as are competitions of a data directory that are missing or not prepared. One
    without a board of its own gets its population board (``note`` hears when one is being built)."""
    cache = Path(store.data_dir) / "envs-imported"
    specs: list[EnvSpec] = []
    skipped: list[Skipped] = []
    seen: set[str] = set()
    brought: set[str] = set()  #: environments from folders (not stored): they get a board if they bring none
    for part in (p.strip() for p in selector.split(",") if p.strip()):
        found, missed = _select_part(store, part, cache, metric)
        if parse_selector(part) is not None or Path(part).expanduser().is_dir():
            brought |= {spec.id for spec in found}
        if not found and not missed:
            raise SandmleError(f"selector {part!r} matched no verified environment")
        skipped += missed
        for spec in found:
            if spec.id not in seen:
                seen.add(spec.id)
                specs.append(spec)
    if limit is not None:
        specs = specs[:limit]
    if quota_mb is not None:
        too_big = {e.id: quota_problem(e, quota_mb) for e in specs}
        skipped += [Skipped(i, why) for i, why in too_big.items() if why]
        specs = [e for e in specs if not too_big[e.id]]
    specs = [ensure_board(e, cache, note=note) if e.id in brought else e for e in specs]
    if not specs:
        detail = f" ({len(skipped)} skipped, e.g. {skipped[0].id}: {skipped[0].reason})" if skipped else ""
        raise SandmleError(f"no environment selected{detail}")
    return Selection(specs, skipped)


def select_envs(store: Store, selector: str, *, limit: int | None = None, metric: str | None = None,
                note: Callable[[str], None] | None = None) -> list[EnvSpec]:
    """:func:`select`'s environments."""
    return select(store, selector, limit=limit, metric=metric, note=note).envs


def resolve_env(store: Store, ref: str, *, metric: str | None = None,
                note: Callable[[str], None] | None = None) -> EnvSpec:
    """One environment: a stored id, an environment folder, or an MLE-bench competition folder."""
    specs = select_envs(store, ref, metric=metric, note=note)
    if len(specs) != 1:
        raise SandmleError(f"{ref!r} names {len(specs)} environments; give exactly one")
    return specs[0]


#: the splits a user moves environments between (training reads `train`; held-out evaluation `heldout`)
SPLITS = ("train", "heldout")


def set_split(store: Store, selector: str, split: str) -> list[str]:
    """Move the stored environments ``selector`` names (as :func:`select_envs` reads it; folders have no split and
    real competitions stay in theirs) into ``split``; returns their ids."""
    if split not in SPLITS:
        raise SandmleError(f"unknown split {split!r}; expected {' or '.join(SPLITS)}")
    for part in (p.strip() for p in selector.split(",") if p.strip()):
        if Path(part).expanduser().is_dir():
            raise SandmleError(f"{part}: a folder has no split; give stored env ids, split:NAME, seed:ID or all")
    ids = [spec.id for spec in select_envs(store, selector)]
    real = [i for i in ids if (row := store.envs.find(i)) is not None and row["split"] == REAL_SPLIT]
    if real:
        raise SandmleError(f"{', '.join(real)}: real competition(s) stay in split {REAL_SPLIT} (training never uses "
                           "them); nothing moved")
    store.envs.set_split(ids, split)
    return ids
