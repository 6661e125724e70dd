"""``sandmle bench sampler``: the batched hf sampler against one-at-a-time generation and a real vLLM server, side
by side in one run.

On the project's tiny model (random init, built here; CPU) and two synthesized environments in a temporary store,
each measured with four samplers:

- *before*: one request at a time, the whole conversation re-encoded every turn (what a lock around
  ``model.generate`` gave);
- *one at a time*: one request at a time, with the prefix cache (a turn prefills only its new messages);
- *batched*: concurrent requests share batches (up to 8), with the prefix cache;
- *vllm server*: a real ``vllm serve`` (vLLM built for CPU, float32; started once, its startup timed apart) in a
  process of its own, sampling through a zero-initialised LoRA adapter (the base model's outputs), one request per
  sample (vLLM batches them itself, continuous batching). Its ``cpu_ms_per_token`` counts this process's CPU time
  and the server's (every process of its group). Left out, with a note, where no vLLM is found.

1. 8 react episodes at once (8 threads): generated tokens/s and episodes/min, and whether the hf samplers produced
   the same tokens (same per-request seeds; vLLM draws its own random numbers, so its tokens differ);
2. one GRPO step (2 environments × group of 4 = 8 rollouts, 8 rollout workers): step wall time and its split —
   sampling (the sampler's busy time), sandbox (time episodes waited on the sandbox, summed over the episodes
   running at once), update (the optimizer step).

A random-init model rarely writes a well-formed tool call, so its episodes spend almost no time in the sandbox:
the split shows the model side, which is what the sampler changes.

torch runs on one intra-op thread here: on a shared 2-core machine under load, two threads made the tiny model
10-20x slower in every mode (the threads spin waiting for each other), which buried the comparison in noise. The
episode runs are repeated (3 rounds, modes interleaved) and their medians reported; ``cpu_ms_per_token`` (this
process's CPU time per generated token) is less sensitive to other jobs than wall time."""

from __future__ import annotations

import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from store import Store

from ..agents.tiny import build_tiny_model, default_corpus
from ..agents.policies.hf import HFPolicy
from ..agents.rollout import run_episode
from ..inference.base import SamplerError
from ..inference.vllm_server import VLLMServerSampler
from ..models.loading import from_pretrained
from ..rl.config import GRPOConfig
from ..rl.grpo import GRPOTrainer
from ..rl.modeling import lora_targets
from ..sandbox import get_backend
from . import BenchResult, torch_threads
from ._vllm import QUICK_NO_VLLM, BenchServer, log_path, start
from .rollout import synthesized_envs

EPISODES = 8
TARGET_TOKENS_RATIO = 4.0
TARGET_STEP_SPEEDUP = 2.0
PREFIX = 32768
TORCH_THREADS = 1
#: (label, max batch, prefix-cache tokens)
MODES = [("before: one at a time, re-encoding", 1, 0), ("one at a time", 1, PREFIX),
         (f"batched (≤{EPISODES})", EPISODES, PREFIX)]
VLLM = "vllm server (separate process)"
LORA_R = 8


def _vllm_policy(model_path: Path, server: BenchServer, adapter_dir: Path, new_tokens: int) -> HFPolicy:
    """The tiny model behind the vLLM server, through a LoRA adapter with B = 0 (so: the base model's outputs)."""
    from peft import LoraConfig, get_peft_model  # heavy optional dependency

    model, tok = from_pretrained(model_path, device="cpu")
    peft = get_peft_model(model, LoraConfig(r=LORA_R, lora_alpha=2 * LORA_R, target_modules=lora_targets(model)))
    sampler = VLLMServerSampler(server.url, adapter_dir=adapter_dir)
    sampler.publish(peft.eval(), 0)
    return HFPolicy.from_loaded(peft, tok, sampler, name="hf:tiny@vllm", max_new_tokens=new_tokens)


def _episodes(bench_store, envs: list, policy: HFPolicy, turns: int, server: BenchServer | None = None
              ) -> dict[str, Any]:
    params = sum(p.numel() for n, p in policy.model.named_parameters() if "lora_" not in n)
    backends: dict[str, Any] = {}
    lock = threading.Lock()

    def one(i: int):
        with lock:  # one warm sandbox backend per worker thread, as GRPO keeps them
            backend = backends.setdefault(threading.current_thread().name, get_backend("local", store=bench_store))
        return run_episode(envs[i % len(envs)], policy, scaffold="react", sandbox=backend, store=bench_store,
                           rng_seed=i,
                           max_turns=turns)

    try:
        t0, c0, s0 = time.perf_counter(), time.process_time(), server.cpu_s() if server else 0.0
        with ThreadPoolExecutor(max_workers=EPISODES) as pool:
            trajectories = list(pool.map(one, range(EPISODES)))
        wall = time.perf_counter() - t0
        cpu = time.process_time() - c0 + (server.cpu_s() - s0 if server else 0.0)
    finally:
        policy.sampler.close()
        for b in backends.values():
            b.close()
    tokens = [t.token_ids for tr in trajectories for t in tr.turns if t.role == "assistant"]
    generated = sum(len(t) for t in tokens)
    return {"wall_s": wall, "tokens": generated, "tokens_per_s": generated / wall,
            "episodes_per_min": EPISODES / wall * 60, "cpu_ms_per_token": cpu / generated * 1000,
            "mean_batch": policy.sampler.stats.mean_batch,
            "sampling_s": policy.sampler.stats.busy_s, "sandbox_s": sum(t.sandbox_s for t in trajectories),
            "prefilled": policy.sampler.stats.prefill_tokens, "_tokens": tokens, "_params": params}


