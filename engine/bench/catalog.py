"""``sandmle bench catalog``: the grounded designer over the whole catalog of real datasets. Every dataset the
fit step offers each shipped seed (:func:`engine.synthesis.grounded.fit.candidates`: the seeds whose modality a
real dataset can carry) is planned at several RNG seeds, as the designer would (its targets in the designer's
weighted order, the first plan kept), and each plan is carried through to a generator run: the scenario under its
contract, the description, ``generator.py`` rendered and run in the sandbox (profile ``generator``), its files
through the layout, blueprint and grader-proof checks and the Reviewer's deterministic checks. Each (seed,
dataset, RNG seed) — a *pair* below — ends one of three ways:

- **verified**: the generator ran and its files pass every check above (the reference solutions, the population
  board and the exploit audit of a real synthesis are not run: they judge the task, not whether the data crash);
- **refused** with a named reason: the planner's (:data:`engine.synthesis.grounded.plan.REASONS`) or a later
  step's (:data:`STEP_REASONS`);
- **crash**: anything raised — a bug. The target is none.

The result file lists the pairs tried, verified, refused by reason, and every crash with its traceback; the
datasets refused in every pair with their reasons are the table in docs/synthesis.md. ``--limit N`` takes only
the first N datasets of each seed, in the order the designer offers them (its weighted draw); ``--quick`` is
``--limit 3`` at one RNG seed.
"""

from __future__ import annotations

import keyword
import shutil
import sys
import tempfile
import time
import traceback
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from store import Store

from ..config import load_settings
from ..errors import SandmleError
from ..realdata import Catalog, Entry, catalog
from ..sandbox import get_backend
from ..seeds.load import SHIPPED_SEEDS, discover
from ..synthesis.backends.grounded import GROUNDED_MODALITIES, scenario_from_plan
from ..synthesis.blueprint import analyze
from ..synthesis.contracts import Blueprint
from ..synthesis.generator_run import check_output, missing_files, run_generator
from ..synthesis.grounded import render
from ..synthesis.grounded.describe import write
from ..synthesis.grounded.fit import TargetOption, candidates, choose, dataset_order
from ..synthesis.grounded.plan import REASONS, Refused, make_plan, source_frame
from ..synthesis.attempts import one_line
from ..synthesis.pipeline import derive_seed
from ..synthesis.proof import prove
from ..synthesis.realized import SpecError, blueprint_problems, infer_spec, summarize
from ..synthesis.reviewer import review
from ..synthesis.solutions import with_solution_imports
from . import BenchResult

#: the RNG seeds every pair is planned at
RNG_SEEDS = (0, 1, 2)
#: targets of one dataset the designer tries before it moves on (engine.synthesis.grounded.fit.choose)
PER_DATASET = 3
#: why a plan made no environment after planning (the planner's own reasons: ``REASONS``)
STEP_REASONS = {
    "scenario": "the plan does not make a valid scenario (the Designer's contract)",
    "generator": "generator.py failed in the sandbox",
    "output": "the files fail the layout or the seed's blueprint checks",
    "grader": "the grader's proof fails on the files (perfect, sample and random submissions)",
    "description": "the description misses a column, a size or the submission format",
}
#: every named reason of a refusal
ALL_REASONS = {**REASONS, **STEP_REASONS}


@dataclass
class Pair:
    """One (seed, dataset, RNG seed) of the sweep and how it ended."""

    seed_id: str
    dataset: str
    rng_seed: int
    status: str = ""  #: verified | refused | crash
    reason: str = ""  #: a key of ALL_REASONS (refused), the exception's type (crash)
    detail: str = ""
    target: str = ""  #: the source column(s) of the plan's target
    renamed: int = 0  #: task columns whose name is not the source's
    plan_s: float = 0.0
    run_s: float = 0.0
    traceback: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Offer:
    """A dataset the fit step offers a seed, with its targets."""

    seed: Mapping[str, Any]
    blueprint: Blueprint
    entry: Entry
    options: list[TargetOption]


def odd_names(entry: Entry) -> list[str]:
    """The dataset's column names that are not plain identifiers (keywords and names like ``self``, ``index`` or
    ``class`` included: they broke keyword arguments once)."""
    plain = {"self", "index", "count", "class", "values", "columns", "shape", "name", "dtype"}
    return [c.name for c in entry.columns
            if not c.name.isidentifier() or keyword.iskeyword(c.name) or c.name in plain]


