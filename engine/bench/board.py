"""``sandmle bench board``: are the population boards fit yardsticks? On a fresh store, one environment of each of
six shipped seeds with six different metrics (the offline backend), then the scripted expert (``scripted``: the
strongest strategies a policy can pick, tried on the validation split) in react on each. Per environment: the
board's size and number of solution names, its gold / silver / bronze (three different scores?), where the
verifier's strong reference would rank on it, the expert's score and medal, and whether that score equals a board
entry's. Targets (the population-board issue): boards of at least 40 entries from at least 8 solution names,
three distinct tiers everywhere, the expert equal to a board entry on at most one environment, and the expert's
gold rate at most 0.75 (the top of the board is not owned by our own teacher).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any, cast

from store import Store

from ..envs.layout import EnvSpec
from ..eval.run import run_eval
from ..grading.thresholds import Thresholds
from ..seeds.load import load_shipped
from ..synthesis.pipeline import synthesize
from ..synthesis.population import MIN_ENTRIES
from . import BenchResult

#: six shipped seeds, six metrics (accuracy, log loss, ROC-AUC, RMSE, QWK, macro F1)
SEEDS = ("forest-cover", "author-style", "pizza-requests", "taxi-fare", "essay-scoring", "ion-channels")
#: the columns of a row
COLUMNS = ("seed", "metric", "env", "status", "entries", "names", "families", "gold", "silver", "bronze", "distinct",
           "strong_rank", "expert_score", "expert_medals", "expert_equals_entry")
#: the expert's episodes per environment
RNG_SEEDS = (0, 1)


def run(store: Store, quick: bool = False, **_: Any) -> BenchResult:
    seeds = SEEDS[:3] if quick else SEEDS
    root = Path(tempfile.mkdtemp(prefix="sandmle-bench-board-"))
    rows: list[dict[str, Any]] = []
    try:
        with Store(root / "sandmle.db") as bs:
            load_shipped(bs)
            envs = []
            for sid in seeds:
                (o,) = synthesize(bs, sid, 1, rng_seed=2026).outcomes
                if o.status == "verified":
                    envs.append(EnvSpec.from_store(bs, o.env_id))
                else:
                    rows.append({**dict.fromkeys(COLUMNS), "seed": sid, "metric": bs.seeds.get(sid)["metric"],
                                 "env": o.env_id, "status": f"rejected: {o.reason}", "expert_medals": []})
            rep = run_eval(bs, "scripted", envs, scaffold="react", rng_seeds=list(RNG_SEEDS), max_turns=15,
                           name="bench board: scripted expert")
            results = bs.runs.eval_results(rep.run_id)
            for env in envs:
                rows.append(_row(bs, env, [dict(r) for r in results if r["env_id"] == env.id]))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    ok = [r for r in rows if r.get("status") == "verified"]
    episodes = [m for r in ok for m in r["expert_medals"]]
    gold_rate = sum(m == "gold" for m in episodes) / len(episodes) if episodes else None
    equal = sum(bool(r["expert_equals_entry"]) for r in ok)
    summary = {
        "environments": f"{len(ok)}/{len(seeds)} verified", "metrics": sorted({r["metric"] for r in ok}),
        "min_entries": min((r["entries"] for r in ok), default=None),
        "min_solution_names": min((r["names"] for r in ok), default=None),
        "distinct_tiers": f"{sum(r['distinct'] for r in ok)}/{len(ok)}",
        "expert_gold_rate": gold_rate,
        "expert_medal_rate": sum(m is not None for m in episodes) / len(episodes) if episodes else None,
        "expert_silver_rate": sum(m == "silver" for m in episodes) / len(episodes) if episodes else None,
        "expert_equals_an_entry_on": equal,
        "targets_met": bool(len(ok) == len(seeds) and all(r["entries"] >= MIN_ENTRIES and r["names"] >= 8
                                                          and r["distinct"] for r in ok)
                            and equal <= 1 and gold_rate is not None and gold_rate <= 0.75),
    }
    for r in ok:
        r["expert_medals"] = ",".join(m or "-" for m in r["expert_medals"])
    notes = [f"one environment per seed ({', '.join(seeds)}), procedural backend, RNG seed 2026; the scripted "
             f"expert in react, RNG seeds {list(RNG_SEEDS)}, at most 15 turns",
             "strong_rank = where the verifier's strong reference (mean of its 2 seeds) would rank on the board "
             "(1: above every entry); expert_equals_entry = the expert's score equals a board entry's (1e-12)",
             "targets: >= 40 entries from >= 8 solution names, three distinct tiers on every board, the expert equal "
             "to an entry on at most one environment, the expert's gold rate <= 0.75"]
    return BenchResult(name="board", rows=rows, summary=summary, notes=notes)


def _row(store: Store, env: EnvSpec, results: list[dict[str, Any]]) -> dict[str, Any]:
    board = store.envs.leaderboard(env.id)
    scores = [e["score"] for e in board]
    th = Thresholds.from_dict(env.thresholds or {}, env.grade.lower_is_better)
    verification = cast(dict[str, Any], store.envs.get(env.id).get("verification") or {})
    report: dict[str, Any] = verification.get("report") or {}
    expert = [r["score"] for r in results if r["score"] is not None]
    return {"seed": env.seed_id, "metric": env.grade.metric, "env": env.id, "status": "verified",
            "entries": len(board), "names": len({e["name"] for e in board}),
            "families": len({e["family"] for e in board}), "gold": round(th.gold, 4), "silver": round(th.silver, 4),
            "bronze": round(th.bronze, 4), "distinct": th.distinct(),
            "strong_rank": round(report["strong_rank"], 3) if report.get("strong_rank") is not None else None,
            "expert_score": round(sum(expert) / len(expert), 4) if expert else None,
            "expert_medals": [next((m for m in ("gold", "silver", "bronze") if r[m]), None) for r in results],
            "expert_equals_entry": any(abs(s - b) <= 1e-12 for s in expert for b in scores)}
