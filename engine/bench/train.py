"""``sandmle bench train``: GRPO steps per hour on-policy (``--max-staleness 0``) against rollouts overlapped with
the update (``--max-staleness 1``), side by side in one run, with the staleness the overlap brings and the reward
curves (does overlapping cost learning?) — with the batched in-process sampler (``hf``: sampling and update share
one process) and with a real vLLM server as the sampler (``vllm``: a separate process, the case where overlap
should pay even on 2 cores; the rows are left out, with a note, where no vLLM is found).

Setup (a temporary store, the pieces of ``bench learn``): environments synthesized from two shipped seeds, the
``tiny`` model, the mixed teacher's demonstrations and a short SFT; then GRPO from the SFT adapter with tiny's recipe
(2 environments × a group of 4 per step, react), the same config and seed for both modes, the modes interleaved over
rounds (0, 1, 0, 1, …) so load on the machine hits both alike; each mode's figures are the median of its rounds.
The vLLM server is started once, before the rounds, on tiny with the SFT adapter's norms merged in (vLLM serves
LoRA weights only: with ``--sampler vllm`` tiny's recipe keeps the norms frozen, :mod:`engine.agents.tiny.recipe`), and
each vLLM run reaches it through ``sampler_url``.

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

from ..agents import tiny
from ..rl.config import GRPOConfig, load_config
from ..rl.grpo import GRPOTrainer
from . import BenchResult, torch_threads
from ._plot import line_plot
from ..inference.base import SamplerError
from ._vllm import QUICK_NO_VLLM, BenchServer, log_path, tiny_server
from .learn import LearnPlan, collect_demos, make_envs, train_sft

TARGET_SPEEDUP = 1.5
#: overlapped vs on-policy with the vLLM server as the sampler
TARGET_SPEEDUP_VLLM = 1.3
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
    sampler: str = "hf"


MODES = [Mode("on-policy (max_staleness 0)", 0), Mode("overlapped (max_staleness 1)", 1)]
VLLM_MODES = [Mode("vllm on-policy (max_staleness 0)", 0, "vllm"),
              Mode("vllm overlapped (max_staleness 1)", 1, "vllm")]


def _log(msg: str) -> None:
    print(f"[train {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def grpo_run(bs: Store, adapter: str, steps: int, mode: Mode, seed: int, url: str | None = None) -> dict[str, Any]:
    """One GRPO run from the SFT adapter (tiny's recipe; one checkpoint, at the end; the vLLM server at ``url``
    for a vLLM mode): its wall time and per-step metrics."""
    cfg = load_config(GRPOConfig, None, {"model": tiny.NAME, "adapter": adapter, "steps": steps, "seed": seed,
                                         "env_split": "train", "save_every": steps, "rollout_workers": WORKERS,
                                         "max_staleness": mode.max_staleness, "device": "cpu", "name": mode.label,
                                         "sampler": mode.sampler, "sampler_url": url})
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
            "trajectories": len(lags), "rollouts_per_step": cfg.envs_per_step * cfg.group_size,
            "logp_diff": statistics.fmean(per_step("sampler_logp_diff"))}


def run(store: Store, quick: bool = False, *, results_dir: str | Path, seed: int = 0, **_: Any) -> BenchResult:
    plan = QUICK if quick else PLAN
    steps, rounds = plan.grpo_steps, 1 if quick else 2
    t0 = time.monotonic()
    modes, server, why = list(MODES), None, None
    runs: dict[str, list[dict[str, Any]]] = {m.label: [] for m in MODES + VLLM_MODES}
    with torch_threads(TORCH_THREADS), tempfile.TemporaryDirectory(prefix="sandmle-bench-train-") as tmp:
        bs = Store(Path(tmp) / "bench.db")
        try:
            train_ids = make_envs(bs, plan, seed, _log)[0]
            collect_demos(bs, plan, train_ids)
            sft, sft_summary = train_sft(bs, plan, seed)
            server, why = (None, QUICK_NO_VLLM) if quick else tiny_server(bs, sft.run_id, Path(tmp),
                                                                                log_path(store, "train"))
            modes += VLLM_MODES if server is not None else []
            _log(f"setup done in {time.monotonic() - t0:.0f}s (SFT loss {sft_summary['train_loss']:.3f}; vLLM: "
                 + (f"started in {server.startup_s:.0f}s)" if server else f"none: {why})"))
            for r in range(rounds):
                for mode in modes:
                    url = server.url if server is not None and mode.sampler == "vllm" else None
                    try:
                        runs[mode.label].append(grpo_run(bs, sft.run_id, steps, mode, seed, url))
                    except SamplerError as exc:
                        raise server.explain(exc) if url is not None and server is not None else exc from None
                    _log(f"round {r + 1} {mode.label}: {runs[mode.label][-1]['wall_s']:.0f}s")
            server_rss = server.rss_mb() if server is not None else None
        finally:
            if server is not None:
                server.stop()
            bs.close()
    rows, curves = _rows(modes, runs, steps)
    return _result(rows, curves, modes, runs, server, why, server_rss, steps, rounds, quick, results_dir, t0)


def _rows(modes: list[Mode], runs: dict[str, list[dict[str, Any]]], steps: int
          ) -> tuple[list[dict[str, Any]], dict[str, list[float]]]:
    rows, curves = [], {}
    for mode in modes:
        done = runs[mode.label]
        curves[mode.label] = [statistics.fmean(r["reward"][i] for r in done) for i in range(steps)]
        rows.append({"mode": mode.label, "steps_per_hour": statistics.median(r["steps_per_hour"] for r in done),
                     "step_s": statistics.median(r["wall_s"] / r["steps"] for r in done),
                     "rollout_wait_s": statistics.median(r["rollout_s"] for r in done),
                     "update_s": statistics.median(r["update_s"] for r in done),
                     "staleness_mean": statistics.fmean(r["staleness_mean"] for r in done),
                     "stale_share": statistics.fmean(r["stale_share"] for r in done),
                     "refused": sum(r["refused"] for r in done),
                     "logp_diff": statistics.fmean(r["logp_diff"] for r in done),
                     "reward_first": curves[mode.label][0], "reward_last": curves[mode.label][-1]})
    return rows, curves


def _result(rows: list[dict[str, Any]], curves: dict[str, list[float]], modes: list[Mode],
            runs: dict[str, list[dict[str, Any]]], server: BenchServer | None, why: str | None,
            server_rss: float | None, steps: int, rounds: int, quick: bool, results_dir: str | Path,
            t0: float) -> BenchResult:
    by = {r["mode"]: r for r in rows}
    speedup = by[MODES[1].label]["steps_per_hour"] / by[MODES[0].label]["steps_per_hour"]
    png = line_plot({label: list(enumerate(rewards, start=1)) for label, rewards in curves.items()},
                    Path(results_dir) / ("train_reward_quick.png" if quick else "train_reward.png"),
                    title="GRPO from SFT: on-policy vs rollouts overlapped with the update",
                    ylabel="mean reward (mean over rounds)")
    summary: dict[str, Any] = {"speedup": speedup, "target_speedup": TARGET_SPEEDUP, "met": speedup >= TARGET_SPEEDUP}
    if server is not None:
        vllm_speedup = by[VLLM_MODES[1].label]["steps_per_hour"] / by[VLLM_MODES[0].label]["steps_per_hour"]
        summary.update({"vllm_speedup": vllm_speedup, "target_vllm_speedup": TARGET_SPEEDUP_VLLM,
                        "vllm_met": vllm_speedup >= TARGET_SPEEDUP_VLLM,
                        "vllm_vs_hf_on_policy": by[VLLM_MODES[0].label]["steps_per_hour"]
                        / by[MODES[0].label]["steps_per_hour"],
                        "vllm_vs_hf_overlapped": by[VLLM_MODES[1].label]["steps_per_hour"]
                        / by[MODES[1].label]["steps_per_hour"],
                        "vllm_version": server.version, "vllm_startup_s": round(server.startup_s, 1),
                        "vllm_rss_mb": round(server_rss or 0.0)})
    else:
        summary["vllm"] = f"not measured: {why}"
    summary.update({"reward_curves": curves, "steps": steps, "rounds": rounds, "torch_threads": TORCH_THREADS,
                    "rollouts_per_step": runs[MODES[0].label][0]["rollouts_per_step"], "plot": png.name,
                    "total_s": round(time.monotonic() - t0, 1)})
    return BenchResult("train", rows, summary, notes=[
        f"tiny model (hidden {tiny.HIDDEN}, {tiny.LAYERS} layers, macro tokens) after a short SFT on the mixed "
        f"teacher's demonstrations; GRPO with tiny's recipe, {steps} steps × "
        f"{summary['rollouts_per_step']} rollouts (react), {WORKERS} rollout workers, torch on {TORCH_THREADS} "
        f"thread; {rounds} round(s), modes interleaved, medians",
        "rollout_wait_s = time the trainer waited for a step's rollouts (with overlap most of them ran during the "
        "previous update); staleness_mean / stale_share over the trained trajectories (updates between the "
        "sampling and the trained weights); refused = trajectories staler than max_staleness (masked); logp_diff "
        "= mean |log p sampler - log p trainer| per token",
        "vllm rows: a real vLLM server (vLLM built for CPU, float32, started once before the rounds on tiny with "
        "the SFT norms merged in; the trainer publishes its LoRA adapter to it after every update); with vLLM, "
        "tiny's recipe keeps the norms frozen in GRPO (the hf rows train them)"
        if server is not None else f"no vllm rows: {why}",
        "no GPU was lent to this work: measured on the CPU only",
    ])