def groundable_seeds() -> list[tuple[dict[str, Any], Blueprint]]:
    """The shipped seeds (as rows) whose modality a real dataset can carry, with their blueprints."""
    out = []
    for seed in discover(SHIPPED_SEEDS):
        row = seed.to_row()
        blueprint = analyze(row)
        if blueprint.modality in GROUNDED_MODALITIES:
            out.append((row, blueprint))
    return out


def offers(cat: Catalog, seeds: Sequence[tuple[dict[str, Any], Blueprint]] | None = None,
           limit: int | None = None) -> list[Offer]:
    """Every (seed, dataset) the fit step offers, the datasets of each seed in the order the designer hands them
    out (:func:`~engine.synthesis.grounded.fit.dataset_order` at batch seed 0); ``limit``: the first so many."""
    out = []
    for seed, blueprint in seeds if seeds is not None else groundable_seeds():
        options = candidates(cat, blueprint, seed)
        by_key: dict[str, list[tuple[Entry, TargetOption]]] = defaultdict(list)
        for entry, option in options:
            by_key[entry.key].append((entry, option))
        keys = dataset_order(options, 0, prose=blueprint.modality == "text")
        for key in keys[:limit] if limit is not None else keys:
            pairs = by_key[key]
            out.append(Offer(seed, blueprint, pairs[0][0], [o for _, o in pairs]))
    return out


#: seeds by how long a plan for them takes (regression skips the answer-column check; wide classification is the
#: slowest): a sample takes each odd-named dataset with the quickest seed that is offered it
SPEED_ORDER = ("taxi-fare", "conductor-properties", "essay-scoring", "author-style", "pizza-requests",
               "toxic-comments", "tabular-binary-manufacturing", "forest-cover", "leaf-species")
#: the classification seeds among them, whose plans run the answer-column check (a plain model per few-valued
#: column: where a column named ``self`` once broke a keyword argument)
CLASSIFICATION = ("forest-cover", "tabular-binary-manufacturing", "leaf-species")
#: a dataset this small plans in well under a second (the sample's filler)
SMALL = {"rows": 3000, "columns": 40}
#: at most this many filler datasets for a seed whose plans take seconds each (wide classification)
SLOW_FILL = 8


def sample_offers(items: Sequence[Offer], n: int = 200, must: Sequence[tuple[str, str]] = (),
                  odd_classified: int = 6) -> list[Offer]:
    """At least ``n`` offers: ``must`` (seed id, dataset key) pairs; every dataset with an odd column name
    (:func:`odd_names`) with the quickest seed it is offered to (:data:`SPEED_ORDER`), and the ``odd_classified``
    smallest of them offered a classification seed with that seed as well (:data:`CLASSIFICATION`, the quickest
    first); the smallest dataset of each seed not in yet; then small datasets (:data:`SMALL`) taken round-robin
    across the seeds in the designer's order, each dataset once, at most :data:`SLOW_FILL` for a seed slower than
    ``toxic-comments``."""
    rank = {s: i for i, s in enumerate(SPEED_ORDER)}
    chosen: dict[tuple[str, str], Offer] = {}
    for offer in items:
        if (offer.seed["id"], offer.entry.key) in must:
            chosen[(offer.seed["id"], offer.entry.key)] = offer
    best: dict[str, Offer] = {}
    classified: dict[str, Offer] = {}
    for offer in items:
        if odd_names(offer.entry):
            key, seed = offer.entry.key, offer.seed["id"]
            if key not in best or rank.get(seed, 99) < rank.get(best[key].seed["id"], 99):
                best[key] = offer
            if seed in CLASSIFICATION and (key not in classified or CLASSIFICATION.index(seed)
                                           < CLASSIFICATION.index(classified[key].seed["id"])):
                classified[key] = offer
    for offer in best.values():
        chosen.setdefault((offer.seed["id"], offer.entry.key), offer)
    for offer in sorted(classified.values(), key=lambda o: (o.entry.rows * len(o.entry.columns), o.entry.key)
                        )[:odd_classified]:
        chosen.setdefault((offer.seed["id"], offer.entry.key), offer)
    seen = {seed for seed, _ in chosen}
    for offer in sorted(items, key=lambda o: o.entry.rows * len(o.entry.columns)):  # each seed at least once
        if offer.seed["id"] not in seen:
            chosen.setdefault((offer.seed["id"], offer.entry.key), offer)
            seen.add(offer.seed["id"])
    taken = {key for _, key in chosen}
    slow = set(SPEED_ORDER[SPEED_ORDER.index("tabular-binary-manufacturing"):])
    queues: dict[str, list[Offer]] = defaultdict(list)
    for offer in items:
        if offer.entry.rows <= SMALL["rows"] and len(offer.entry.columns) <= SMALL["columns"]:
            queues[offer.seed["id"]].append(offer)
    filled: Counter[str] = Counter()
    while len(chosen) < n and any(queues.values()):
        for seed_id, queue in queues.items():
            while queue and queue[0].entry.key in taken:
                queue.pop(0)
            if seed_id in slow and filled[seed_id] >= SLOW_FILL:
                queue.clear()
            if queue and len(chosen) < n:
                offer = queue.pop(0)
                chosen[(offer.seed["id"], offer.entry.key)] = offer
                taken.add(offer.entry.key)
                filled[seed_id] += 1
    return list(chosen.values())


