"""How different synthesized environments are from each other and from their seeds.

A scenario's :func:`fingerprint` is a set of tokens (domain, targets, feature names, classes, size, media
settings); two scenarios whose token sets overlap by :data:`DUPLICATE_SIMILARITY` (Jaccard) or more are
near-duplicates, and the Designer is asked for another. :func:`diversity` summarizes a set of stored
environments: distinct domains and source datasets, the overlap of their column names with each other and with
their seed's, the similarity of their fingerprints, how much their text columns read like prose — overall and per
synthesis backend (:func:`by_backend`), so the procedural and the grounded backend stand side by side.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass
from itertools import combinations
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..realdata.prose import function_pair_share
from .contracts import NUMERIC_TYPES, Scenario

DUPLICATE_SIMILARITY = 0.85
#: an environment "brings its own columns" when at most this share of its column names are its seed's
OWN_COLUMNS = 0.30
#: pairwise figures over at most this many environments (a fixed sample beyond it: pairs grow quadratically)
MAX_PAIRWISE = 1000
#: the procedural recipe's media settings that tell two media scenarios apart
MEDIA_KEYS = ("image", "audio", "series")


def fingerprint(scenario: Scenario) -> str:
    """Tokens that identify a scenario for near-duplicate refusal (space-separated, sorted)."""
    toks = {f"domain:{scenario.domain}", f"n:{scenario.n_train}"}
    toks |= {f"target:{t}" for t in scenario.target_columns}
    toks |= {f"class:{c}" for c in scenario.classes or []}
    for col in scenario.columns:
        if col.type in NUMERIC_TYPES:
            toks.add(f"f:{col.name}")
        elif col.type == "category":
            toks.add(f"c:{col.name}")
        elif col.type == "group":
            toks.add(f"group_column={col.name}")
    if scenario.media_column:
        toks.add(f"media_column={scenario.media_column}")
    recipe = scenario.recipe or {}
    for key in MEDIA_KEYS:
        for k, v in sorted((recipe.get(key) or {}).items()):
            toks.add(f"{key}:{k}={f'{v:.1g}' if isinstance(v, float) else v}")
    if "n_groups" in recipe:
        toks.add(f"n_groups={recipe['n_groups']}")
    return " ".join(sorted(toks))


def similarity(a: str, b: str) -> float:
    sa, sb = set(a.split()), set(b.split())
    return len(sa & sb) / max(1, len(sa | sb))


def closest(fp: str, others: Sequence[tuple[str, str]]) -> tuple[str, float] | None:
    """The most similar (env id, similarity) among ``others`` = [(env id, fingerprint)], if any."""
    scored = [(env_id, similarity(fp, other)) for env_id, other in others]
    return max(scored, key=lambda s: s[1]) if scored else None


@dataclass
class Diversity:
    environments: int
    domains: int
    domain_counts: dict[str, int]
    #: mean / max Jaccard overlap of the column-name sets of two environments
    column_overlap_mean: float
    column_overlap_max: float
    #: mean / max fingerprint similarity of two environments; pairs at or above the duplicate threshold
    fingerprint_similarity_mean: float
    fingerprint_similarity_max: float
    near_duplicate_pairs: int
    #: environments the pairwise figures were computed over (all of them, or a fixed sample of MAX_PAIRWISE)
    pairwise_over: int
    #: distinct real datasets the rows come from (grounded environments; 0 for template-made ones)
    source_datasets: int = 0
    #: mean share of an environment's column names (features and targets) that are its seed's column names
    seed_overlap_mean: float | None = None
    #: share of environments with at most OWN_COLUMNS of their names shared with their seed
    own_columns_share: float | None = None
    #: share of adjacent word pairs that are two function words, over every text column (prose ~0.10; salad ~0.6)
    text_function_pairs: float | None = None
    text_columns: int = 0
    #: verified environments per minute of the synthesis runs that made them (filled by the caller: the store)
    verified_per_min: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / max(1, len(a | b))


def _names(env: Mapping[str, Any]) -> set[str]:
    scenario = env.get("scenario") or {}
    return {c["name"] for c in scenario.get("columns", [])} | set(scenario.get("target_columns", []))


def seed_overlap(env: Mapping[str, Any], seed: Mapping[str, Any]) -> float:
    """Share of an environment's column names (features and targets, not the id) that its seed has too (case
    ignored)."""
    mine = {n.lower() for n in _names(env)}
    theirs = {str(c["name"]).lower() for c in seed.get("columns", []) if c.get("role") != "id"}
    return len(mine & theirs) / max(1, len(mine))


def text_values(env: Mapping[str, Any], limit: int = 400) -> list[list[str]]:
    """The values of each text column of an environment's train.csv (at most ``limit`` rows each)."""
    import pandas as pd  # heavy: only for the prose figure

    scenario = env.get("scenario") or {}
    cols = [c["name"] for c in scenario.get("columns", []) if c.get("type") == "text"]
    path = Path(str(env.get("dir") or "")) / "public" / "train.csv"
    if not cols or not path.is_file():
        return []
    frame = pd.read_csv(path, usecols=lambda c: c in cols, nrows=limit)
    return [frame[c].dropna().astype(str).tolist() for c in cols if c in frame.columns]


