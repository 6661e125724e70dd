"""How different synthesized environments are from each other.

A scenario's :func:`fingerprint` is a set of tokens (domain, targets, feature names, classes, size, media
settings); two scenarios whose token sets overlap by :data:`DUPLICATE_SIMILARITY` (Jaccard) or more are
near-duplicates, and the Designer is asked for another. :func:`diversity` summarizes a set of stored
environments: distinct domains, the overlap of their column names and the similarity of their fingerprints.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass
from itertools import combinations
from typing import Any, Sequence

from .contracts import NUMERIC_TYPES, Scenario

DUPLICATE_SIMILARITY = 0.85
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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / max(1, len(a | b))


def diversity(envs: list[dict[str, Any]]) -> Diversity:
    """``envs``: stored environment rows (their ``scenario`` and ``fingerprint``)."""
    domains: dict[str, int] = {}
    columns, prints = [], []
    for env in envs:
        scenario = env.get("scenario") or {}
        domain = scenario.get("domain") or "(unknown)"
        domains[domain] = domains.get(domain, 0) + 1
        names = {c["name"] for c in scenario.get("columns", [])} | set(scenario.get("target_columns", []))
        columns.append(names)
        prints.append(env.get("fingerprint") or "")
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
        near_duplicate_pairs=sum(s >= DUPLICATE_SIMILARITY for s in sims), pairwise_over=len(prints))
