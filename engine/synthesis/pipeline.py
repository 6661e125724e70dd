"""The synthesis pipeline: Analyst → Designer → Grader → Data engineer → (Grader proof) → Verifier → Reviewer,
with failures sent back to the role that can fix them a bounded number of times. Every attempt (prompt, output,
verdict, feedback, usage) is stored, and every environment — verified or rejected, with its reason — too.

``synthesize(store, seed_id, count)`` runs ``count`` environment attempts on ``workers`` threads (the heavy work
happens in sandbox subprocesses) and returns a :class:`SynthReport`.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

import numpy as np
import pandas as pd

from ..config import load_settings
from ..envs.layout import GradeSpec, envs_root, new_build_dir
from ..errors import InfrastructureError, SandmleError, SynthesisError
from ..grading.metrics import METRICS, get_metric
from ..sandbox import Limits, RunMeta, SandboxBackend, get_backend
from . import prompts
from .blueprint import Blueprint, check_blueprint
from .designer import check_scenario, fingerprint, similarity
from .engineer import build_config, check_output, render_program, run_generator
from .fidelity import expected_profile
from .grader import grade_spec, prove
from .llm import LLMBackend, MalformedOutput, get_llm
from .record import store_environment
from .reviewer import review
from .solutions import with_solution_imports
from .verifier import verify

DUPLICATE_SIMILARITY = 0.85


@dataclass
class EnvOutcome:
    env_id: str
    seed_id: str
    status: str  #: verified | rejected | error (could not run: nothing stored)
    reason: str = ""
    wall_s: float = 0.0
    metric: str = ""
    strong: float | None = None
    trivial: float | None = None
    attempts: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class SynthReport:
    run_id: str
    seed_id: str
    backend: str
    outcomes: list[EnvOutcome] = field(default_factory=list)
    wall_s: float = 0.0
    stopped: bool = False

    @property
    def verified(self) -> list[EnvOutcome]:
        return [o for o in self.outcomes if o.status == "verified"]

    @property
    def errors(self) -> list[EnvOutcome]:
        """Attempts that could not run (an unreachable backend): not verdicts, nothing stored."""
        return [o for o in self.outcomes if o.status == "error"]

    def summary(self) -> dict[str, Any]:
        n_ok, n_err = len(self.verified), len(self.errors)
        return {"run_id": self.run_id, "seed_id": self.seed_id, "backend": self.backend,
                "attempted": len(self.outcomes), "verified": n_ok, "rejected": len(self.outcomes) - n_ok - n_err,
                "errors": n_err,
                "wall_s": round(self.wall_s, 2),
                "verified_per_min": round(n_ok / self.wall_s * 60, 2) if self.wall_s > 0 else 0.0,
                "stopped": self.stopped}

    def to_dict(self) -> dict[str, Any]:
        return {**self.summary(), "environments": [o.to_dict() for o in self.outcomes]}


class _Rejected(Exception):
    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def derive_seed(*parts: Any) -> int:
    h = hashlib.sha256(":".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(h[:4], "big") & 0x7FFFFFFF


class Synthesizer:
    """One synthesis batch: shared backend, sandbox, store handle and near-duplicate registry."""

    def __init__(self, store, seed: dict[str, Any], llm: LLMBackend, sandbox: SandboxBackend, *, run_id: str,
                 rng_seed: int, max_retries: int = 3, ladder_seeds: int = 2, limits: Limits | None = None):
        self.store, self.seed, self.llm, self.sandbox = store, seed, llm, sandbox
        self.run_id, self.rng_seed = run_id, rng_seed
        self.max_retries, self.ladder_seeds = max_retries, ladder_seeds
        self.limits = limits or sandbox.default_limits
        self._lock = threading.Lock()
        self._fingerprints = [fp for _, fp in store.envs.fingerprints(seed["id"])]

    # ------------------------------------------------------------------ bookkeeping
    def record(self, env_id: str, role: str, attempt: int, prompt: str, output: Any, verdict: str,
               feedback: str | None, usage: dict | None, wall_s: float) -> None:
        self.store.envs.add_attempt({
            "run_id": self.run_id, "seed_id": self.seed["id"], "env_id": env_id, "role": role, "attempt": attempt,
            "backend": self.llm.name, "prompt": prompt, "output": output if isinstance(output, str) else
            json.dumps(output, default=str, sort_keys=True), "verdict": verdict, "feedback": feedback,
            "usage": usage or {}, "wall_s": round(wall_s, 4)})

    def ask(self, env_id: str, role: str, context: dict[str, Any], validate: Callable[[dict], list[str]]) -> dict:
        """Ask the backend for a role's JSON output; re-ask with feedback on malformed or invalid output."""
        feedback = None
        for attempt in range(1, self.max_retries + 2):
            system, prompt = prompts.render(role, context, feedback)
            start = time.perf_counter()
            try:
                comp = self.llm.complete(role, system, prompt, context={**context, "attempt": attempt})
            except MalformedOutput as exc:
                feedback = f"{exc}. Answer with one JSON object only."
                verdict = "retry" if attempt <= self.max_retries else "reject"
                self.record(env_id, role, attempt, prompt, getattr(exc, "text", ""), verdict, feedback,
                            getattr(exc, "usage", None), time.perf_counter() - start)
                continue
            problems = validate(comp.data)
            verdict = "ok" if not problems else ("retry" if attempt <= self.max_retries else "reject")
            feedback = "; ".join(problems) or None
            self.record(env_id, role, attempt, prompt, comp.text or comp.data, verdict, feedback, comp.usage,
                        time.perf_counter() - start)
            if not problems:
                return comp.data
            context = {**context, "rng": np.random.default_rng(derive_seed(self.rng_seed, env_id, role, attempt))}
        raise _Rejected(f"{role}: no acceptable output after {self.max_retries + 1} attempts"
                        + (f" ({feedback})" if feedback else ""))

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
            "target_columns": seed["target_columns"], "backend": self.llm.name}, envs_root(self.store))

    def run_one(self, index: int) -> EnvOutcome:
        start = time.perf_counter()
        env_seed = derive_seed(self.rng_seed, self.seed["id"], index)
        rng = np.random.default_rng(env_seed)
        env_id = self.reserve_env_id(index)
        root = envs_root(self.store)
        # built in a private folder, renamed to envs/<id> when stored (engine.envs.layout)
        state: dict[str, Any] = {"env_id": env_id, "env_dir": new_build_dir(root, env_id), "final_dir": root / env_id,
                                 "rng": rng}
        try:
            outcome = self._pipeline(state)
        except _Rejected as exc:
            outcome = self._reject(state, exc.reason)
        except InfrastructureError as exc:  # not a verdict on the environment: nothing is stored
            outcome = EnvOutcome(env_id=env_id, seed_id=self.seed["id"], status="error", reason=str(exc))
        except SandmleError as exc:
            outcome = self._reject(state, f"{type(exc).__name__}: {exc}")
        finally:
            if state["env_dir"].exists():  # not stored (an error, or an exception on its way out)
                shutil.rmtree(state["env_dir"], ignore_errors=True)
                self.store.envs.drop_pending(env_id)
        outcome.wall_s = round(time.perf_counter() - start, 3)
        return outcome

    def _pipeline(self, st: dict[str, Any]) -> EnvOutcome:
        env_id, rng = st["env_id"], st["rng"]
        seed = self.seed
        ctx: dict[str, Any] = {"seed": seed, "rng": rng}
        bp_data = self.ask(env_id, "analyst", ctx, lambda d: check_blueprint(d, seed))
        bp = Blueprint.from_dict({**bp_data, "seed_id": seed["id"]})
        st["blueprint"] = bp

        def scenario_ok(sc: dict) -> list[str]:
            problems = check_scenario(sc, bp)
            if not problems:
                fp = fingerprint(sc)
                with self._lock:
                    close = [f for f in self._fingerprints if similarity(fp, f) >= DUPLICATE_SIMILARITY]
                    if not close:
                        self._fingerprints.append(fp)
                if close:
                    problems.append("near-duplicate of a stored environment: choose another domain or features")
            return problems

        scenario = self.ask(env_id, "designer", {**ctx, "blueprint": bp.to_dict()}, scenario_ok)
        st["scenario"] = scenario

        def metric_ok(d: dict) -> list[str]:
            m = d.get("metric")
            if m not in METRICS:
                return [f"metric {m!r} is not in the metric library ({', '.join(sorted(METRICS))})"]
            want = get_metric(bp.metric)
            if get_metric(m).prediction != want.prediction or get_metric(m).lower_is_better != want.lower_is_better:
                return [f"metric {m!r} does not fit the blueprint's {bp.metric!r} (prediction kind and direction)"]
            return []

        metric = self.ask(env_id, "grader", {**ctx, "blueprint": bp.to_dict(), "scenario": scenario}, metric_ok)["metric"]
        spec = grade_spec(bp, scenario, metric)
        st["spec"] = spec
        previous, factor = None, 1.0
        last_reason = ""
        for attempt in range(1, self.max_retries + 2):
            knobs = self.ask(env_id, "engineer", {**ctx, "blueprint": bp.to_dict(), "scenario": scenario,
                                                  "previous": previous, "signal_factor": factor,
                                                  "feedback": last_reason}, _knobs_ok)
            data_seed = int(rng.integers(0, 2**31 - 1))
            config = build_config(bp, scenario, spec, knobs)
            program = render_program(config)
            st.update({"knobs": knobs, "data_seed": data_seed, "program": program})
            t0 = time.perf_counter()
            gen = run_generator(self.sandbox, program, st["env_dir"], data_seed, limits=self.limits,
                                meta=RunMeta(run_id=self.run_id))
            problems = [gen.error] if not gen.ok else check_output(st["env_dir"], spec, scenario)
            if problems:
                last_reason = "; ".join(problems)
                self.record(env_id, "engineer", attempt, f"run generator.py --seed {data_seed}", {"knobs": knobs},
                            "retry" if attempt <= self.max_retries else "reject", last_reason, {},
                            time.perf_counter() - t0)
                previous, factor = knobs, 1.0
                continue
            (st["env_dir"] / "generator.py").write_text(program, encoding="utf-8")
            answers = pd.read_csv(st["env_dir"] / "private" / "answers.csv", dtype={spec.id_column: str})
            sample = pd.read_csv(st["env_dir"] / "public" / "sample_submission.csv", dtype={spec.id_column: str})
            t1 = time.perf_counter()
            proof = prove(spec, answers, sample, rng)
            self.record(env_id, "grader", attempt, "prove the grader: perfect, sample, random submissions",
                        {k: v for k, v in proof.items() if k != "problems"}, "ok" if not proof["problems"] else "reject",
                        "; ".join(proof["problems"]) or None, {}, time.perf_counter() - t1)
            st["proof"] = proof
            if proof["problems"]:
                raise _Rejected("grader: " + proof["problems"][0])
            t2 = time.perf_counter()
            verdict = verify(self.sandbox, st["env_dir"], spec, seeds=tuple(range(self.ladder_seeds)),
                             media_col=scenario.get("media_column"), limits=self.limits,
                             meta=RunMeta(run_id=self.run_id), rng=rng, expected=expected_profile(seed))
            st["verdict"] = verdict
            self.record(env_id, "verifier", attempt, "reference ladder, fuzzing, leakage probes",
                        verdict.report, "ok" if verdict.ok else ("retry" if verdict.send_to == "engineer"
                                                                 and attempt <= self.max_retries else "reject"),
                        verdict.reason or None, {}, time.perf_counter() - t2)
            if not verdict.ok:
                last_reason = verdict.reason
                if verdict.send_to != "engineer":
                    raise _Rejected(f"verifier: {verdict.reason}")
                previous, factor = knobs, verdict.signal_factor
                continue
            t3 = time.perf_counter()
            problems = review(st["env_dir"], spec)
            self.record(env_id, "reviewer", attempt, "description agrees with the data", {"problems": problems},
                        "ok" if not problems else "reject", "; ".join(problems) or None, {}, time.perf_counter() - t3)
            if problems:
                raise _Rejected(f"reviewer: {problems[0]}")
            return self._store(st, "verified", "")
        raise _Rejected(f"engineer: gave up after {self.max_retries + 1} attempts: {last_reason}")

    # ------------------------------------------------------------------ storing
    def _store(self, st: dict[str, Any], status: str, reason: str) -> EnvOutcome:
        verdict = st.get("verdict")
        spec: GradeSpec | None = st.get("spec")
        store_environment(self.store, st, seed=self.seed, run_id=self.run_id, backend=self.llm.name,
                          status=status, reason=reason)
        means = (verdict.report.get("means") if verdict else None) or {}
        return EnvOutcome(env_id=st["env_id"], seed_id=self.seed["id"], status=status, reason=reason,
                          metric=spec.metric if spec else "", strong=means.get("strong"),
                          trivial=means.get("trivial"))

    def _reject(self, st: dict[str, Any], reason: str) -> EnvOutcome:
        return self._store(st, "rejected", reason)