def plan_pair(offer: Offer, rng_seed: int, frame: Any) -> tuple[dict[str, Any] | None, Pair]:
    """Plan one pair as the designer would: the dataset's targets in its weighted order (at most
    :data:`PER_DATASET`), the first plan kept. Exceptions are the caller's (a crash)."""
    seed, blueprint, entry = offer.seed, offer.blueprint, offer.entry
    pair = Pair(seed["id"], entry.key, rng_seed)
    rng = np.random.default_rng(derive_seed(rng_seed, seed["id"], entry.key))
    id_in_test = bool((seed.get("hints") or {}).get("id_in_test", True))
    first: Refused | None = None
    start = time.perf_counter()
    for _, option in choose([(entry, o) for o in offer.options], rng, limit=1, per_dataset=PER_DATASET):
        made = make_plan(entry, option, blueprint, blueprint.metric, rng, id_in_test=id_in_test, frame=frame)
        if not isinstance(made, Refused):
            pair.plan_s = round(time.perf_counter() - start, 3)
            pair.target = ", ".join(option.columns[:3])
            pair.renamed = sum(1 for name, src in (made.get("names") or {}).items() if isinstance(src, str)
                               and name != src)
            return made, pair
        first = first or made
        pair.target = pair.target or ", ".join(option.columns[:3])
    pair.plan_s = round(time.perf_counter() - start, 3)
    pair.status = "refused"
    pair.reason, pair.detail = (first.reason, first.detail) if first else ("target", "no target option")
    return None, pair


def program_for(cfg: dict[str, Any], entry: Entry, blueprint: Blueprint) -> tuple[Any, str]:
    """(scenario, generator.py) of a plan, as the grounded Designer and Data engineer make them."""
    scenario = scenario_from_plan(cfg, entry.doc, entry.title, blueprint)
    program_cfg = dict(cfg)
    program_cfg["description"] = write(cfg, entry.doc, scenario.title)
    return scenario, render(program_cfg)


def check_files(env_dir: Path, cfg: dict[str, Any], entry: Entry, blueprint: Blueprint, scenario: Any,
                rng: np.random.Generator) -> tuple[str, str] | None:
    """The checks a synthesis puts a generator's files through before its reference solutions run (layout,
    blueprint, grader proof, the Reviewer's deterministic checks on the description written for the realized
    sizes): None when they pass, else (reason, detail)."""
    problems = missing_files(env_dir)
    if problems:
        return "output", problems[0]
    try:
        spec = infer_spec(env_dir, blueprint.metric, blueprint.task_type, scenario.classes)
    except SpecError as exc:
        return "output", exc.problems[0]
    data = summarize(env_dir, spec)
    problems = check_output(env_dir, spec, None) or blueprint_problems(spec, data, blueprint)
    if problems:
        return "output", problems[0]
    answers = pd.read_csv(env_dir / "private" / "answers.csv", dtype={spec.id_column: str})
    sample = pd.read_csv(env_dir / "public" / "sample_submission.csv", dtype={spec.id_column: str})
    problems = prove(spec, answers, sample, rng).get("problems") or []
    if problems:
        return "grader", problems[0]
    (env_dir / "public" / "description.md").write_text(
        write(cfg, entry.doc, scenario.title, n_train=data.n_train, n_test=data.n_test), encoding="utf-8")
    problems = review(env_dir, spec)
    if problems:
        return "description", problems[0]
    return None


