"""Environment selectors: which environments an eval (or one rollout) runs on.

``ID`` (a stored environment), ``split:heldout`` (every verified environment of a split), ``seed:SEED_ID`` (every
verified environment synthesized from a seed), ``all``, or a folder: one environment folder (``public/`` +
``private/``), one MLE-bench competition folder (``config.yaml``), or a folder holding several of either.
"""

from __future__ import annotations

from pathlib import Path

from ..envs.layout import EnvSpec
from ..errors import SandmleError
from ..seeds.mlebench import env_from_mlebench, is_mlebench_folder


def _is_env_dir(path: Path) -> bool:
    return (path / "public").is_dir() and (path / "private" / "grade.json").is_file()


def envs_from_folder(folder: Path, cache_root: Path) -> list[EnvSpec]:
    if _is_env_dir(folder):
        return [EnvSpec.from_dir(folder)]
    if is_mlebench_folder(folder):
        return [env_from_mlebench(folder, cache_root)]
    out: list[EnvSpec] = []
    for child in sorted(p for p in folder.iterdir() if p.is_dir()):
        if _is_env_dir(child):
            out.append(EnvSpec.from_dir(child))
        elif is_mlebench_folder(child):
            out.append(env_from_mlebench(child, cache_root))
    if not out:
        raise SandmleError(f"{folder}: holds no environment folder and no MLE-bench competition folder")
    return out


def select_envs(store, selector: str, *, limit: int | None = None) -> list[EnvSpec]:
    """Resolve an environment selector (see the module docstring) to environment specs, in a stable order."""
    cache = Path(store.data_dir) / "envs-imported"
    specs: list[EnvSpec] = []
    seen: set[str] = set()
    for part in (p.strip() for p in selector.split(",") if p.strip()):
        path = Path(part).expanduser()
        if path.is_dir():
            found = envs_from_folder(path, cache)
        elif part == "all":
            found = [EnvSpec.from_store(store, r["id"]) for r in store.envs.list(status="verified")]
        elif part.startswith("split:"):
            rows = store.envs.list(split=part[6:], status="verified")
            found = [EnvSpec.from_store(store, r["id"]) for r in rows]
        elif part.startswith("seed:"):
            rows = store.envs.list(seed_id=part[5:], status="verified")
            found = [EnvSpec.from_store(store, r["id"]) for r in rows]
        else:
            if store.envs.get(part, missing_ok=True) is None:
                raise SandmleError(f"no environment or folder {part!r}",
                                   hint="give stored env ids, split:NAME, seed:ID, all, or a folder")
            found = [EnvSpec.from_store(store, part)]
        if not found:
            raise SandmleError(f"selector {part!r} matched no verified environment")
        for spec in found:
            if spec.id not in seen:
                seen.add(spec.id)
                specs.append(spec)
    if limit is not None:
        specs = specs[:limit]
    if not specs:
        raise SandmleError("no environment selected")
    return specs


def resolve_env(store, ref: str) -> EnvSpec:
    """One environment: a stored id, an environment folder, or an MLE-bench competition folder."""
    specs = select_envs(store, ref)
    if len(specs) != 1:
        raise SandmleError(f"{ref!r} names {len(specs)} environments; give exactly one")
    return specs[0]
