"""Evaluation: many episodes of one policy + scaffold over a set of environments and RNG seeds, in parallel.

Reports the medal rate (any / gold / silver / bronze), valid-submission rate, above-median rate and mean
HumanRank, each as mean ± SEM over seeds, plus a per-environment table. Results go into ``eval_results`` under a
``runs`` row of kind ``eval``.

Environment selectors (comma-separated, combinable):
``ID`` (a stored environment), ``split:heldout`` (every verified environment of a split), ``seed:SEED_ID`` (every
verified environment synthesized from a seed), ``all``, or a folder: one environment folder (``public/`` +
``private/``), one MLE-bench competition folder (``config.yaml``), or a folder holding several of either.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

from .environment import EnvSpec, GradeSpec
from .errors import SandmleError


# ------------------------------------------------------------------ environments from folders
def env_from_mlebench(folder: str | Path, cache_root: str | Path) -> EnvSpec:
    """An MLE-bench competition folder as an environment: ``public/`` links to ``prepared/public``, the answers
    file is copied to ``private/answers.csv`` with a grading spec; the leaderboard comes from leaderboard.csv."""
    from .mlebench import _read_yaml, find_prepared, load_mlebench_folder

    folder = Path(folder).resolve()
    seed = load_mlebench_folder(folder)
    public, private = find_prepared(folder)
    if public is None or private is None:
        raise SandmleError(f"{folder}: an MLE-bench folder needs prepared/public and prepared/private to be graded")
    cfg = _read_yaml(folder / "config.yaml")
    answers_name = Path(str((cfg.get("dataset") or {}).get("answers", "test.csv"))).name
    answers = private / answers_name
    if not answers.is_file():
        candidates = sorted(private.glob("*.csv"))
        if len(candidates) != 1:
            raise SandmleError(f"{folder}: cannot find the answers file {answers}")
        answers = candidates[0]
    sample_cols = (public / "sample_submission.csv").read_text(encoding="utf-8").splitlines()[0].split(",")
    pred_cols = [c.strip() for c in sample_cols[1:]]
    classes = None
    for col in seed.columns:
        if col.get("role") == "target" and col.get("values"):
            classes = list(col["values"])
    spec = GradeSpec(metric=seed.metric, lower_is_better=seed.lower_is_better, id_column=seed.id_column,
                     target_columns=list(seed.target_columns), prediction_columns=pred_cols, classes=classes,
                     task_type=seed.task_type)
    dest = Path(cache_root) / f"mlebench-{seed.id}"
    if dest.exists():
        shutil.rmtree(dest)
    (dest / "private").mkdir(parents=True)
    (dest / "public").symlink_to(public, target_is_directory=True)
    shutil.copyfile(answers, dest / "private" / "answers.csv")
    (dest / "private" / "grade.json").write_text(json.dumps(spec.to_dict(), indent=2))
    (dest / "env.json").write_text(json.dumps({
        "id": f"mlebench-{seed.id}", "title": seed.title, "modality": seed.modality, "seed_id": None,
        "leaderboard": [{"name": f"kaggle-{i}", "score": s} for i, s in enumerate(seed.leaderboard or [])],
        "source": str(folder)}, indent=2))
    return EnvSpec.from_dir(dest)


def _is_env_dir(path: Path) -> bool:
    return (path / "public").is_dir() and (path / "private" / "grade.json").is_file()


def envs_from_folder(folder: Path, cache_root: Path) -> list[EnvSpec]:
    from .mlebench import is_mlebench_folder

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


# ------------------------------------------------------------------ statistics
def mean_sem(values: list[float]) -> tuple[float, float]:
    """Mean and standard error of the mean (0 with a single value)."""
    if not values:
        return float("nan"), float("nan")
    m = sum(values) / len(values)
    if len(values) < 2:
        return m, 0.0
    var = sum((v - m) ** 2 for v in values) / (len(values) - 1)
    return m, math.sqrt(var / len(values))