def _grpo_step(bench_store, envs: list, model_path: Path, max_batch: int, prefix: int, turns: int,
               new_tokens: int, server: BenchServer | None = None) -> dict[str, Any]:
    cfg = GRPOConfig(model=str(model_path), env_ids=[e.id for e in envs], steps=1, envs_per_step=len(envs),
                     group_size=EPISODES // len(envs), max_turns=turns, max_new_tokens=new_tokens,
                     rollout_workers=EPISODES, sampler_batch=max_batch, sampler_prefix_cache=prefix, lora_r=LORA_R,
                     equal_group="downweight", sampler="vllm" if server else "hf",
                     sampler_url=server.url if server else None,
                     curriculum=False, device="cpu", name=f"bench-sampler-{'vllm' if server else max_batch}")
    trainer = GRPOTrainer(bench_store, cfg)
    trainer.setup()
    try:
        c0, s0 = time.process_time(), server.cpu_s() if server else 0.0
        m = trainer.step(1)
        cpu = time.process_time() - c0 + (server.cpu_s() - s0 if server else 0.0)
    finally:
        trainer.close()
    return {"wall_s": m["step_s"], "tokens": int(m["sampler_tokens"]),
            "tokens_per_s": m["sampler_tokens"] / m["rollout_s"], "episodes_per_min": EPISODES / m["step_s"] * 60,
            "cpu_ms_per_token": cpu / m["sampler_tokens"] * 1000,
            "mean_batch": m["sampler_mean_batch"], "sampling_s": m["sampler_busy_s"],
            "sandbox_s": m["sandbox_wait_share"] * m["rollout_s"] * EPISODES, "update_s": m["update_s"],
            "prefilled": int(m["sampler_prefill_tokens"])}