def _knobs_ok(d: dict) -> list[str]:
    problems = []
    bounds = {"signal": (0.05, 5.0), "noise": (0.0, 3.0), "label_noise": (0.0, 0.3), "missing_rate": (0.0, 0.5),
              "shift": (0.0, 2.0)}
    for key, (lo, hi) in bounds.items():
        v = d.get(key)
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not (lo <= float(v) <= hi):
            problems.append(f"{key} must be a number in [{lo}, {hi}], got {v!r}")
    return problems


def synthesize(store, seed_id: str, count: int, *, backend: str | LLMBackend = "procedural", workers: int = 1,
               rng_seed: int | None = None, settings=None, sandbox=None,
               on_done: Callable[[EnvOutcome], None] | None = None) -> SynthReport:
    """Synthesize ``count`` environments from one seed; returns what was verified and rejected (and why)."""
    if count < 1:
        raise SynthesisError("--count must be at least 1")
    if workers < 1:
        raise SynthesisError("--workers must be at least 1")
    settings = settings or load_settings()
    seed = store.seeds.get(seed_id)
    if not seed.get("enabled", 1):
        raise SynthesisError(f"seed {seed_id} is disabled", hint=f"sandmle seeds enable {seed_id}")
    llm = backend if isinstance(backend, LLMBackend) else get_llm(backend, settings)
    if rng_seed is None:
        rng_seed = int.from_bytes(__import__("os").urandom(4), "big") & 0x7FFFFFFF
    own_sandbox = sandbox is None
    if own_sandbox:
        sandbox = get_backend(store=store, settings=with_solution_imports(settings.sandbox))
    run_id = store.runs.create("synthesis", {"seed_id": seed_id, "count": count, "backend": llm.name,
                                             "workers": workers, "rng_seed": rng_seed},
                               name=f"synth {seed_id} x{count}")
    synth = Synthesizer(store, seed, llm, sandbox, run_id=run_id, rng_seed=rng_seed,
                        max_retries=settings.synthesis.max_retries, ladder_seeds=settings.synthesis.ladder_seeds)
    report = SynthReport(run_id=run_id, seed_id=seed_id, backend=llm.name)
    start = time.perf_counter()
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="synth")
    try:
        pending = {pool.submit(synth.run_one, i) for i in range(count)}
        while pending:
            done, pending = wait(pending, timeout=1.0, return_when=FIRST_COMPLETED)
            store.runs.heartbeat(run_id)
            for fut in done:
                outcome = fut.result()
                report.outcomes.append(outcome)
                if on_done:
                    on_done(outcome)
    except KeyboardInterrupt:
        report.stopped = True
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    except BaseException as exc:
        report.wall_s = time.perf_counter() - start
        store.runs.finish(run_id, "failed", summary=report.summary(), error=str(exc))
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        report.wall_s = time.perf_counter() - start
        if report.stopped:
            store.runs.finish(run_id, "stopped", summary=report.summary())
        if own_sandbox:
            sandbox.close()
        if isinstance(backend, str):
            llm.close()
    report.outcomes.sort(key=lambda o: o.env_id)
    if report.outcomes and len(report.errors) == len(report.outcomes):
        store.runs.finish(run_id, "failed", summary=report.summary(),
                          error=f"every attempt failed to run: {report.errors[0].reason}")
    else:
        store.runs.finish(run_id, "done", summary=report.summary())
    return report
