"""Finding seeds under a path (our folders and MLE-bench competition folders) and loading them into the store."""

from __future__ import annotations

from pathlib import Path

from store import Store

from ..errors import ExploitFound, SandmleError, SeedError
from ..envs.tree import require_plain_tree
from .competition import env_from_mlebench
from .mlebench import find_prepared, is_mlebench_folder, load_mlebench_folder
from .seed import Seed, load_seed_folder

#: the seeds shipped with the project (``seeds/`` at the repository root, linked here as package data so that a
#: wheel carries them too)
SHIPPED_SEEDS = Path(__file__).parent / "shipped"


def discover(path: str | Path) -> list[Seed]:
    """Seeds under PATH: a seed folder, an MLE-bench competition folder, or a folder of either."""
    path = Path(path)
    if not path.exists():
        raise SeedError(f"{path}: no such file or folder")
    if not path.is_dir():
        raise SeedError(f"{path}: expected a folder (a seed folder or a folder of seed folders)")
    if (path / "seed.toml").is_file():
        require_plain_tree(path, "a seed folder")
        return [load_seed_folder(path)]
    if is_mlebench_folder(path):
        require_plain_tree(path, "an MLE-bench competition folder")
        return [load_mlebench_folder(path)]
    seeds = []
    for child in sorted(p for p in path.iterdir() if p.is_dir() and not p.is_symlink()):
        if (child / "seed.toml").is_file():
            require_plain_tree(child, "a seed folder")
            seeds.append(load_seed_folder(child))
        elif is_mlebench_folder(child):
            require_plain_tree(child, "an MLE-bench competition folder")
            seeds.append(load_mlebench_folder(child))
    if not seeds:
        raise SeedError(f"{path}: no seed folders found (need seed.toml, or config.yaml for MLE-bench)")
    ids = [s.id for s in seeds]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise SeedError(f"{path}: seed id {dupes[0]!r} appears in more than one folder")
    return seeds


def changed_fields(store: Store, seed: Seed) -> list[str]:
    """What differs between ``seed`` and the stored seed of the same id (nothing for a new seed). Tags are the
    user's to curate (merged on import), and where the folder lives is not content."""
    row = store.seeds.find(seed.id)
    if row is None:
        return []
    old = Seed.from_row(row)
    return [name for name in Seed.__dataclass_fields__ if name not in ("tags", "source_path")
            and getattr(old, name) != getattr(seed, name)]


def store_seeds(store: Store, seeds: list[Seed], *, force: bool = False) -> dict[str, list[str]]:
    """Store ``seeds`` in one transaction (all or nothing); returns {seed id: changed fields} for each one that
    replaced a different stored version. A changed seed that environments were synthesized from is refused, with
    what changed, unless ``force``."""
    for seed in seeds:
        audit_competition(store, seed)
    changes: dict[str, list[str]] = {}
    with store.transaction():
        for seed in seeds:
            changed = changed_fields(store, seed)
            if changed:
                n_envs = store.envs.count(seed_id=seed.id)
                if n_envs and not force:
                    raise SeedError(f"{seed.source_path or seed.id}: seed {seed.id!r} changed ({', '.join(changed)}) "
                                    f"and {n_envs} environment(s) were synthesized from the stored version",
                                    hint="--force replaces it; those environments keep the data they were made from")
                changes[seed.id] = changed
            store.seeds.upsert(seed.to_row())
    return changes


def audit_competition(store: Store, seed: Seed) -> None:
    """A seed imported from a prepared MLE-bench competition folder: its environment (what eval will run) must
    pass the exploit audit, or nothing is imported. A folder that is not prepared, or whose answers cannot be
    found, is only a seed (eval says why when it is asked to run it)."""
    if seed.source_format != "mlebench" or not seed.source_path:
        return
    public, private = find_prepared(Path(seed.source_path))
    if public is None or private is None:
        return
    try:
        env_from_mlebench(seed.source_path, Path(store.data_dir) / "envs-imported", metric=seed.metric, store=store)
    except ExploitFound:
        raise
    except SandmleError:
        return


def import_seeds(store: Store, path: str | Path, *, force: bool = False) -> list[Seed]:
    """Validate every seed under PATH first, then store them all (see :func:`store_seeds`)."""
    seeds = discover(path)
    store_seeds(store, seeds, force=force)
    return seeds


def load_shipped(store: Store) -> list[Seed]:
    return import_seeds(store, SHIPPED_SEEDS)