def _median(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The run with the median wall time (its own figures, so each row stays one real run)."""
    return sorted(runs, key=lambda r: r["wall_s"])[len(runs) // 2]


def _hf_episodes(bench_store, envs: list, model_path: Path, max_batch: int, prefix: int, turns: int,
                 new_tokens: int) -> dict[str, Any]:
    policy = HFPolicy(str(model_path), device="cpu", max_new_tokens=new_tokens, max_batch=max_batch, wait_ms=5,
                      prefix_cache_tokens=prefix)
    return _episodes(bench_store, envs, policy, turns)


def _measure(bench_store, envs: list, model_path: Path, tmp: Path, server: BenchServer | None, turns: int,
             new_tokens: int, rounds: int) -> tuple[dict[str, list[dict[str, Any]]], dict[str, dict[str, Any]]]:
    """Every mode's episode runs (rounds interleaved) and its GRPO step."""
    labels = [m[0] for m in MODES] + ([VLLM] if server else [])
    runs: dict[str, list[dict[str, Any]]] = {label: [] for label in labels}
    for r in range(rounds):
        for mode, batch, prefix in MODES:
            runs[mode].append(_hf_episodes(bench_store, envs, model_path, batch, prefix, turns, new_tokens))
        if server is not None:
            policy = _vllm_policy(model_path, server, tmp / f"adapters-{r}", new_tokens)
            runs[VLLM].append(_episodes(bench_store, envs, policy, turns, server))
    steps = {mode: _grpo_step(bench_store, envs, model_path, batch, prefix, turns, new_tokens)
             for mode, batch, prefix in MODES}
    if server is not None:
        steps[VLLM] = _grpo_step(bench_store, envs, model_path, EPISODES, PREFIX, turns, new_tokens, server)
    return runs, steps


def run(store: Store, quick: bool = False, **_: Any) -> BenchResult:
    turns, new_tokens, rounds = (2, 32, 1) if quick else (4, 96, 3)
    rows: list[dict[str, Any]] = []
    server, why, rss = None, None, None
    with torch_threads(TORCH_THREADS), tempfile.TemporaryDirectory(prefix="sandmle-bench-sampler-") as tmp:
        bench_store = Store(Path(tmp) / "bench.db")
        try:
            envs = synthesized_envs(bench_store, 2)
            model_path = build_tiny_model(Path(tmp) / "tiny", corpus=default_corpus())
            server, why = (None, QUICK_NO_VLLM) if quick else start(model_path, log_path(store, "sampler"),
                                                                    lora_rank=LORA_R)
            try:
                runs, steps = _measure(bench_store, envs, model_path, Path(tmp), server, turns, new_tokens, rounds)
            except SamplerError as exc:
                raise server.explain(exc) if server is not None else exc from None
            rss = server.rss_mb() if server is not None else None
        finally:
            if server is not None:
                server.stop()
            bench_store.close()
    hf_tokens = {repr(r.pop("_tokens")) for m, _, _ in MODES for r in runs[m]}
    for r in runs.get(VLLM, []):
        r.pop("_tokens")
    params = [r.pop("_params") for rs in runs.values() for r in rs][0]
    measured = {mode: _median(rs) for mode, rs in runs.items()}
    rows += [{"what": f"{EPISODES} react episodes", "sampler": mode, **measured[mode]} for mode in measured]
    rows += [{"what": "GRPO step", "sampler": mode, **m} for mode, m in steps.items()]
    keys = ["what", "sampler", "wall_s", "tokens", "tokens_per_s", "episodes_per_min", "cpu_ms_per_token",
            "mean_batch", "prefilled", "sampling_s", "sandbox_s", "update_s"]
    rows = [{k: r.get(k) for k in keys} for r in rows]
    summary = _summary(measured, steps, server, why, rss, len(hf_tokens) == 1)
    summary.update({"model_parameters": params, "episodes": EPISODES, "turns": turns, "max_new_tokens": new_tokens,
                    "rounds": rounds, "torch_threads": TORCH_THREADS})
    return BenchResult("sampler", rows, summary, notes=[
        f"tiny random-init Qwen3 ({params / 1e6:.1f}M parameters) on CPU; {EPISODES} episodes at once, "
        f"{turns} turns of up to {new_tokens} tokens; the same per-request seeds in every mode; torch on "
        f"{TORCH_THREADS} thread; episode rows: the median of {rounds} interleaved rounds",
        "ratios and speedups against 'before' (one at a time, re-encoding every turn: the old hf policy); "
        "'batching alone' compares with one at a time plus the prefix cache",
        "prefilled = prompt tokens run through the model; sampling_s = the sampler's busy time; sandbox_s = episode "
        "time waiting on the sandbox, summed over episodes (they overlap); update_s = the GRPO optimizer step",
        (f"vllm rows: a real vLLM server ({server.version or 'version unknown'}, built for CPU, float32) in its own "
         f"process group, started once ({server.startup_s:.0f} s, not in the rows); cpu_ms_per_token includes its "
         "CPU time; it reserves one core for its API server and runs the model on the other; its tokens differ "
         "from the hf samplers' (its own random numbers), so episode lengths differ too"
         if server is not None else f"no vllm rows: {why}"),
        "no GPU was lent to this work: the 0.6B-parameter GPU line of the issue could not be measured",
    ])


def _summary(measured: dict[str, dict[str, Any]], steps: dict[str, dict[str, Any]], server: BenchServer | None,
             why: str | None, rss: float | None, same: bool) -> dict[str, Any]:
    before, serial, batched = (m[0] for m in MODES)
    ratio = measured[batched]["tokens_per_s"] / measured[before]["tokens_per_s"]
    speedup = steps[before]["wall_s"] / steps[batched]["wall_s"]
    summary: dict[str, Any] = {
        "tokens_per_s_ratio": ratio, "target_tokens_per_s_ratio": TARGET_TOKENS_RATIO,
        "tokens_met": ratio >= TARGET_TOKENS_RATIO, "grpo_step_speedup": speedup,
        "target_grpo_step_speedup": TARGET_STEP_SPEEDUP, "grpo_step_met": speedup >= TARGET_STEP_SPEEDUP,
        "tokens_per_s_ratio_batching_alone": measured[batched]["tokens_per_s"] / measured[serial]["tokens_per_s"],
        "grpo_step_speedup_batching_alone": steps[serial]["wall_s"] / steps[batched]["wall_s"],
        "cpu_per_token_ratio": measured[before]["cpu_ms_per_token"] / measured[batched]["cpu_ms_per_token"],
        "same_tokens_hf_samplers": same}
    if server is None:
        summary["vllm"] = f"not measured: {why}"
        return summary
    summary.update({
        "vllm_vs_batched_tokens_per_s": measured[VLLM]["tokens_per_s"] / measured[batched]["tokens_per_s"],
        "vllm_vs_batched_cpu_per_token": measured[VLLM]["cpu_ms_per_token"] / measured[batched]["cpu_ms_per_token"],
        "vllm_vs_batched_grpo_step": steps[batched]["wall_s"] / steps[VLLM]["wall_s"],
        "vllm_version": server.version, "vllm_startup_s": round(server.startup_s, 1),
        "vllm_rss_mb": round(rss or 0.0)})
    return summary
