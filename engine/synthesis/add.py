"""Bring your own program: ``sandmle envs add --seed S --program generator.py`` puts a hand-written (or LLM-written,
or edited) generator through the same checks as synthesis — the sandbox run, the layout contract, the grading
spec inferred from the files and checked against the seed's blueprint, the grader's proof, the verifier — and
stores the environment, verified or rejected with the reason that names the cause."""

from __future__ import annotations

import ast
import time
from pathlib import Path
from typing import Any, Mapping

from store import Store

from ..config import Settings, load_settings
from ..errors import ConfigError, SynthesisError
from ..grading.metrics import METRICS
from ..sandbox import get_backend
from .backends.procedural import ProceduralBackend
from .blueprint import analyze
from .contracts import Blueprint, ContractError, GeneratorProgram
from .draft import Draft
from .attempts import EnvOutcome
from .pipeline import Synthesizer
from .realized import metric_problems
from .reviewer import review
from .solutions import with_solution_imports

BACKEND = "program"


def program_title(source: str, fallback: str) -> str:
    """The first line of the program's docstring (or of its leading comment), else ``fallback``."""
    try:
        doc = ast.get_docstring(ast.parse(source))
    except SyntaxError:
        doc = None
    if not doc:
        comments = [ln.lstrip("# ").strip() for ln in source.splitlines() if ln.startswith("#")]
        doc = comments[0] if comments else ""
    first = doc.strip().splitlines()[0].strip() if doc.strip() else ""
    return first.split("  (")[0][:120] if len(first) >= 5 else fallback


def add_program(store: Store, seed_id: str, program: str, *, description: str | None = None, metric: str | None = None,
                timeout_s: float | None = None, rng_seed: int = 0, settings: Settings | None = None,
                sandbox=None) -> EnvOutcome:
    """Verify ``program`` as an environment of ``seed_id``; the outcome says verified or rejected (and why)."""
    settings = settings or load_settings()
    seed = store.seeds.get(seed_id)
    blueprint = analyze(seed)
    metric = metric or blueprint.metric
    if metric not in METRICS:
        raise ConfigError(f"--metric {metric!r} is not a known metric (known: {', '.join(sorted(METRICS))})")
    misfit = metric_problems(metric, blueprint)
    if misfit:
        raise ConfigError(f"--metric: {misfit[0]}")
    if timeout_s is not None and timeout_s <= 0:
        raise ConfigError("--timeout must be > 0 seconds")
    synthesis = settings.synthesis if timeout_s is None else \
        settings.synthesis.model_copy(update={"generator_timeout_s": timeout_s})
    own_sandbox = sandbox is None
    if own_sandbox:  # before the run is stored: a sandbox that cannot start (or confine) refuses in one line
        sandbox = get_backend(store=store, settings=with_solution_imports(settings.sandbox))
    try:
        run_id = store.runs.create("synthesis", {"seed_id": seed_id, "mode": "envs add", "metric": metric,
                                                 "rng_seed": rng_seed, "timeout_s": synthesis.generator_timeout_s,
                                                 "isolation": sandbox.isolation_note},
                                   name=f"envs add {seed_id}")
    except BaseException:
        if own_sandbox:
            sandbox.close()
        raise
    start = time.perf_counter()
    try:
        synth = Synthesizer(store, seed, ProceduralBackend(), sandbox, run_id=run_id, rng_seed=rng_seed,
                            settings=synthesis, backend_name=BACKEND)
        outcome = _verify(synth, seed, blueprint, metric, program, description)
    except BaseException as exc:
        store.runs.finish(run_id, "failed", error=str(exc))
        raise
    finally:
        if own_sandbox:
            sandbox.close()
    outcome.wall_s = round(time.perf_counter() - start, 3)
    store.runs.finish(run_id, "done", summary={"verified": int(outcome.status == "verified"), "attempted": 1,
                                               "env_id": outcome.env_id, "reason": outcome.reason})
    return outcome


def _verify(synth: Synthesizer, seed: Mapping[str, Any], blueprint: Blueprint, metric: str, program: str,
            description: str | None) -> EnvOutcome:
    draft = synth.new_draft(0)
    try:
        return _check(synth, draft, seed, blueprint, metric, program, description)
    finally:
        synth.discard(draft)


def _check(synth: Synthesizer, draft: Draft, seed: Mapping[str, Any], blueprint: Blueprint, metric: str, program: str,
           description: str | None) -> EnvOutcome:
    draft.blueprint, draft.metric = blueprint, metric
    draft.title = program_title(program, f"{seed['title']} (hand-written program)")
    try:
        parsed = GeneratorProgram.parse({"program": program, "notes": "brought with sandmle envs add"})
    except ContractError as exc:
        return synth.store_draft(draft, "rejected", exc.problems[0].removeprefix("program: Value error, "))
    evidence = synth.check_program(draft, parsed)
    if evidence is not None:
        return synth.store_draft(draft, "rejected", evidence.cause)
    if description is not None:
        (draft.env_dir / "public" / "description.md").write_text(description, encoding="utf-8")
        problems = review(draft.env_dir, draft.grading)
        if problems:
            return synth.store_draft(draft, "rejected", f"reviewer: {problems[0]}")
    return synth.store_draft(draft, "verified", "")


def read_program(path: str | Path) -> str:
    path = Path(path)
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SynthesisError(f"{path}: cannot read the program ({exc})") from None