def run_pair(cfg: dict[str, Any], offer: Offer, pair: Pair, sandbox: Any, work: Path, keep: bool = True) -> Pair:
    """A planned pair through to its generator run in ``sandbox`` and the checks of its files (under ``work``;
    removed after unless ``keep``)."""
    start = time.perf_counter()
    rng = np.random.default_rng(derive_seed(pair.rng_seed, pair.seed_id, pair.dataset, "run"))
    try:
        scenario, program = program_for(cfg, offer.entry, offer.blueprint)
    except ValueError as exc:  # pydantic's ValidationError is a ValueError: the scenario's contract
        pair.status, pair.reason, pair.detail = "refused", "scenario", one_line(exc)
        return pair
    env_dir = work / f"{pair.seed_id}-{pair.dataset.replace(':', '-').replace('/', '-')}-{pair.rng_seed}"
    try:
        gen = run_generator(sandbox, program, env_dir, int(rng.integers(0, 2**31 - 1)))
        pair.run_s = round(time.perf_counter() - start, 3)
        if not gen.ok:
            pair.status, pair.reason, pair.detail = "refused", "generator", gen.error
            pair.traceback = gen.traceback
            return pair
        found = check_files(env_dir, cfg, offer.entry, offer.blueprint, scenario, rng)
    finally:
        if not keep:
            shutil.rmtree(env_dir, ignore_errors=True)
    pair.run_s = round(time.perf_counter() - start, 3)
    pair.status = "verified" if found is None else "refused"
    if found is not None:
        pair.reason, pair.detail = found
    return pair


def crashed(pair: Pair, exc: BaseException) -> Pair:
    pair.status, pair.reason, pair.detail = "crash", type(exc).__name__, one_line(exc)
    pair.traceback = "".join(traceback.format_exception(exc))[-4000:]
    return pair


def sweep(items: Iterable[Offer], rng_seeds: Sequence[int] = RNG_SEEDS, *, sandbox: Any = None,
          work: Path | None = None, on_pair: Any = None) -> list[Pair]:
    """Every offer at every RNG seed: planned and, with a ``sandbox``, run (without one a plan is a verified
    pair's first half: status ``planned``). Each dataset is read once. Nothing raises: an exception is a crash."""
    by_dataset: dict[str, list[Offer]] = defaultdict(list)
    for offer in items:
        by_dataset[offer.entry.key].append(offer)
    out: list[Pair] = []
    for key, group in by_dataset.items():
        try:
            frame: Any = source_frame(group[0].entry.ref)
        except Exception as exc:  # noqa: BLE001 - a dataset its package cannot read is a crash of each pair
            frame = exc
        for offer in group:
            for r in rng_seeds:
                pair = Pair(offer.seed["id"], key, r)
                try:
                    if isinstance(frame, BaseException):
                        raise frame
                    cfg, pair = plan_pair(offer, r, frame)
                    if cfg is not None:
                        pair.status = "planned"
                        if sandbox is not None and work is not None:
                            pair = run_pair(cfg, offer, pair, sandbox, work, keep=False)
                except Exception as exc:  # noqa: BLE001 - the sweep counts what raised: that is what it measures
                    pair = crashed(pair, exc)
                out.append(pair)
                if on_pair is not None:
                    on_pair(pair)
    return out


def tally(pairs: Sequence[Pair]) -> dict[str, Any]:
    """Pairs tried, verified, refused by reason, crashes (with where and why)."""
    status = Counter(p.status for p in pairs)
    refused = Counter(p.reason for p in pairs if p.status == "refused")
    return {"pairs_tried": len(pairs), "datasets": len({p.dataset for p in pairs}),
            "seeds": len({p.seed_id for p in pairs}), "verified": status.get("verified", 0),
            "planned": status.get("planned", 0), "refused": status.get("refused", 0),
            "refused_by_reason": dict(refused.most_common()), "crashes": status.get("crash", 0)}


