"""``sandmle bench train``: GRPO steps per hour on-policy (``--max-staleness 0``) against rollouts overlapped with
the update (``--max-staleness 1``), side by side in one run, with the staleness the overlap brings and both reward
curves (does overlapping cost learning?).

Setup (a temporary store, the pieces of ``bench learn``): environments synthesized from two shipped seeds, the
``tiny`` model, the mixed teacher's demonstrations and a short SFT; then GRPO from the SFT adapter with tiny's recipe
(2 environments × a group of 4 per step, react), the same config and seed for both modes, the modes interleaved over
rounds (0, 1, 0, 1, …) so load on the machine hits both alike; each mode's figures are the median of its rounds.

torch runs on one intra-op thread: the rollouts' sampler and the update then each take one core, which is what
the overlap can use on a 2-core machine (on a GPU server: the trainer's GPU and the sampler's)."""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from store import Store

from ..agents.policies import tiny
from ..rl.config import GRPOConfig, load_config
from ..rl.grpo import GRPOTrainer
from . import BenchResult, torch_threads
from ._plot import line_plot
from .learn import LearnPlan, collect_demos, make_envs, train_sft

TARGET_SPEEDUP = 1.5
TORCH_THREADS = 1
#: rollout workers in both modes: room for two steps' rollouts at once, which only the overlapped mode can fill
WORKERS = 16
PLAN = LearnPlan(train_seeds=("tabular-binary-manufacturing", "pizza-requests"), heldout_seeds=("leaf-species",),
                 train_envs_per_seed=1, heldout_envs_per_seed=1, demos_per_teacher=2, sft_epochs=4, grpo_steps=6,
                 eval_seeds=(0,))
QUICK = replace(PLAN, demos_per_teacher=1, sft_epochs=1, grpo_steps=2)


@dataclass
class Mode:
    label: str
    max_staleness: int


MODES = [Mode("on-policy (max_staleness 0)", 0), Mode("overlapped (max_staleness 1)", 1)]


def _log(msg: str) -> None:
    print(f"[train {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def grpo_run(bs: Store, adapter: str, steps: int, mode: Mode, seed: int) -> dict[str, Any]:
    """One GRPO run from the SFT adapter (tiny's recipe; one checkpoint, at the end): its wall time and per-step
    metrics."""
    cfg = load_config(GRPOConfig, None, {"model": tiny.NAME, "adapter": adapter, "steps": steps, "seed": seed,
                                         "env_split": "train", "save_every": steps, "rollout_workers": WORKERS,
                                         "max_staleness": mode.max_staleness, "device": "cpu", "name": mode.label})
    trainer = GRPOTrainer(bs, cfg)
    t0 = time.perf_counter()
    summary = trainer.train()
    wall = time.perf_counter() - t0
    metrics = bs.runs.metrics(trainer.run_id)
    lags = [t.staleness for t in bs.trajectories.list(run_id=trainer.run_id) if t.staleness is not None]

    def per_step(name: str) -> list[float]:
        return [v for _, v in metrics.get(name, [])]

    return {"wall_s": wall, "steps": summary["steps_done"], "steps_per_hour": summary["steps_done"] / wall * 3600,
            "rollout_s": statistics.fmean(per_step("rollout_s")), "update_s": statistics.fmean(per_step("update_s")),
            "reward": per_step("reward_mean"), "staleness_mean": statistics.fmean(lags) if lags else 0.0,
            "stale_share": sum(lag > 0 for lag in lags) / max(len(lags), 1), "refused": sum(per_step("stale")),
            "trajectories": len(lags), "rollouts_per_step": cfg.envs_per_step * cfg.group_size}


def run(store: Store, quick: bool = False, *, results_dir: str | Path, seed: int = 0, **_: Any) -> BenchResult:
    plan = QUICK if quick else PLAN
    steps, rounds = plan.grpo_steps, 1 if quick else 2
    t0 = time.monotonic()
    runs: dict[str, list[dict[str, Any]]] = {m.label: [] for m in MODES}
    with torch_threads(TORCH_THREADS), tempfile.TemporaryDirectory(prefix="sandmle-bench-train-") as tmp:
        bs = Store(Path(tmp) / "bench.db")
        try:
            train_ids = make_envs(bs, plan, seed, _log)[0]
            collect_demos(bs, plan, train_ids)
            sft, sft_summary = train_sft(bs, plan, seed)
            _log(f"setup done in {time.monotonic() - t0:.0f}s (SFT loss {sft_summary['train_loss']:.3f})")
            for r in range(rounds):
                for mode in MODES:
                    runs[mode.label].append(grpo_run(bs, sft.run_id, steps, mode, seed))
                    _log(f"round {r + 1} {mode.label}: {runs[mode.label][-1]['wall_s']:.0f}s")
        finally:
            bs.close()
    rows, curves = [], {}
    for mode in MODES:
        done = runs[mode.label]
        curves[mode.label] = [statistics.fmean(r["reward"][i] for r in done) for i in range(steps)]
        rows.append({"mode": mode.label, "steps_per_hour": statistics.median(r["steps_per_hour"] for r in done),
                     "step_s": statistics.median(r["wall_s"] / r["steps"] for r in done),
                     "rollout_wait_s": statistics.median(r["rollout_s"] for r in done),
                     "update_s": statistics.median(r["update_s"] for r in done),
                     "staleness_mean": statistics.fmean(r["staleness_mean"] for r in done),
                     "stale_share": statistics.fmean(r["stale_share"] for r in done),
                     "refused": sum(r["refused"] for r in done),
                     "reward_first": curves[mode.label][0], "reward_last": curves[mode.label][-1]})
    on, over = rows
    speedup = over["steps_per_hour"] / on["steps_per_hour"]
    png = line_plot({label: list(enumerate(rewards, start=1)) for label, rewards in curves.items()},
                    Path(results_dir) / ("train_reward_quick.png" if quick else "train_reward.png"),
                    title="GRPO from SFT: on-policy vs rollouts overlapped with the update",
                    ylabel="mean reward (mean over rounds)")
    summary = {"speedup": speedup, "target_speedup": TARGET_SPEEDUP, "met": speedup >= TARGET_SPEEDUP,
               "reward_curves": curves, "steps": steps, "rounds": rounds, "torch_threads": TORCH_THREADS,
               "rollouts_per_step": runs[MODES[0].label][0]["rollouts_per_step"], "plot": png.name,
               "total_s": round(time.monotonic() - t0, 1)}
    return BenchResult("train", rows, summary, notes=[
        f"tiny model (hidden {tiny.HIDDEN}, {tiny.LAYERS} layers, macro tokens) after a short SFT on the mixed "
        f"teacher's demonstrations; GRPO with tiny's recipe, {steps} steps × "
        f"{summary['rollouts_per_step']} rollouts (react), {WORKERS} rollout workers, torch on {TORCH_THREADS} "
        f"thread; {rounds} round(s), modes interleaved, medians",
        "rollout_wait_s = time the trainer waited for a step's rollouts (with overlap most of them ran during the "
        "previous update); staleness_mean / stale_share over the trained trajectories (updates between the "
        "sampling and the trained weights); refused = trajectories staler than max_staleness (masked)",
        "no GPU was lent to this work: measured on the CPU only",
    ])