def diversity(envs: Sequence[Mapping[str, Any]], seeds: Mapping[str, Mapping[str, Any]] | None = None) -> Diversity:
    """``envs``: stored environment rows (their ``scenario``, ``fingerprint`` and folder); ``seeds``: seed rows by
    id, for the overlap with each environment's seed."""
    domains: dict[str, int] = {}
    columns, prints = [], []
    sources: set[str] = set()
    overlaps_seed: list[float] = []
    texts: list[str] = []
    n_text = 0
    for env in envs:
        scenario = env.get("scenario") or {}
        domain = scenario.get("domain") or "(unknown)"
        domains[domain] = domains.get(domain, 0) + 1
        columns.append(_names(env))
        prints.append(env.get("fingerprint") or "")
        if scenario.get("source_dataset"):
            sources.add(scenario["source_dataset"])
        seed = (seeds or {}).get(str(env.get("seed_id")))
        if seed is not None:
            overlaps_seed.append(seed_overlap(env, seed))
        for values in text_values(env):
            n_text += 1
            texts += values
    if len(envs) > MAX_PAIRWISE:
        keep = sorted(random.Random(0).sample(range(len(envs)), MAX_PAIRWISE))
        columns, prints = [columns[i] for i in keep], [prints[i] for i in keep]
    overlaps = [_jaccard(a, b) for a, b in combinations(columns, 2)]
    sims = [similarity(a, b) for a, b in combinations(prints, 2)]
    return Diversity(
        environments=len(envs), domains=len(domains), domain_counts=dict(sorted(domains.items())),
        column_overlap_mean=round(sum(overlaps) / len(overlaps), 4) if overlaps else 0.0,
        column_overlap_max=round(max(overlaps), 4) if overlaps else 0.0,
        fingerprint_similarity_mean=round(sum(sims) / len(sims), 4) if sims else 0.0,
        fingerprint_similarity_max=round(max(sims), 4) if sims else 0.0,
        near_duplicate_pairs=sum(s >= DUPLICATE_SIMILARITY for s in sims), pairwise_over=len(prints),
        source_datasets=len(sources),
        seed_overlap_mean=round(sum(overlaps_seed) / len(overlaps_seed), 4) if overlaps_seed else None,
        own_columns_share=round(sum(o <= OWN_COLUMNS for o in overlaps_seed) / len(overlaps_seed), 4)
        if overlaps_seed else None,
        text_function_pairs=round(function_pair_share(texts), 4) if texts else None, text_columns=n_text)


def by_backend(envs: Sequence[Mapping[str, Any]], seeds: Mapping[str, Mapping[str, Any]] | None = None,
               ) -> dict[str, Diversity]:
    """:func:`diversity` of the environments each synthesis backend made (``backend`` of each row)."""
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for env in envs:
        groups.setdefault(backend_group(env), []).append(env)
    return {name: diversity(rows, seeds) for name, rows in sorted(groups.items())}


def backend_group(env: Mapping[str, Any]) -> str:
    """The backend that made an environment; a grounded one that fell back to the templates says so."""
    name = str(env.get("backend") or "(unknown)")
    if name == "grounded" and not (env.get("scenario") or {}).get("source_dataset"):
        return "grounded (template fallback)"
    return name


def throughput(runs: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Verified environments per minute of finished synthesis runs, per backend (their stored summaries)."""
    verified: dict[str, float] = {}
    wall: dict[str, float] = {}
    for run in runs:
        summary = run.get("summary") or {}
        name = summary.get("backend") or (run.get("config") or {}).get("backend")
        if not name or not summary.get("wall_s"):
            continue
        verified[name] = verified.get(name, 0.0) + float(summary.get("verified") or 0)
        wall[name] = wall.get(name, 0.0) + float(summary["wall_s"])
    return {k: round(verified[k] / wall[k] * 60, 2) for k in verified if wall[k] > 0}