def refused_datasets(pairs: Sequence[Pair]) -> list[dict[str, Any]]:
    """The datasets no pair of which made an environment, with their reasons (most frequent first)."""
    by: dict[str, list[Pair]] = defaultdict(list)
    for p in pairs:
        by[p.dataset].append(p)
    out = []
    for key, group in sorted(by.items()):
        if any(p.status in ("verified", "planned") for p in group):
            continue
        reasons = Counter(p.reason for p in group)
        out.append({"dataset": key, "seeds": sorted({p.seed_id for p in group}), "pairs": len(group),
                    "reasons": dict(reasons.most_common()),
                    "example": next(p.detail for p in group if p.reason == reasons.most_common(1)[0][0])})
    return out


def _log(msg: str) -> None:
    print(f"[catalog {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def run(store: Store, results_dir: Path, quick: bool = False, limit: int | None = None, **_: Any) -> BenchResult:
    if not (cat := catalog()):
        raise SandmleError("the catalog of real datasets is empty", hint="pip install 'sandmle[data]'")
    limit = 3 if quick and limit is None else limit
    rng_seeds = RNG_SEEDS[:1] if quick else RNG_SEEDS
    settings = load_settings()
    start = time.perf_counter()
    items = offers(cat, limit=limit)
    total = len(items) * len(rng_seeds)
    _log(f"{len(items)} (seed, dataset) offers x {len(rng_seeds)} RNG seed(s) = {total} pairs")
    done: list[Pair] = []

    def progress(pair: Pair) -> None:
        done.append(pair)
        if len(done) % 250 == 0 or len(done) == total:
            t = tally(done)
            _log(f"{len(done)}/{total} pairs · {t['verified']} verified · {t['refused']} refused · "
                 f"{t['crashes']} crashes · {time.perf_counter() - start:.0f} s")
    with tempfile.TemporaryDirectory(prefix="bench-catalog-") as tmp:
        with Store(Path(tmp) / "sandmle.db") as scratch:  # thousands of generator runs: not the user's store
            sandbox = get_backend(store=scratch, settings=with_solution_imports(settings.sandbox))
            try:
                pairs = sweep(items, rng_seeds, sandbox=sandbox, work=Path(tmp) / "envs", on_pair=progress)
            finally:
                sandbox.close()
    wall = time.perf_counter() - start
    summary = {**tally(pairs), "rng_seeds": list(rng_seeds), "limit": limit, "wall_s": round(wall, 1),
               "plan_s_mean": round(float(np.mean([p.plan_s for p in pairs])), 3) if pairs else None,
               "run_s_mean": round(float(np.mean([p.run_s for p in pairs if p.run_s])), 3)
               if any(p.run_s for p in pairs) else None,
               "odd_name_datasets": len({o.entry.key for o in items if odd_names(o.entry)}),
               "target_crashes": 0}
    summary["target_met"] = summary["crashes"] == 0
    rows = []
    for seed_id in dict.fromkeys(p.seed_id for p in pairs):
        mine = [p for p in pairs if p.seed_id == seed_id]
        counts = tally(mine)
        top = ", ".join(f"{k} {v}" for k, v in list(counts["refused_by_reason"].items())[:3])
        rows.append({"seed": seed_id, "datasets": counts["datasets"], "pairs": counts["pairs_tried"],
                     "verified": counts["verified"], "refused": counts["refused"], "crashes": counts["crashes"],
                     "top reasons": top})
    crashes = [p.to_dict() for p in pairs if p.status == "crash"]
    summary["crash_list"] = crashes[:50]
    summary["refused_datasets"] = refused_datasets(pairs)
    summary["reasons"] = ALL_REASONS
    notes = [f"{len(items)} (seed, dataset) offers x {len(rng_seeds)} RNG seed(s); verified = the generator ran in "
             "the sandbox and its files passed the layout, blueprint, grader-proof and description checks "
             "(reference solutions, population board and exploit audit are not run here)"]
    if limit is not None:
        notes.append(f"--limit {limit}: the first {limit} datasets the designer offers each seed, not all of them")
    return BenchResult("catalog", rows, summary, notes)
