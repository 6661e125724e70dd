"""`sandmle bench rollout`: what an episode costs outside the policy's own code. On one synthesized environment
(procedural backend, in a temporary store): grading a submission, one score-tool call, and a scripted episode per
scaffold — wall time, time waiting on the sandbox, and the harness overhead per step (wall − sandbox, spread over
the steps: parsing, prompts, storing, grading) — plus a tiny hf model's generation speed and an eval throughput."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from store import Store

from ..agents.env import MLEEnv
from ..agents.format import ToolCall
from ..agents.policies import load_policy
from ..agents.tiny import build_tiny_model, default_corpus
from ..agents.rollout import run_episode
from ..config import load_settings
from ..envs.layout import EnvSpec
from ..eval.run import run_eval
from ..grading import grade
from ..sandbox import get_backend
from ..seeds.load import load_shipped
from ..synthesis.pipeline import synthesize
from . import BenchResult

TARGET_OVERHEAD_MS_PER_STEP = 50.0
TARGET_GRADE_MS = 50.0


def synthesized_envs(store: Store, count: int = 1) -> list[EnvSpec]:
    """``count`` verified environments synthesized (procedural backend) from one shipped seed into ``store``."""
    load_shipped(store)
    report = synthesize(store, "tabular-binary-manufacturing", count, rng_seed=7)
    if len(report.verified) < count:
        raise RuntimeError(f"the benchmark environments failed verification ({len(report.verified)}/{count})")
    return [EnvSpec.from_store(store, v.env_id) for v in report.verified]


def run(store: Store, quick: bool = False, **_options: Any) -> BenchResult:
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="sandmle-bench-rollout-") as tmp:
        bench_store = Store(Path(tmp) / "bench.db")
        try:
            env = synthesized_envs(bench_store)[0]
            sample = env.public / "sample_submission.csv"
            n = 5 if quick else 20
            grade(env, sample)
            t = time.perf_counter()
            for _ in range(n):
                grade(env, sample)
            grade_ms = (time.perf_counter() - t) / n * 1000
            rows.append({"what": "grade() one submission", "wall_s": grade_ms / 1000, "sandbox_s": 0.0, "steps": 1,
                         "overhead_ms_per_step": grade_ms})
            backend = get_backend(store=bench_store, settings=load_settings().sandbox)
            try:
                e = MLEEnv(env.id, env.public, env.grade, backend)
                e.reset()
                e.workspace.write_file("val/submission.csv", e.read("val/sample_submission.csv") or b"")
                t = time.perf_counter()
                for _ in range(n):
                    e.state.steps = 0
                    e.step(ToolCall("score", {}))
                score_ms = (time.perf_counter() - t) / n * 1000
                e.close()
                rows.append({"what": "score tool call", "wall_s": score_ms / 1000, "sandbox_s": 0.0, "steps": 1,
                             "overhead_ms_per_step": score_ms})
                policy = load_policy("scripted")
                worst = 0.0
                for scaffold, turns in (("react", 15), ("aide", 4), ("oneshot", 1)):
                    traj = run_episode(env, policy, scaffold=scaffold, sandbox=backend, store=bench_store, rng_seed=0,
                                       max_turns=turns)
                    steps = max(1, sum(1 for x in traj.turns if x.role == "assistant"))
                    over = (traj.wall_s - traj.sandbox_s) / steps * 1000
                    worst = max(worst, over)
                    rows.append({"what": f"scripted {scaffold} episode", "wall_s": traj.wall_s,
                                 "sandbox_s": traj.sandbox_s, "steps": steps, "overhead_ms_per_step": over,
                                 "medal": (traj.grade or {}).get("any_medal")})
            finally:
                backend.close()
            seeds = [0, 1] if quick else [0, 1, 2, 3]
            t = time.perf_counter()
            rep = run_eval(bench_store, "scripted", [env], scaffold="react", rng_seeds=seeds, workers=2)
            wall = time.perf_counter() - t
            rows.append({"what": f"eval react ×{len(seeds)} (2 workers)", "wall_s": wall, "sandbox_s": None,
                         "steps": rep.n_episodes, "overhead_ms_per_step": None,
                         "episodes_per_min": rep.n_episodes / wall * 60})
            rows.append(_hf_row(env, bench_store, tmp, quick))
        finally:
            bench_store.close()
    keys = ["what", "wall_s", "sandbox_s", "steps", "overhead_ms_per_step", "medal", "episodes_per_min",
            "tokens_per_s"]
    rows = [{k: r.get(k) for k in keys} for r in rows]
    summary = {"grade_ms": grade_ms, "score_tool_ms": score_ms, "worst_overhead_ms_per_step": worst,
               "target_overhead_ms_per_step": TARGET_OVERHEAD_MS_PER_STEP, "target_grade_ms": TARGET_GRADE_MS,
               "overhead_met": worst <= TARGET_OVERHEAD_MS_PER_STEP, "grade_met": grade_ms <= TARGET_GRADE_MS}
    return BenchResult("rollout", rows, summary, notes=[
        "overhead = episode wall time minus time waiting on the sandbox, per assistant turn (prompting, parsing, "
        "storing, the score tool, grading)",
        "hf row: a 4-layer, 256-wide random-init Qwen3 (≈3.5M parameters) generating 64 tokens per turn on CPU",
    ])


def _hf_row(env, bench_store, tmp: str, quick: bool) -> dict[str, Any]:
    path = build_tiny_model(Path(tmp) / "tiny", corpus=default_corpus())
    policy = load_policy(f"hf:{path},max_new_tokens=64")
    turns = 2 if quick else 4
    traj = run_episode(env, policy, scaffold="react", store=bench_store, rng_seed=0, max_turns=turns)
    generated = sum(len(x.token_ids or []) for x in traj.turns if x.role == "assistant")
    gen_s = sum(x.wall_s for x in traj.turns if x.role == "assistant")
    return {"what": f"hf tiny react episode ({turns} turns)", "wall_s": traj.wall_s, "sandbox_s": traj.sandbox_s,
            "steps": turns, "overhead_ms_per_step": None, "tokens_per_s": generated / gen_s if gen_s else None}
