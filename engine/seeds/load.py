"""Finding seeds under a path (our folders and MLE-bench competition folders) and loading them into the store."""

from __future__ import annotations

from pathlib import Path

from store import Store

from ..errors import SeedError
from .mlebench import is_mlebench_folder, load_mlebench_folder
from .seed import Seed, load_seed_folder

#: the seeds shipped with the project (``seeds/`` at the repository root)
SHIPPED_SEEDS = Path(__file__).resolve().parents[2] / "seeds"


def discover(path: str | Path) -> list[Seed]:
    """Seeds under PATH: a seed folder, an MLE-bench competition folder, or a folder of either."""
    path = Path(path)
    if not path.exists():
        raise SeedError(f"{path}: no such file or folder")
    if not path.is_dir():
        raise SeedError(f"{path}: expected a folder (a seed folder or a folder of seed folders)")
    if (path / "seed.toml").is_file():
        return [load_seed_folder(path)]
    if is_mlebench_folder(path):
        return [load_mlebench_folder(path)]
    seeds = []
    for child in sorted(p for p in path.iterdir() if p.is_dir()):
        if (child / "seed.toml").is_file():
            seeds.append(load_seed_folder(child))
        elif is_mlebench_folder(child):
            seeds.append(load_mlebench_folder(child))
    if not seeds:
        raise SeedError(f"{path}: no seed folders found (need seed.toml, or config.yaml for MLE-bench)")
    ids = [s.id for s in seeds]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise SeedError(f"{path}: seed id {dupes[0]!r} appears in more than one folder")
    return seeds


def import_seeds(store: Store, path: str | Path) -> list[Seed]:
    """Validate every seed under PATH first, then store them all in one transaction (all or nothing)."""
    seeds = discover(path)
    with store.transaction():
        for seed in seeds:
            store.seeds.upsert(seed.to_row())
    return seeds


def load_shipped(store: Store) -> list[Seed]:
    return import_seeds(store, SHIPPED_SEEDS)
