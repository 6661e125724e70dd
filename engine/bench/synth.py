"""``sandmle bench synth``: verified environments per minute and generator programs per verified environment, for
the two ways a program gets written, side by side on the same seeds and machine:

- **stand-in LLM (program authoring)**: the ``openai`` chat backend over the real SDK, against a local stand-in
  server (:mod:`engine.llm.standin`) that answers each role the way a model would under its contract — the
  blueprint, a scenario in a new domain per request, the metric, a whole ``generator.py`` (the verified few-shot
  example of the seed's kind, run with a fresh data seed per environment), a description written from the
  realized data, a review. Everything after the answer is the real path: contract validation, static checks, the
  sandbox run, the inferred grading spec, the grader's proof, the verifier, the review, storage.
- **procedural**: the offline template backend.

The stand-in answers instantly, so the figures are the pipeline's own cost, not a model's latency.

Each backend runs twice on the same seeds and RNG seed, with and without the exploit audit
(:mod:`engine.grading.audit`), so the audit's cost shows side by side: verified environments per minute before
and after, and the audit's own seconds per environment (from each stored verification report).
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
from ..llm.standin import StandIn
from ..seeds.load import load_shipped
from ..synthesis.blueprint import analyze
from ..synthesis.fewshot import EXAMPLES
from ..synthesis.pipeline import synthesis_executor, synthesize
from ..synthesis.realized import DataSummary, describe_from_data
from ..synthesis.roles import role_of
from . import BenchResult

#: seed → the few-shot example the stand-in engineer answers with
PLAN = {"taxi-fare": "bike_docks", "author-style": "recipe_cuisine"}


def as_json(data: dict[str, Any]) -> str:
    return "```json\n" + json.dumps(data) + "\n```"


def standin_reply(store: Store) -> Any:
    """A reply function for :class:`~engine.llm.standin.StandIn`: each role's answer, JSON under its contract."""
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


def _one(mode: str, seeds: list[str], per_seed: int, workers: int, settings,
         exploit_audit: bool = True) -> list[dict[str, Any]]:
    """Synthesize ``per_seed`` environments of each seed in a throw-away store with one backend."""
    root = Path(tempfile.mkdtemp(prefix=f"sandmle-bench-synth-{mode}-"))
    rows = []
    try:
        with Store(root / "sandmle.db") as store, \
                synthesis_executor(store, settings, "local", workers=workers, warm=True) as executor:
            load_shipped(store)
            server = StandIn(standin_reply(store)) if mode == "standin" else None
            if server is not None:
                server.__enter__()
                settings.openai.base_url, settings.openai.model = server.url + "/v1", "stand-in"
            try:
                for sid in seeds:
                    start = time.perf_counter()
                    rep = synthesize(store, sid, per_seed, backend="openai" if server else "procedural",
                                     rng_seed=2026, settings=settings, executor=executor, exploit_audit=exploit_audit)
                    wall = time.perf_counter() - start
                    s = rep.summary()
                    audit_s = _audit_seconds(store, sid)
                    rows.append({"backend": "stand-in LLM" if server else "procedural", "audit": exploit_audit,
                                 "seed": sid,
                                 "attempted": s["attempted"], "verified": s["verified"], "programs": s["programs"],
                                 "programs_per_verified": s["programs_per_verified"], "llm_calls": s["usage"]["calls"],
                                 "wall_s": round(wall, 2),
                                 "verified_per_min": round(s["verified"] / wall * 60, 2) if wall else 0.0,
                                 "audit_s_per_env": round(sum(audit_s) / len(audit_s), 3) if audit_s else None})
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
    for mode in ("procedural", "standin"):  # before and after the exploit audit, side by side
        rows += _one(mode, seeds, per_seed, workers, settings, exploit_audit=False)
        rows += _one(mode, seeds, per_seed, workers, settings, exploit_audit=True)
    summary: dict[str, Any] = {}
    for name in ("procedural", "stand-in LLM"):
        key = "procedural" if name == "procedural" else "standin"
        for audited in (False, True):
            mine = [r for r in rows if r["backend"] == name and r["audit"] is audited]
            verified, wall = sum(r["verified"] for r in mine), sum(r["wall_s"] for r in mine)
            programs, attempted = sum(r["programs"] for r in mine), sum(r["attempted"] for r in mine)
            tag = key if audited else f"{key}_no_audit"
            summary[f"{tag}_verified_per_min"] = round(verified / wall * 60, 2) if wall else 0.0
            summary[f"{tag}_attempts_per_verified"] = round(attempted / verified, 2) if verified else None
            summary[f"{tag}_programs_per_verified"] = round(programs / verified, 2) if verified else None
            summary[f"{tag}_verified"] = f"{verified}/{attempted}"
        before, after = summary[f"{key}_no_audit_verified_per_min"], summary[f"{key}_verified_per_min"]
        summary[f"{key}_audit_throughput_ratio"] = round(after / before, 3) if before else None
        costs = [r["audit_s_per_env"] for r in rows if r["backend"] == name and r["audit"] and r["audit_s_per_env"]]
        summary[f"{key}_audit_s_per_env"] = round(sum(costs) / len(costs), 3) if costs else None
    notes = [f"{per_seed} environments per seed ({', '.join(seeds)}), {workers} workers, one warm sandbox per "
             "backend; programs = generator programs run (each one the whole check: sandbox run, spec, proof, ladder "
             "of 3 solutions x 2 seeds, fuzzing, leakage probes, exploit audit)",
             "each backend twice, same seeds and RNG seed: without the exploit audit (audit=False, the pipeline "
             "before it) and with it; audit_s_per_env = the audit's own seconds per verified environment (the "
             "verifier's audit + the final one of files written after it), from the stored reports",
             "stand-in LLM: the openai chat backend over the real SDK against a local server answering each role "
             "instantly from the few-shot examples (bike_docks for taxi-fare, recipe_cuisine for author-style); a "
             "scenario per request in a new domain; descriptions written from the realized data"]
    return BenchResult(name="synth", rows=rows, summary=summary, notes=notes)
